"""A run's log under its cap: cut in place while the job writes, its head, marker and tail
intact, by the supervisor even with the daemon gone; and read back cleanly."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cronduit.core.logcap import head_end, marker
from cronduit.executor import Attempt, Exited, launch
from cronduit.executor.adopt import record_complete
from cronduit.executor.files import read_record
from cronduit.executor.logcap import COLLAPSE, PUNCH, TRUNCATE, CappedLog, cut, open_capped
from cronduit.executor.logs import LogReader
from tests.helpers.logs import follow_log, read_log
from tests.helpers.processes import alive, eventually, finish, group_killed_afterwards, spec_for

CAP = 1 << 20
MARKER = re.compile(rb"\n\[cronduit: ([0-9]+) bytes cut here; max_log 1MiB\]\n")


def numbered(first: int, last: int) -> bytes:
    """What ``seq -f %09.0f first last`` prints: ten bytes a line, each line its own."""
    return b"".join(b"%09d\n" % n for n in range(first, last + 1))


def seq(first: int, last: int) -> str:
    return f"seq -f %09.0f {first} {last}"


def block_of(path: Path) -> int:
    return os.stat(path).st_blksize or 4096


def assert_head_marker_tail(log: bytes, written: bytes, cap: int, block: int) -> None:
    """``log`` is ``written`` cut under ``cap``: its head up to the marker, the marker with
    the true count, then the newest bytes, nothing else (no NUL byte, one marker)."""
    [count] = [int(found) for found in MARKER.findall(log)]
    mark = marker(count, cap)
    head, _, tail = log.partition(mark)
    head_size = head_end(cap, block)
    assert (written[:head_size - len(mark)], len(written), True, 0) == (
        head, head_size + count + len(tail), written.endswith(tail), log.count(0))


def stored(path: Path) -> int:
    """The bytes of disk the file takes: a punched hole takes none."""
    return os.stat(path).st_blocks * 512


# -- the supervisor cuts the log while the job writes -------------------------------------


def test_a_job_writing_far_past_the_cap_leaves_its_head_the_marker_and_its_tail(
    tmp_path: Path,
) -> None:
    """Thirty times the cap written: the log left fits in the cap, with the first bytes,
    a marker counting exactly the bytes cut, and the last bytes."""
    spec = spec_for(tmp_path, shell=f"echo FIRST; {seq(1, 3_000_000)}; echo LAST", max_log=CAP)
    assert Exited(0) == finish(launch(spec))
    log = read_log(spec.log_path)
    assert (True, True) == (len(log) <= CAP, stored(spec.log_path) <= CAP)
    assert_head_marker_tail(log, b"FIRST\n" + numbered(1, 3_000_000) + b"LAST\n", CAP,
                            block_of(spec.log_path))


def test_a_log_within_its_cap_is_left_as_written(tmp_path: Path) -> None:
    """Below the cap nothing is cut and no marker is written."""
    spec = spec_for(tmp_path, shell=seq(1, 50_000), max_log=CAP)
    finish(launch(spec))
    assert numbered(1, 50_000) == read_log(spec.log_path)


def test_the_attempts_of_one_run_share_one_cap_and_one_marker(tmp_path: Path) -> None:
    """The retry appends to the cut log: the head is still the first attempt's, the count
    grows, the tail is the last attempt's."""
    first = spec_for(tmp_path, shell=f"echo ONE; {seq(1, 400_000)}", max_log=CAP)
    finish(launch(first))
    second = spec_for(tmp_path, shell=f"{seq(400_001, 800_000)}; echo TWO", attempt=2,
                      max_log=CAP)
    finish(launch(second))
    assert_head_marker_tail(read_log(second.log_path),
                            b"ONE\n" + numbered(1, 800_000) + b"TWO\n", CAP,
                            block_of(second.log_path))


