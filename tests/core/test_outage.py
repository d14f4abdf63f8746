"""Outages of the state folder: one line as one begins, changes and ends; growing retries."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cronduit.core.outage import (
    ENGINE,
    FIRST_RETRY,
    LONGEST_RETRY,
    Outage,
    Step,
    failed,
    retry_in,
    succeeded,
    took,
)

FULL = "database or disk is full"


def test_the_first_failure_begins_an_outage_with_one_line() -> None:
    """The line names the reason and that runs going carry on."""
    step = failed(None, FULL, 10.0, ENGINE)
    assert Outage(FULL, 10.0) == step.outage
    assert ("state store unavailable: database or disk is full; runs going carry on, timers "
            "and new runs wait; retrying") == step.line


def test_failures_for_the_same_reason_log_nothing_more() -> None:
    """A disk full for an hour is one line, not one per retry."""
    outage = failed(None, FULL, 10.0, ENGINE).outage
    for at in (10.5, 11.0, 20.0):
        step = failed(outage, FULL, at, ENGINE)
        assert step.line is None
        outage = step.outage
    assert Outage(FULL, 10.0, failures=4) == outage


def test_a_new_reason_during_an_outage_is_one_line() -> None:
    """A full disk that turns read-only is a change worth a line; the outage goes on."""
    outage = Outage(FULL, 10.0, failures=3)
    step = failed(outage, "disk I/O error", 12.0, ENGINE)
    assert Outage("disk I/O error", 10.0, failures=4, seen=frozenset({FULL})) == step.outage
    assert "state store still unavailable, now: disk I/O error; retrying" == step.line


def test_reasons_taking_turns_log_each_once() -> None:
    """The store full, a run's folder full, the store again...: two lines, not one a turn."""
    outage: Outage | None = None
    lines: list[str] = []
    for n, reason in enumerate([FULL, "No space left on device"] * 5):
        step = failed(outage, reason, float(n), ENGINE)
        outage = step.outage
        lines += [step.line] if step.line else []
    assert 2 == len(lines)


def test_the_first_success_ends_the_outage_saying_how_long_it_lasted() -> None:
    """One line, with the length measured from the first failure."""
    assert Step(None, "state store available again after 2m5s; catching up") == succeeded(
        Outage(FULL, 10.0, failures=9), 135.0, ENGINE)


def test_a_success_outside_an_outage_logs_nothing() -> None:
    """The usual case, every tick."""
    assert Step(None, None) == succeeded(None, 5.0, ENGINE)


def test_retries_double_from_the_first_up_to_the_longest() -> None:
    """0.25 s, 0.5 s, 1 s, 2 s, 4 s, then every 5 s."""
    assert [0.25, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0] == [
        retry_in(Outage(FULL, 0.0, failures=n)) for n in range(1, 8)]


@given(st.integers(min_value=1, max_value=10**9))
def test_a_retry_always_waits_between_the_first_and_the_longest_delay(failures: int) -> None:
    """However long the outage, retries neither spin nor stop."""
    assert FIRST_RETRY <= retry_in(Outage(FULL, 0.0, failures=failures)) <= LONGEST_RETRY


def test_lengths_read_in_tenths_under_a_minute_and_whole_units_past_it() -> None:
    """Short outages are measured finely; long ones as the config writes durations."""
    assert ["0.0s", "0.3s", "59.9s", "1m", "1h1m1s"] == [
        took(s) for s in (-1.0, 0.3, 59.94, 60.4, 3661.0)]
