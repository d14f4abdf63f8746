"""Workspaces against a local bare repository as the remote: shared checkouts fast-forwarded
only when no other run holds them, fresh worktrees removed after success, kept after failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cronduit.core.config.model import Workspace
from cronduit.executor import workspace
from cronduit.executor.procfs import identity
from tests.helpers.git import Remote


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path)


def spec(remote: Remote, mode: str = "shared") -> Workspace:
    return Workspace.model_validate({"git": str(remote.bare), "mode": mode})


def hold_by_this_process(root: Path, run_id: str) -> None:
    me = identity(os.getpid())
    assert me is not None
    workspace.record_hold(root, run_id, os.getpid(), me.start_time)


def test_a_free_shared_checkout_is_cloned_then_fast_forwarded(tmp_path: Path,
                                                              remote: Remote) -> None:
    state = tmp_path / "state"
    first = workspace.prepare(spec(remote), state, "build", "r1", tmp_path)
    assert (first.path / "first.txt").exists()
    workspace.release(first.root, "r1", first.mode, succeeded=True)
    head = remote.commit("second.txt")
    again = workspace.prepare(spec(remote), state, "build", "r2", tmp_path)
    assert f"main checkout at origin/main {head}" == again.note
    assert (again.path / "second.txt").exists()


def test_a_held_checkout_is_left_alone_and_the_run_is_told_how_far_behind(
        tmp_path: Path, remote: Remote) -> None:
    state = tmp_path / "state"
    holding = workspace.prepare(spec(remote), state, "build", "r1", tmp_path)
    hold_by_this_process(holding.root, "r1")  # r1's process is alive: it holds the checkout
    remote.commit("second.txt")
    remote.commit("third.txt")
    waiting = workspace.prepare(spec(remote), state, "build", "r2", tmp_path)
    assert ("main checkout, 2 commits behind origin/main: 1 other run using the checkout"
            == waiting.note)
    assert not (waiting.path / "second.txt").exists()  # nothing moved under r1
    workspace.release(holding.root, "r1", holding.mode, succeeded=True)
    workspace.release(waiting.root, "r2", waiting.mode, succeeded=True)
    free = workspace.prepare(spec(remote), state, "build", "r3", tmp_path)
    assert (free.path / "third.txt").exists()


def test_holds_of_dead_processes_and_old_pending_holds_do_not_count(
        tmp_path: Path, remote: Remote) -> None:
    state = tmp_path / "state"
    first = workspace.prepare(spec(remote), state, "build", "r1", tmp_path)
    holds = first.root / "holds"
    (holds / "r1").write_text("999999 12345\n")  # no such process
    (holds / "r0").write_text("pending 1000\n")  # made long ago, never launched
    remote.commit("second.txt")
    fresh = workspace.prepare(spec(remote), state, "build", "r2", tmp_path)
    assert fresh.note.startswith("main checkout at origin/main")
    assert sorted(p.name for p in holds.iterdir()) == ["r2"]


def test_a_fresh_worktree_is_removed_after_success_and_kept_after_failure(
        tmp_path: Path, remote: Remote) -> None:
    state = tmp_path / "state"
    head = remote.commit("second.txt")
    ok = workspace.prepare(spec(remote, "fresh"), state, "build", "r1", tmp_path)
    assert f"fresh worktree at origin/main {head}" == ok.note
    assert (ok.path / "second.txt").exists()
    workspace.release(ok.root, "r1", ok.mode, succeeded=True)
    assert not ok.path.exists()
    failed = workspace.prepare(spec(remote, "fresh"), state, "build", "r2", tmp_path)
    workspace.release(failed.root, "r2", failed.mode, succeeded=False, now=1000.0)
    assert failed.path.exists()
    assert [] == workspace.clean_expired(failed.root, 3600, now=1000.0 + 3599)
    assert [failed.path] == workspace.clean_expired(failed.root, 3600, now=1000.0 + 3600)
    assert not failed.path.exists()


def test_an_unreachable_remote_fails_naming_the_step_not_the_url(tmp_path: Path) -> None:
    secret_url = "https://user:tok3n@git.invalid/repo.git"
    broken = Workspace.model_validate({"git": secret_url, "mode": "fresh"})
    with pytest.raises(workspace.WorkspaceError) as raised:
        workspace.prepare(broken, tmp_path / "state", "build", "r1", tmp_path)
    assert "job build: workspace: git clone failed" in str(raised.value)
    assert "tok3n" not in str(raised.value)


def test_the_existing_clone_is_where_a_commit_can_be_looked_up(tmp_path: Path,
                                                              remote: Remote) -> None:
    """What the GitHub edge asks git about: none before a run made one, then the shared
    checkout, or the clone fresh worktrees come from."""
    state = tmp_path / "state"
    assert workspace.existing_clone(spec(remote), state, tmp_path) is None
    shared = workspace.prepare(spec(remote), state, "build", "r1", tmp_path)
    assert shared.path == workspace.existing_clone(spec(remote), state, tmp_path)
    other = tmp_path / "other-state"
    workspace.prepare(spec(remote, "fresh"), other, "build", "r2", tmp_path)
    assert shared.root.name.startswith("remote-")  # named for people, keyed by the source
    assert workspace.repository_root(other, str(remote.bare)) / "repo" == (
        workspace.existing_clone(spec(remote, "fresh"), other, tmp_path))
