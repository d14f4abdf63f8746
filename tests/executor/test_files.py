"""The attempt file: how its lines, whole or cut short by a crash, read back."""

from __future__ import annotations

from pathlib import Path

import pytest

from cronduit.executor import Exited, NotStarted, Settled, Vanished
from cronduit.executor.files import Record, parse_record, retry_after_path, settled_state


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"", Record(started=False, pid=None, status=None)),
        (b"12", Record(started=True, pid=None, status=None)),
        (b"1234\n", Record(started=True, pid=1234, status=None)),
        (b"1234\n7", Record(started=True, pid=1234, status=None)),
        (b"1234\n7\n", Record(started=True, pid=1234, status=7)),
        (b"1234\n\n", Record(started=True, pid=1234, status=None)),
        (b"x\n0\n", Record(started=True, pid=None, status=0)),
    ],
)
def test_only_whole_lines_are_read(raw: bytes, expected: Record) -> None:
    """A line counts once its newline is written; any byte at all means the attempt started."""
    assert expected == parse_record(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"", NotStarted()),
        (b"12", Vanished(None)),
        (b"1234\n", Vanished(1234)),
        (b"1234\n13", Vanished(1234)),
        (b"1234\n13\n", Exited(13)),
    ],
)
def test_a_settled_attempt_reads_as_its_whole_lines_say(
    tmp_path: Path, raw: bytes, expected: Settled
) -> None:
    """Empty: never started; a pid: vanished; a status: exited (a torn status is no status)."""
    attempt_file = tmp_path / "attempt-1"
    attempt_file.write_bytes(raw)
    assert expected == settled_state(attempt_file)


def test_a_missing_attempt_file_has_not_started(tmp_path: Path) -> None:
    """No file: no launch ever got as far as creating it."""
    assert NotStarted() == settled_state(tmp_path / "attempt-1")


def test_the_retry_hint_lives_beside_the_attempt_file() -> None:
    """``attempt-2`` has its hint in ``attempt-2.retry_after``, in the run's folder."""
    assert Path("/runs/r1/attempt-2.retry_after") == retry_after_path(Path("/runs/r1/attempt-2"))
