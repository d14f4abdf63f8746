"""Run folders: a pruned run's folder is emptied and reused, never anything a process holds."""

from __future__ import annotations

import fcntl
import os
from dataclasses import replace
from pathlib import Path

import pytest

from cronduit.executor import launch, run_folders
from cronduit.executor.run_folders import RunFolders
from cronduit.paths import StatePaths
from tests.helpers.processes import eventually, finish, group_killed_afterwards, spec_for


def filled(folders: RunFolders, root: Path, run_id: str) -> Path:
    """A run folder as a finished run leaves it: every kind of file, with content."""
    folder = folders.make(run_id)
    (folder / "log").write_text("the old run's output\n")
    (folder / "trigger.json").write_text('{"secret-ish": "payload"}')
    (folder / "attempt-1").write_text("123\n0\n")
    (folder / "attempt-2").write_text("124\n75\n")
    (folder / "attempt-2.retry_after").write_text("30\n")
    (folder / "workspace").write_text("a note\n")
    (folder / "output" / "report.csv").write_text("a,b\n")
    (folder / "output" / "nested").mkdir()
    (folder / "output" / "nested" / "deep.txt").write_text("x")
    return folder


def contents(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): "" if p.is_dir() else p.read_text()
            for p in sorted(folder.rglob("*"))}


EMPTY = {"attempt-1": "", "log": "", "output": "", "trigger.json": ""}


def test_a_first_run_gets_a_new_folder_with_its_output_folder(tmp_path: Path) -> None:
    folder = RunFolders(StatePaths(tmp_path)).make("r1")
    assert (tmp_path / "runs" / "r1", {"output": ""}) == (folder, contents(folder))


def test_a_retired_folder_is_emptied_and_becomes_the_next_runs_folder(tmp_path: Path) -> None:
    """Same inodes, nothing of the old run left: not its output, trigger, log or attempts."""
    folders = RunFolders(StatePaths(tmp_path))
    old = filled(folders, tmp_path, "r1")
    inode = old.stat().st_ino
    folders.retire("r1")
    new = folders.make("r2")
    assert (False, inode, EMPTY) == (old.exists(), new.stat().st_ino, contents(new))


def test_spares_outlive_the_daemon(tmp_path: Path) -> None:
    """A restarted daemon reuses what the last one emptied."""
    filled(RunFolders(StatePaths(tmp_path)), tmp_path, "r1")
    RunFolders(StatePaths(tmp_path)).retire("r1")
    new = RunFolders(StatePaths(tmp_path)).make("r2")
    assert (EMPTY, []) == (contents(new), os.listdir(tmp_path / "spare"))


def test_a_folder_whose_attempt_file_is_locked_is_deleted_not_reused(tmp_path: Path) -> None:
    """A process still holds the attempt's lock: nothing of that folder is handed on."""
    folders = RunFolders(StatePaths(tmp_path))
    folder = filled(folders, tmp_path, "r1")
    fd = os.open(folder / "attempt-1", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        folders.retire("r1")
    finally:
        os.close(fd)
    new = folders.make("r2")
    assert (False, {"output": ""}) == (folder.exists(), contents(new))


def test_a_log_nobody_holds_any_more_is_reused(tmp_path: Path) -> None:
    """Once the job and everything it started are gone, the log is emptied and handed on."""
    folders = RunFolders(StatePaths(tmp_path))
    folders.make("r1")
    finish(launch(spec_for(tmp_path, shell="echo done")))
    inode = (tmp_path / "runs" / "r1" / "log").stat().st_ino
    folders.retire("r1")
    new = folders.make("r2")
    assert (inode, b"") == ((new / "log").stat().st_ino, (new / "log").read_bytes())


def test_a_run_folder_that_already_holds_files_is_kept(tmp_path: Path) -> None:
    """Making a folder that exists (a relaunch after a restart) keeps what is in it."""
    folders = RunFolders(StatePaths(tmp_path))
    filled(folders, tmp_path, "r1")
    folders.retire("r1")
    existing = tmp_path / "runs" / "r2"
    (existing / "output").mkdir(parents=True)
    (existing / "log").write_text("kept\n")
    folders.make("r2")
    assert ({"log": "kept\n", "output": ""}, 1) == (contents(existing),
                                                   len(os.listdir(tmp_path / "spare")))


def test_spares_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond MAX_SPARES a pruned folder is deleted outright."""
    monkeypatch.setattr(run_folders, "MAX_SPARES", 1)
    folders = RunFolders(StatePaths(tmp_path))
    for run_id in ("r1", "r2"):
        filled(folders, tmp_path, run_id)
    folders.retire("r1")
    folders.retire("r2")
    assert (1, []) == (len(os.listdir(tmp_path / "spare")), os.listdir(tmp_path / "runs"))


def test_retiring_a_missing_folder_does_nothing(tmp_path: Path) -> None:
    folders = RunFolders(StatePaths(tmp_path))
    folders.retire("gone")
    assert not (tmp_path / "spare").exists() or os.listdir(tmp_path / "spare") == []


def test_a_background_writer_never_reaches_the_next_runs_log(tmp_path: Path) -> None:
    """End to end with a real leftover: it writes after the prune, into its own old log."""
    folders = RunFolders(StatePaths(tmp_path))
    inode = folders.make("r1").stat().st_ino
    attempt = launch(spec_for(tmp_path, shell="(sleep 0.5; echo late) & echo started"))
    with group_killed_afterwards(attempt.pid):
        finish(attempt)
        folders.retire("r1")
        new = folders.make("r2")
        assert (inode, False) == (new.stat().st_ino, (new / "log").exists())
        second = spec_for(tmp_path, shell="echo second run")
        finish(launch(replace(second, run_id="r2", attempt_file=new / "attempt-1",
                              log_path=new / "log")))
        assert eventually(lambda: not _group_members(attempt.pid), 5)
    assert b"second run\n" == (new / "log").read_bytes()


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_bytes()
            except OSError:
                continue
            fields = stat[stat.rindex(b")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                members.append(int(entry.name))
    return members
