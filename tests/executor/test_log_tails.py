"""The tail of a run's log as the store keeps it: its last bytes as a reader shows them,
through the cuts of its cap, with its size and what was cut."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from cronduit.core.log_tails import TAIL_BYTES, LogTail
from cronduit.executor.logcap import COLLAPSE, PUNCH, cut, open_capped
from cronduit.executor.logs import read_tail
from cronduit.executor.runner import ProcessRunner
from cronduit.paths import StatePaths
from tests.helpers.logs import read_log

CAP = 1 << 20
MARKER = re.compile(rb"\n\[cronduit: ([0-9]+) bytes cut here; max_log 1MiB\]\n")


def numbered(first: int, last: int) -> bytes:
    """Ten bytes a line, each line its own: where a byte came from shows."""
    return b"".join(b"%09d\n" % n for n in range(first, last + 1))


def cut_log(path: Path, written: bytes, way: str) -> None:
    """``written`` appended as a job appends, then cut under :data:`CAP` one way only, as the
    supervisor does when the job ends."""
    job = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    capped = open_capped(job, CAP)
    assert capped is not None
    capped.ways[:] = [way]
    try:
        os.write(job, written)
        cut(capped, final=True)
    finally:
        capped.close()


def test_a_log_past_the_tail_keeps_its_last_mebibyte_and_its_size(tmp_path: Path) -> None:
    """Uncut (no cap given), three MiB and more: the last MiB, and the log's whole size."""
    path = tmp_path / "log"
    written = numbered(1, 320_000)
    path.write_bytes(written)
    assert LogTail(written[-TAIL_BYTES:], len(written)) == read_tail(path, None)


def test_a_log_within_the_tail_is_kept_whole(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"short\n")
    assert LogTail(b"short\n", 6) == read_tail(path, CAP)


def test_a_run_without_a_log_has_no_tail(tmp_path: Path) -> None:
    assert read_tail(tmp_path / "log", CAP) is None


@pytest.mark.parametrize("way", [COLLAPSE, PUNCH])
def test_a_cut_log_is_kept_as_a_reader_shows_it_with_the_count_of_its_cut(
        tmp_path: Path, way: str) -> None:
    """Cut under a 1 MiB cap: the log as read (head, marker, tail; a punched hole left out)
    fits in the tail, so it is all kept, with the count of what was cut: the two add up to
    what the job wrote."""
    path = tmp_path / "log"
    written = numbered(1, 300_000)
    cut_log(path, written, way)
    shown = read_log(path)
    [count] = [int(found) for found in MARKER.findall(shown)]
    tail = read_tail(path, CAP)
    assert tail is not None
    assert (shown, len(shown), count, len(written)) == (
        tail.data, tail.size, tail.cut, tail.size + tail.cut)


@pytest.mark.parametrize("way", [COLLAPSE, PUNCH])
def test_a_shorter_tail_of_a_cut_log_reaches_back_across_the_cut(
        tmp_path: Path, way: str) -> None:
    """Less tail than the cut log's tail part: the bytes before the cut (the marker and the
    head's end) are taken, never the hole."""
    path = tmp_path / "log"
    cut_log(path, numbered(1, 300_000), way)
    shown = read_log(path)
    limit = len(shown) - 1000
    tail = read_tail(path, CAP, limit)
    assert tail is not None
    assert (shown[-limit:], len(shown)) == (tail.data, tail.size)


def test_the_runner_reads_a_runs_tail_and_gives_none_for_a_log_it_cannot_read(
        tmp_path: Path) -> None:
    """The runner's answer for a run's log; a log it cannot read (here a folder where the
    file should be) is no tail, never an error that would lose the attempt's end."""
    paths = StatePaths(tmp_path / "state")
    runner = ProcessRunner(paths, tmp_path / "cronduit.yaml", dict, lambda: None)
    paths.log("r1").parent.mkdir(parents=True)
    paths.log("r1").write_bytes(b"done\n")
    paths.log("r2").mkdir(parents=True)
    assert (LogTail(b"done\n", 5), None, None) == (
        runner.log_tail("r1"), runner.log_tail("r2"), runner.log_tail("r3"))
