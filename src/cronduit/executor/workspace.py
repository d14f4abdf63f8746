"""Workspaces: the git checkout a run works in (SPEC §5 ``workspace``).

Under ``<state>/workspaces/<repo>-<hash>/``, one folder per repository (``git``), so every
job naming the same repository shares its main checkout:

    main/            the shared checkout (a clone of ``git``), for ``mode: shared``
    repo/            a clone the fresh worktrees are made from, for ``mode: fresh``
    runs/<run>/      a fresh worktree, detached at the remote head
    holds/<run>      a run using the shared checkout: its process identity once launched
    lock             taken for a moment while a run sets up (clone, fetch, fast-forward)

**shared**: the checkout is fast-forwarded to its upstream only when no other run holds it;
when another does, it is left alone (moving files under a running job is how jobs break), and
the run is told how far behind it is and why, in ``$CRONDUIT_WORKSPACE_NOTE`` and its record.
A hold is a file per run; it counts while its process is alive (pid and start time, as runs
are adopted), or for a minute after it was made if the process has not started yet, so a
daemon killed between setting up and launching leaves no hold that lasts.

**fresh**: a detached worktree at the remote head (``origin/HEAD``), removed after success and
kept ``retain_failed`` after a failure, then removed by :func:`clean_expired`.

git runs with a minimal environment (no daemon secrets) and a timeout; its errors name the
job and the step, never the remote URL (which may hold a credential).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cronduit.core.config.model import Workspace
from cronduit.executor.procfs import identity

GIT_TIMEOUT = 120.0
"""Seconds a clone or fetch may take before the run fails with the reason."""
PENDING_HOLD = 60.0
"""Seconds a hold counts before its run's process has started."""
RETAIN_MARK = ".cronduit-failed-at"
"""In a failed fresh worktree: when it failed (epoch seconds), for :func:`clean_expired`."""


class WorkspaceError(RuntimeError):
    """The workspace could not be made ready; the message says which step, never the URL."""


@dataclass(frozen=True)
class Prepared:
    """Where a run works, and what it is told about it."""

    root: Path
    """The repository's folder under the state directory (what :func:`release` needs)."""
    path: Path
    mode: Literal["shared", "fresh"]
    note: str
    """One line: ``main checkout at origin/main 1a2b3c4``, ``main checkout, 2 commits behind
    origin/main: another run is using the checkout``, ``fresh worktree at origin/main ...``."""


def repository_root(state: Path, source: str) -> Path:
    """The folder of one repository's checkouts: named for people, keyed by the source."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:10]
    name = re.sub(r"[^A-Za-z0-9_.-]", "", source.rstrip("/").rsplit("/", 1)[-1])
    return state / "workspaces" / f"{name.removesuffix('.git')[:40] or 'repo'}-{digest}"


def prepare(spec: Workspace, state: Path, job: str, run_id: str, source_dir: Path) -> Prepared:
    """Make the run's workspace ready. ``source_dir`` resolves a relative ``git`` path (the
    config file's folder). Raises :class:`WorkspaceError`."""
    source = _source(spec.git, source_dir)
    root = repository_root(state, source)
    (root / "holds").mkdir(parents=True, exist_ok=True)
    with _setup_lock(root):
        if spec.mode == "shared":
            return _shared(root, job, run_id, source)
        return _fresh(root, job, run_id, source)


def existing_clone(spec: Workspace, state: Path, source_dir: Path) -> Path | None:
    """A clone of the repository already on disk (the shared checkout, else the clone fresh
    worktrees are made from), where git can tell whether a commit is in a branch; None
    until a run has made one."""
    root = repository_root(state, _source(spec.git, source_dir))
    for clone in (root / "main", root / "repo"):
        if (clone / ".git").exists():
            return clone
    return None


def record_hold(root: Path, run_id: str, pid: int, start_time: int) -> None:
    """Mark the shared checkout held by the run's process (after it launched)."""
    hold = root / "holds" / run_id
    if hold.exists():
        hold.write_text(f"{pid} {start_time}\n")


def release(root: Path, run_id: str, prepared_mode: str, *, succeeded: bool,
            now: float | None = None) -> None:
    """The run ended: drop its hold; remove its fresh worktree after success, or mark it for
    :func:`clean_expired` after a failure."""
    (root / "holds" / run_id).unlink(missing_ok=True)
    if prepared_mode != "fresh":
        return
    tree = root / "runs" / run_id
    if not tree.exists():
        return
    if succeeded:
        with _setup_lock(root):
            _remove_worktree(root, tree)
    else:
        (tree / RETAIN_MARK).write_text(f"{now if now is not None else time.time():.0f}\n")


def clean_expired(root: Path, retain_failed: int, now: float | None = None) -> list[Path]:
    """Remove failed fresh worktrees kept longer than ``retain_failed`` seconds."""
    runs = root / "runs"
    if not runs.is_dir():
        return []
    moment = time.time() if now is None else now
    removed: list[Path] = []
    with _setup_lock(root):
        for tree in sorted(runs.iterdir()):
            mark = tree / RETAIN_MARK
            with contextlib.suppress(FileNotFoundError, ValueError):
                if moment - float(mark.read_text()) >= retain_failed:
                    _remove_worktree(root, tree)
                    removed.append(tree)
    return removed


# -- shared --------------------------------------------------------------------------------