_DAEMON_THEN_KILLED = """
import os, signal, sys
from pathlib import Path
from cronduit.executor import launch
from tests.helpers.processes import spec_for
folder = Path(sys.argv[1])
attempt = launch(spec_for(folder, shell=sys.argv[2], max_log=int(sys.argv[3])))
print(attempt.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_with_the_daemon_killed_the_supervisor_keeps_the_log_under_its_cap(
    tmp_path: Path,
) -> None:
    """The daemon is SIGKILLed before its job writes a byte: the supervisor still cuts the
    log while the job runs (it waits, alive, with the log back within the cap), and once
    more when it ends, before it records the exit status."""
    wrote, go = tmp_path / "wrote", tmp_path / "go"
    shell = (f"echo FIRST; {seq(1, 3_000_000)}; touch {wrote}; "
             f"while [ ! -e {go} ]; do sleep 0.01; done; echo LAST")
    with (tmp_path / "daemon.err").open("wb") as errors:  # not a pipe: the supervisor keeps it
        daemon = subprocess.run([sys.executable, "-c", _DAEMON_THEN_KILLED, str(tmp_path),
                                 shell, str(CAP)], check=False, stdout=subprocess.PIPE,
                                stderr=errors, text=True, timeout=30,
                                cwd=Path(__file__).parents[2])
    assert -signal.SIGKILL == daemon.returncode
    pid = int(daemon.stdout)
    spec = spec_for(tmp_path, shell=shell)
    with group_killed_afterwards(pid):
        assert eventually(wrote.exists, 30)
        assert eventually(lambda: len(read_log(spec.log_path)) <= CAP, 10)
        assert alive(pid)  # cut while the job runs, not only once it has ended
        go.touch()
        assert eventually(lambda: record_complete(spec.attempt_file), 10)
    assert 0 == read_record(spec.attempt_file).status
    assert_head_marker_tail(read_log(spec.log_path),
                            b"FIRST\n" + numbered(1, 3_000_000) + b"LAST\n", CAP,
                            block_of(spec.log_path))


# -- each way of cutting, on a file of our own --------------------------------------------


@contextmanager
def capped_log(path: Path, way: str) -> Iterator[tuple[int, CappedLog]]:
    """A log opened as the job's is (append mode), under the cap, cut only ``way``."""
    job = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    capped = open_capped(job, CAP)
    assert capped is not None
    capped.ways[:] = [way]
    try:
        yield job, capped
    finally:
        capped.close()


@pytest.mark.parametrize("way", [COLLAPSE, PUNCH, TRUNCATE])
def test_each_way_of_cutting_frees_the_space_and_reads_back_as_head_marker_tail(
    tmp_path: Path, way: str,
) -> None:
    """Collapsed, punched (a hole, which readers skip) or truncated: what is read is the
    head, the marker, the tail (none left by a truncation), and what is stored fits."""
    path = tmp_path / "log"
    written = numbered(1, 400_000)
    with capped_log(path, way) as (job, capped):
        os.write(job, written)
        cut(capped, final=True)
    assert stored(path) <= CAP
    log = read_log(path)
    if way == TRUNCATE:
        head = head_end(CAP, block_of(path))
        assert written[:head - len(marker(len(written) - head, CAP))] + marker(
            len(written) - head, CAP) == log
    else:
        assert_head_marker_tail(log, written, CAP, block_of(path))


@pytest.mark.parametrize("way", [COLLAPSE, PUNCH])
def test_later_cuts_add_to_the_one_marker(tmp_path: Path, way: str) -> None:
    """Cut, written on, cut again: one marker, whose count covers both cuts."""
    path = tmp_path / "log"
    with capped_log(path, way) as (job, capped):
        os.write(job, numbered(1, 300_000))
        cut(capped, final=False)
        os.write(job, numbered(300_001, 600_000))
        cut(capped, final=True)
    assert_head_marker_tail(read_log(path), numbered(1, 600_000), CAP, block_of(path))


def test_the_job_appends_after_the_cut_tail(tmp_path: Path) -> None:
    """Its descriptor is in append mode: what it writes after a cut lands at the new end,
    leaving neither a hole nor a gap."""
    path = tmp_path / "log"
    with capped_log(path, COLLAPSE) as (job, capped):
        os.write(job, numbered(1, 300_000))
        cut(capped, final=False)
        os.write(job, b"after the cut\n")
    log = read_log(path)
    assert (b"after the cut\n", True, os.stat(path).st_size) == (
        log[-14:], log[-24:-14] == b"%09d\n" % 300_000, len(log))


