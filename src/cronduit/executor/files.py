"""The attempt directory: the files that make an attempt's story readable after any crash.

    lock          held (flock) by the wrapper for exactly as long as it lives
    started       the wrapper's pid, written before the job begins
    status        the job's exit status, written by the wrapper after the job ends
    retry_after   $CRONDUIT_RETRY_AFTER_FILE: the job's own hint for when to retry

These files, not the daemon's memory, are the record: a daemon that launched the attempt
and one that adopted it after a restart read the same answer from them.
"""

from __future__ import annotations

from pathlib import Path

from cronduit.executor.states import Exited, NotStarted, Settled, Vanished

LOCK = "lock"
STARTED = "started"
STATUS = "status"
RETRY_AFTER = "retry_after"
RETRY_AFTER_VARIABLE = "CRONDUIT_RETRY_AFTER_FILE"


def read_number(path: Path) -> int | None:
    """The integer the wrapper wrote to ``path``, or None if it is missing or cut short."""
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return int(text)
    except ValueError:  # empty: the wrapper died between creating the file and writing it
        return None


def settled_state(attempt_dir: Path) -> Settled:
    """How an attempt whose wrapper is gone stands: exited, vanished, or never started."""
    status = read_number(attempt_dir / STATUS)
    if status is not None:
        return Exited(status)
    if not (attempt_dir / STARTED).exists():
        return NotStarted()
    return Vanished(read_number(attempt_dir / STARTED))