def _shared(root: Path, job: str, run_id: str, source: str) -> Prepared:
    main = root / "main"
    if not (main / ".git").exists():
        _git(job, "clone", ["clone", "--quiet", source, str(main)], root)
    busy = _live_holds(root)
    (root / "holds" / run_id).write_text(f"pending {time.time():.0f}\n")
    fetched = _try_git(["fetch", "--quiet", "origin"], main)
    upstream = _upstream(main)
    if busy:
        behind = _count(main, f"HEAD..{upstream}") if upstream else 0
        why = f"{busy} other run{'s' if busy > 1 else ''} using the checkout"
        state = (f"{behind} commit{'s' if behind != 1 else ''} behind {_short(upstream)}"
                 if upstream else "not fast-forwarded")
        return Prepared(root, main, "shared", f"main checkout, {state}: {why}")
    if upstream is None:
        return Prepared(root, main, "shared", f"main checkout at {_head(main)} (no upstream "
                                        "branch to follow)")
    if not fetched:
        return Prepared(root, main, "shared", f"main checkout at {_head(main)}, not updated: "
                                        "fetching from the remote failed")
    merged = _try_git(["merge", "--ff-only", "--quiet", upstream], main)
    if not merged:
        behind = _count(main, f"HEAD..{upstream}")
        return Prepared(root, main, "shared", f"main checkout, {behind} commit"
                                        f"{'s' if behind != 1 else ''} behind "
                                        f"{_short(upstream)}: it cannot be fast-forwarded "
                                        "(local commits or changes)")
    return Prepared(root, main, "shared", f"main checkout at {_short(upstream)} {_head(main)}")


def _live_holds(root: Path) -> int:
    """Holds of runs still going (stale ones are removed on the way)."""
    live = 0
    for hold in (root / "holds").iterdir():
        try:
            words = hold.read_text().split()
        except FileNotFoundError:
            continue
        if _hold_is_live(words):
            live += 1
        else:
            hold.unlink(missing_ok=True)
    return live


def _hold_is_live(words: list[str]) -> bool:
    if len(words) != 2:
        return False
    if words[0] == "pending":
        try:
            return time.time() - float(words[1]) < PENDING_HOLD
        except ValueError:
            return False
    try:
        pid, start_time = int(words[0]), int(words[1])
    except ValueError:
        return False
    found = identity(pid)
    return found is not None and found.start_time == start_time


# -- fresh ---------------------------------------------------------------------------------


def _fresh(root: Path, job: str, run_id: str, source: str) -> Prepared:
    repo = root / "repo"
    if not (repo / ".git").exists():
        _git(job, "clone", ["clone", "--quiet", "--no-checkout", source, str(repo)], root)
    else:
        _git(job, "fetch", ["fetch", "--quiet", "--prune", "origin"], repo)
    head = _remote_head(job, repo)
    tree = root / "runs" / run_id
    tree.parent.mkdir(parents=True, exist_ok=True)
    if tree.exists():  # a retry works on in the run's own worktree
        (tree / RETAIN_MARK).unlink(missing_ok=True)
    else:
        _git(job, "worktree", ["worktree", "add", "--quiet", "--detach", str(tree), head],
             repo)
    return Prepared(root, tree, "fresh", f"fresh worktree at {_short(head)} {_head(tree)}")


def _remote_head(job: str, repo: Path) -> str:
    found = _try_output(["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"], repo)
    if found:
        return found.removeprefix("refs/remotes/")
    _try_git(["remote", "set-head", "origin", "--auto"], repo)
    found = _try_output(["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"], repo)
    if not found:
        raise WorkspaceError(f"job {job}: workspace: the remote names no default branch")
    return found.removeprefix("refs/remotes/")


def _remove_worktree(root: Path, tree: Path) -> None:
    repo = root / "repo"
    if not _try_git(["worktree", "remove", "--force", str(tree)], repo):
        shutil.rmtree(tree, ignore_errors=True)
        _try_git(["worktree", "prune"], repo)


# -- git -----------------------------------------------------------------------------------


def _source(git: str, source_dir: Path) -> str:
    if "://" in git or git.startswith("git@") or Path(git).is_absolute():
        return git
    return str((source_dir / git).resolve())


@contextlib.contextmanager
def _setup_lock(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _environment() -> dict[str, str]:
    # git gets PATH and HOME only: the daemon's environment may hold secrets.
    env = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=_environment(), capture_output=True,
                          text=True, timeout=GIT_TIMEOUT, check=False)


def _git(job: str, step: str, args: list[str], cwd: Path) -> str:
    try:
        done = _run(args, cwd)
    except FileNotFoundError:
        raise WorkspaceError(f"job {job}: workspace: git is not installed") from None
    except subprocess.TimeoutExpired:
        raise WorkspaceError(f"job {job}: workspace: git {step} took more than "
                             f"{GIT_TIMEOUT:g}s") from None
    if done.returncode != 0:
        raise WorkspaceError(f"job {job}: workspace: git {step} failed (exit "
                             f"{done.returncode})")
    return done.stdout.strip()


def _try_git(args: list[str], cwd: Path) -> bool:
    try:
        return _run(args, cwd).returncode == 0
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return False


def _try_output(args: list[str], cwd: Path) -> str | None:
    try:
        done = _run(args, cwd)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def _upstream(checkout: Path) -> str | None:
    return _try_output(["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}"],
                        checkout)


def _count(checkout: Path, revisions: str) -> int:
    found = _try_output(["rev-list", "--count", revisions], checkout)
    return int(found) if found and found.isdigit() else 0


def _head(checkout: Path) -> str:
    return _try_output(["rev-parse", "--short=7", "HEAD"], checkout) or "(no commit)"


def _short(ref: str | None) -> str:
    return ref or "(none)"
