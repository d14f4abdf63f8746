"""The lease file: what the daemon writes is what every supervisor reads, and anything else
found there is no deadline at all."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronduit.executor import LEASE_GRACE, lease_deadline, lease_margin
from cronduit.executor.lease import (
    MAX_LEASE_MARGIN,
    Deadline,
    boot_id,
    lease_clock,
    parse_lease,
    read_lease,
    term_before,
    write_lease,
)
from cronduit.paths import StatePaths


def test_a_written_lease_reads_back_on_the_boot_clock(tmp_path: Path) -> None:
    """Twenty seconds of monotonic time from now are twenty seconds of boot time from now,
    the SIGTERM a grace before the kill."""
    path = StatePaths(tmp_path).lease
    write_lease(path, time.monotonic() + 20)
    deadline = read_lease(str(path))
    assert deadline is not None
    assert abs(deadline.kill_at - (lease_clock() + 20)) < 0.5
    assert LEASE_GRACE == pytest.approx(deadline.kill_at - deadline.term_at)


def test_a_short_lease_gets_a_quarter_of_what_is_left_as_grace(tmp_path: Path) -> None:
    path = tmp_path / "lease"
    write_lease(path, time.monotonic() + 2)
    deadline = read_lease(str(path))
    assert deadline is not None
    assert 0.5 == pytest.approx(deadline.kill_at - deadline.term_at, abs=0.01)
    assert [path] == list(tmp_path.iterdir())  # no temporary file left beside it


def test_writing_again_replaces_the_deadline_and_none_removes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "lease"
    write_lease(path, time.monotonic() + 10)
    write_lease(path, time.monotonic() + 100)
    deadline = read_lease(str(path))
    assert deadline is not None
    assert deadline.kill_at > lease_clock() + 50
    write_lease(path, None)
    write_lease(path, None)  # no file: nothing to remove, no error
    assert (False, None) == (path.exists(), read_lease(str(path)))


def test_a_lease_is_written_into_a_state_folder_not_made_yet(tmp_path: Path) -> None:
    path = StatePaths(tmp_path / "state").lease
    write_lease(path, time.monotonic() + 10)
    assert read_lease(str(path)) is not None


def test_a_lease_that_ran_out_already_is_killed_at_once_without_a_grace(tmp_path: Path) -> None:
    path = tmp_path / "lease"
    write_lease(path, time.monotonic() - 1)
    deadline = read_lease(str(path))
    assert deadline is not None
    assert deadline.term_at == deadline.kill_at < lease_clock()


@pytest.mark.parametrize("raw", [
    b"",
    b"\n",
    b"\x00\xff\xfe garbage\n",
    b"12.5 13.5\n",  # no boot id
    b"BOOT 13.5 12.5\n",  # the SIGTERM after the SIGKILL
    b"BOOT nan 12.5\n",
    b"BOOT 12.5 inf\n",
    b"BOOT 12.5 13.5",  # cut short: no newline
    b"BOOT 12.5 13.5 14.5\n",
    b"BOOT twelve 13.5\n",
    b"another-boot 12.5 13.5\n",
])
def test_anything_but_the_one_line_of_this_boot_is_no_deadline(raw: bytes) -> None:
    assert parse_lease(raw.replace(b"BOOT", boot_id().encode())) is None


def test_the_line_of_this_boot_is_its_deadline() -> None:
    assert Deadline(12.5, 13.5) == parse_lease(f"{boot_id()} 12.5 13.5\n".encode())


def test_what_is_not_a_readable_regular_file_is_no_deadline_and_never_blocks(
    tmp_path: Path,
) -> None:
    """A missing file, a folder, a FIFO nobody writes to (an open of one for reading would
    wait for a writer for ever): all read as no deadline, at once."""
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    assert [None, None, None] == [read_lease(str(tmp_path / name))
                                  for name in ("missing", "folder", "fifo")]


def test_the_margin_is_a_sixth_of_the_lease_up_to_five_seconds() -> None:
    assert [0.5, 5.0, 5.0] == [lease_margin(3), lease_margin(30), lease_margin(600)]
    assert 125.0 == lease_deadline(100.0, 30.0)


@given(lease=st.floats(min_value=1, max_value=3600), sent_at=st.floats(0, 1e7))
def test_the_jobs_are_gone_before_the_lease_expires_and_after_the_next_renewal(
    lease: float, sent_at: float,
) -> None:
    """Written just after the renewal sent at ``sent_at`` (the database's expiry is later
    than ``sent_at + lease``): the kill comes a margin before the expiry, and the SIGTERM
    comes after the next renewal is due (a third of the lease on) with a quarter of the
    lease to spare for it."""
    until = lease_deadline(sent_at, lease)
    term = until - term_before(until - sent_at)
    assert until <= sent_at + lease - min(lease / 6, MAX_LEASE_MARGIN)
    assert term - sent_at >= lease / 3 + lease / 4