# -- reading a log through its cuts -------------------------------------------------------


def test_a_reader_from_the_start_shows_the_marker_once(tmp_path: Path) -> None:
    """Reading a cut log from its first byte gives the file's own head, marker and tail."""
    path = tmp_path / "log"
    with capped_log(path, PUNCH) as (job, capped):
        os.write(job, numbered(1, 300_000))
        cut(capped, final=True)
        reader = LogReader(os.open(path, os.O_RDONLY), CAP)
        shown = b"".join(reader.chunks())
    assert_head_marker_tail(shown, numbered(1, 300_000), CAP, block_of(path))


@pytest.mark.parametrize("way", [COLLAPSE, PUNCH])
def test_a_follower_is_told_how_many_of_the_bytes_it_had_not_shown_were_cut(
    tmp_path: Path, way: str,
) -> None:
    """A follower in the tail when the cut came goes on after it, a marker of its own
    counting just the bytes it missed."""
    path = tmp_path / "log"
    written = numbered(1, 300_000)
    with capped_log(path, way) as (job, capped):
        os.write(job, written[:900_000])
        reader = LogReader(os.open(path, os.O_RDONLY), CAP)
        shown = b"".join(reader.chunks())
        os.write(job, written[900_000:])
        cut(capped, final=True)
        shown += b"".join(reader.chunks())
    [count] = [int(found) for found in MARKER.findall(read_log(path))]
    resumed = head_end(CAP, block_of(path)) + count
    assert written[:900_000] + marker(resumed - 900_000, CAP) + written[resumed:] == shown


def test_a_follower_past_the_cut_sees_no_break(tmp_path: Path) -> None:
    """Bytes it had shown already were cut: it goes on with the next ones, no marker."""
    path = tmp_path / "log"
    with capped_log(path, COLLAPSE) as (job, capped):
        os.write(job, numbered(1, 300_000))
        reader = LogReader(os.open(path, os.O_RDONLY), CAP)
        b"".join(reader.chunks())
        cut(capped, final=True)
        os.write(job, numbered(300_001, 300_100))
        assert numbered(300_001, 300_100) == b"".join(reader.chunks())


def test_a_follower_whose_head_bytes_the_marker_covered_is_told_the_cut(
    tmp_path: Path,
) -> None:
    """It showed the head up to ten bytes short of its end; the marker later written over
    them is told in its place, once, counting those ten bytes with the cut."""
    path = tmp_path / "log"
    written = numbered(1, 300_000)
    with capped_log(path, COLLAPSE) as (job, capped):
        os.write(job, written)
        head = head_end(CAP, block_of(path))
        reader = LogReader(os.open(path, os.O_RDONLY), CAP, position=head - 10)
        cut(capped, final=True)
        shown = b"".join(reader.chunks())
    [count] = [int(found) for found in MARKER.findall(read_log(path))]
    assert marker(count + 10, CAP) + written[head + count:] == shown


def test_following_a_log_cut_as_it_is_written_shows_each_byte_where_it_belongs(
    tmp_path: Path,
) -> None:
    """Followed while the supervisor cuts it, every piece shown sits at its place in what
    the job wrote, each marker counting the bytes between."""
    spec = spec_for(tmp_path, argv=("seq", "-f", "%09.0f", "1", "3000000"), max_log=CAP)
    attempt = launch(spec)
    assert eventually(spec.log_path.exists)
    shown = asyncio.run(_follow(spec.log_path, attempt))
    written = numbered(1, 3_000_000)
    at, pieces = 0, MARKER.split(shown)
    assert written[:len(pieces[0])] == pieces[0]
    at = len(pieces[0])
    for count, piece in zip(pieces[1::2], pieces[2::2], strict=True):
        told = int(count)
        # The file's own marker stands over the head's last bytes; a follower's own
        # marker stands between the bytes it showed and the next.
        places = [at + told, at + len(marker(told, CAP)) + told]
        at = next(p for p in places if written[p:p + len(piece)] == piece) + len(piece)
    assert len(written) == at


async def _follow(log_path: Path, attempt: Attempt) -> bytes:
    return b"".join([chunk async for chunk in follow_log(log_path, attempt, poll_interval=0.01,
                                                         cap=CAP)])
