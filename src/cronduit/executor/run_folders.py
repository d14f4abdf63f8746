"""Run folders: made at a run's first launch, emptied and kept for a later run when pruned.

Why reuse them rather than delete and create: a run's folder holds five inodes (the
folder, ``output/``, ``trigger.json``, ``attempt-1``, ``log``) that, with ``kept_runs``,
live only minutes at hundreds of runs a second. On ext4 without a journal, every inode
allocation skips one by one the inodes freed in the last minute or more, reading each one's
inode table block (``recently_deleted`` in the kernel); perf showed half of the daemon's
CPU there at 500 runs a second. A pruned folder renamed into place for the next run
allocates nothing, on any file system.

Only what no process of the old run can still hold is reused, emptied: the folder,
``output/``, the trigger file, the attempt file (once its lock proves the supervisor that
held it is done with it) and the log. The launcher takes a shared lock on the log it hands a run as
standard output and error, and every process that inherits them shares that lock, so a free
lock means no leftover background process of the old run can still write there; a log still
held is deleted instead, and the next run gets a new one.

A folder is renamed into ``<state>/spare/`` only once it is empty, so whatever is there
after a crash is fit for reuse; a prune cut short by a crash leaves a half-emptied folder of
a pruned run, as a half-done delete always did.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import uuid
from pathlib import Path

from cronduit.paths import StatePaths

MAX_SPARES = 1024
"""Emptied folders kept for reuse; beyond that a pruned folder is deleted."""

_REUSED = ("output", "trigger.json", "attempt-1", "log")
"""What a spare folder holds, all empty: the rest of a pruned run's folder is deleted."""


class RunFolders:
    """Makes and retires the run folders of one state directory; safe from any thread."""

    def __init__(self, paths: StatePaths) -> None:
        self._paths = paths
        self._spare = paths.root / "spare"
        self._lock = threading.Lock()
        self._spares: list[str] | None = None
        """Names in ``spare/``, read from disk on first use (a restart reuses them too)."""

    def make(self, run_id: str) -> Path:
        """The run's folder with its ``output/``, made from a spare when there is one."""
        folder = self._paths.run(run_id)
        spare = self._take()
        if spare is not None:
            try:
                # Replaces nothing but an empty folder; a folder with anything in it stays.
                os.rename(self._spare / spare, folder)
                return folder
            except OSError:
                self._give_back(spare)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "output").mkdir(exist_ok=True)
        return folder

    def retire(self, run_id: str) -> None:
        """Delete the run's files; keep the folder, emptied, for a later run when there is room."""
        folder = self._paths.run(run_id)
        try:
            reusable = self._room() and _empty_for_reuse(folder)
        except OSError:  # something in it would not go: delete what can be, as before
            reusable = False
        if reusable:
            name = uuid.uuid4().hex
            try:
                os.rename(folder, self._spare / name)
            except OSError:
                pass
            else:
                self._give_back(name)
                return
        shutil.rmtree(folder, ignore_errors=True)

    def _take(self) -> str | None:
        with self._lock:
            spares = self._listed()
            return spares.pop() if spares else None

    def _give_back(self, name: str) -> None:
        with self._lock:
            self._listed().append(name)

    def _room(self) -> bool:
        with self._lock:
            return len(self._listed()) < MAX_SPARES

    def _listed(self) -> list[str]:
        """The spare names, listing the folder once (the caller holds the lock)."""
        if self._spares is None:
            self._spare.mkdir(exist_ok=True)  # once, here, not at every retire
            self._spares = [entry.name for entry in os.scandir(self._spare)
                            if entry.is_dir(follow_symlinks=False)]
        return self._spares


def _empty_for_reuse(folder: Path) -> bool:
    """Empty ``folder`` down to the empty files a spare holds; False if it cannot be reused.

    Not reusable: a folder that is missing or not a plain folder, or whose attempt file is
    still locked (some process holds it; the folder is deleted as before).
    """
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return False
    names = {entry.name: entry for entry in entries}
    output = names.get("output")
    if output is None or not output.is_dir(follow_symlinks=False):
        return False
    if any(name in names and not names[name].is_file(follow_symlinks=False)
           for name in _REUSED[1:]):
        return False
    if not _emptied_under_lock(folder / "attempt-1"):
        return False
    if "log" in names and not _emptied_under_lock(folder / "log"):
        os.unlink(folder / "log")  # a leftover process still writes there: a new log, later
    for entry in [*(e for e in entries if e.name not in _REUSED), *os.scandir(output.path)]:
        _remove(entry)
    os.close(os.open(folder / "trigger.json",
                     os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
    return True


def _remove(entry: os.DirEntry[str]) -> None:
    if entry.is_dir(follow_symlinks=False):
        shutil.rmtree(entry.path)
    else:
        os.unlink(entry.path)


def _emptied_under_lock(path: Path) -> bool:
    """Truncate ``path`` under an exclusive lock (made empty if missing); False while held."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        os.ftruncate(fd, 0)
        return True
    finally:
        os.close(fd)
