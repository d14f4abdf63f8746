"""The clocks: a source clock follows its source through the monotonic clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cronduit.clock import SourceClock


def test_a_source_clock_reads_its_source_plus_the_monotonic_time_since() -> None:
    mono = [100.0]
    base = datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    reads = [base]

    def source() -> datetime:
        mono[0] += 0.002  # a 2 ms round trip
        return reads[-1]

    clock = SourceClock(source, lambda: mono[0])
    clock.sync()
    mono[0] += 10.0
    assert base + timedelta(seconds=10.001) == clock.now()
    reads.append(base + timedelta(minutes=5))  # the source moved on its own
    assert base + timedelta(seconds=10.001) == clock.now()  # not seen until a sync
    clock.sync()
    assert base + timedelta(minutes=5, seconds=0.001) == clock.now()


def test_a_failed_sync_keeps_the_last_reading() -> None:
    mono = [0.0]
    base = datetime(2026, 1, 1, tzinfo=UTC)
    answers: list[datetime | None] = [base, None]

    def source() -> datetime:
        answer = answers.pop(0)
        if answer is None:
            raise OSError("the database went away")
        return answer

    clock = SourceClock(source, lambda: mono[0])
    clock.sync()
    mono[0] = 3.0
    with pytest.raises(OSError, match="went away"):
        clock.sync()
    assert base + timedelta(seconds=3) == clock.now()


def test_a_sync_that_waited_long_for_its_answer_never_puts_the_clock_ahead() -> None:
    """The reading of a slow round trip (a connection waited for, after an outage) was taken
    near its end: counted from the midpoint, the clock would run ahead by half the wait and
    fire slots early. The sync reads again; two slow answers are counted from the end."""
    mono = [100.0]
    base = datetime(2026, 1, 1, tzinfo=UTC)
    waits = [4.0, 0.002, 4.0, 3.0]

    def source() -> datetime:
        mono[0] += waits.pop(0)  # the answer is read at the end of the wait
        return base + timedelta(seconds=mono[0] - 100.0)

    def truth() -> datetime:
        return base + timedelta(seconds=mono[0] - 100.0)

    clock = SourceClock(source, lambda: mono[0])
    clock.sync()  # slow, then fast
    assert abs(clock.now() - truth()) <= timedelta(milliseconds=1)
    clock.sync()  # slow twice
    assert clock.now() <= truth()


def test_a_refresh_reads_the_source_again_only_once_the_reading_is_a_second_old() -> None:
    mono = [0.0]
    reads: list[float] = []
    base = datetime(2026, 1, 1, tzinfo=UTC)

    def source() -> datetime:
        reads.append(mono[0])
        return base + timedelta(seconds=mono[0])

    clock = SourceClock(source, lambda: mono[0])
    clock.refresh()
    mono[0] = 0.5
    clock.refresh()  # a burst of turns: the reading is fresh enough
    mono[0] = 1.0
    clock.refresh()
    assert [0.0, 1.0] == reads
    assert base + timedelta(seconds=1) == clock.now()
