"""The attempt file: one file per attempt that makes its story readable after any crash.

    <run>/attempt-<n>               the record below, locked while it may still change
    <run>/attempt-<n>.retry_after   $CRONDUIT_RETRY_AFTER_FILE: the job's own hint, if any
    <run>/attempt-<n>.outputs       $CRONDUIT_OUTPUT_FILE: a step's outputs, if it wrote them
    <run>/attempt-<n>.log           a step attempt's own log (a durable run's attempts)

The launcher creates the attempt file empty (never truncating or replacing it), locks it
(``flock``) and hands the descriptor to the supervisor (:mod:`.supervisor`), which keeps it,
and so the lock, until the record is complete. Through that descriptor, opened in append
mode, the supervisor adds one line per fact:

    -           the attempt started (written before the job is started)
    <pid>       the job's pid, which is also its process group
    <status>    the job's exit status, written after it ends

Empty, the attempt never started; a pid and no status, it started (running while the lock
is held; once the lock is free, running unsupervised while that process lives, else
vanished); a status, it exited with it. One file, not a folder of them: every create costs
(0.45 ms on a slow disk), and at hundreds of runs a second the creates were most of a launch.

A line counts only once it is complete (ends in a newline): one cut short by a crash is as
good as unwritten. Any byte at all, though, means the attempt got as far as being started,
so it is never launched again.

This file, not the daemon's memory, is the record: a daemon that launched the attempt and
one that adopted it after a restart read the same answer from it. That holds across an
upgrade too: files an older cronduit's wrapper shell wrote (no ``-`` line, the wrapper's pid
first) and its older folders of files are still read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cronduit.executor.states import Exited, NotStarted, Settled, Vanished

RETRY_AFTER_SUFFIX = ".retry_after"
RETRY_AFTER_VARIABLE = "CRONDUIT_RETRY_AFTER_FILE"
OUTPUTS_SUFFIX = ".outputs"
STEP_LOG_SUFFIX = ".log"
STARTED = b"-"
"""The supervisor's first line: the attempt started, or is about to (see :mod:`.supervisor`)."""
MAX_RECORD_BYTES = 4096
"""Far more than the three short lines of a record; reading stops there."""


@dataclass(frozen=True)
class Record:
    """What an attempt file says."""

    started: bool
    """Whether anything was written: from the first byte on, never launch again."""
    pid: int | None
    """The job's pid (also its process group), once its line is complete."""
    status: int | None
    """The job's exit status, once its line is complete."""


def retry_after_path(attempt_file: Path) -> Path:
    """Where the attempt's job may write its retry hint: beside the attempt file."""
    return attempt_file.with_name(attempt_file.name + RETRY_AFTER_SUFFIX)


def outputs_path(attempt_file: Path) -> Path:
    """Where a step attempt writes its outputs (``$CRONDUIT_OUTPUT_FILE``): beside the
    attempt file, so a daemon adopting the attempt after a crash finds them too."""
    return attempt_file.with_name(attempt_file.name + OUTPUTS_SUFFIX)


def step_log_path(attempt_file: Path) -> Path:
    """A step attempt's own log, beside its attempt file."""
    return attempt_file.with_name(attempt_file.name + STEP_LOG_SUFFIX)


def parse_record(raw: bytes) -> Record:
    """Read a :class:`Record` from the bytes of an attempt file."""
    *complete, _cut_short = raw.split(b"\n")  # after the last newline: b"" or a torn line
    if complete and complete[0] == STARTED:  # the supervisor's mark, before the job's pid
        complete = complete[1:]
    numbers = [_number(line) for line in complete]
    return Record(
        started=bool(raw),
        pid=numbers[0] if numbers else None,
        status=numbers[1] if len(numbers) > 1 else None,
    )


def read_record(attempt_file: Path) -> Record:
    """The record in ``attempt_file``; a missing file says nothing, like an empty one.
    Read once per finished attempt, with :func:`read_prefix`'s plain ``os`` calls."""
    try:
        return parse_record(read_prefix(attempt_file, MAX_RECORD_BYTES))
    except FileNotFoundError:
        return parse_record(b"")
    except IsADirectoryError:
        return _folder_record(attempt_file)


def read_prefix(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of ``path`` (all of it if shorter); raises what ``open``
    and ``read`` raise. Plain ``os`` calls: an attempt's record, retry hint and outputs are
    read as it ends, between one step's end and the next step's start, and a file object's
    own system calls (``fstat``, ``ioctl``) and buffers cost as much as the read. Never
    blocking: a job may leave a FIFO where its file goes, and an open or read waiting on it
    would stop the daemon's loop (it reads as empty, or fails as unreadable)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        chunks, left = [], size
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def settled_state(attempt_file: Path) -> Settled:
    """How an attempt whose record is complete stands: exited, vanished, or never started."""
    record = read_record(attempt_file)
    if record.status is not None:
        return Exited(record.status)
    if not record.started:
        return NotStarted()
    return Vanished(record.pid)


def _folder_record(folder: Path) -> Record:
    """The record of an attempt an older cronduit launched, so an upgrade adopts its runs.

    Its folder holds ``lock`` (see :mod:`.adopt`) and a number each in ``started`` (the pid)
    and ``status``, read as that cronduit read them. A folder always counts as started: in
    the one case where it was not (a daemon killed between taking the lock and spawning),
    the attempt ends as vanished rather than launched where its file cannot be made. Its
    job's retry hint, in ``<folder>/retry_after``, is not read: it falls back to the job's
    own retry timing.
    """
    pid, status = (_folder_number(folder / name) for name in ("started", "status"))
    return Record(started=True, pid=pid, status=status)


def _folder_number(path: Path) -> int | None:
    try:
        return _number(path.read_bytes())
    except FileNotFoundError:
        return None


def _number(line: bytes) -> int | None:
    try:
        return int(line)
    except ValueError:
        return None
