"""Slots near the ends of the calendar (years 1 and 9999): an answer, never an overflow.

``datetime`` stops at 0001-01-01 and 9999-12-31; a zone's wall clock lies up to a day on
either side of UTC, and a schedule looks at the day before and after the one it reads. So
schedules walk wall-clock days from 1 February of year 1 to 30 November of year 9999:
asked before that span they answer from its start, asked after it they have no slot.
"""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta

import pytest

from cronduit import Cron
from cronduit.core.timespec import cron_schedule, format_utc

FIRST = datetime(1, 1, 1, tzinfo=UTC)
LAST = datetime(9999, 12, 31, 23, 59, tzinfo=UTC)
ZONES = ("UTC", "America/New_York", "Pacific/Kiritimati", "Etc/GMT+12", "Europe/London")


def local_day(cron: Cron, instant: datetime) -> date:
    return instant.astimezone(cron.plan.zone).date()


@pytest.mark.parametrize("zone", ZONES)
def test_the_first_slot_after_the_calendars_start_is_on_1_february_of_year_1(zone: str) -> None:
    """From the very first instant, a daily job's slots start on the span's first day."""
    cron = Cron("0 12 * * *", zone)
    first, second = itertools.islice(cron.after(FIRST), 2)
    assert (date(1, 2, 1), timedelta(days=1)) == (local_day(cron, first), second - first)


@pytest.mark.parametrize("zone", ZONES)
def test_after_the_span_there_is_no_slot_and_no_overflow(zone: str) -> None:
    """Past November 9999 nothing is due, however the zone's clock reads."""
    cron = Cron("0 0 * * *", zone)
    assert [None, None, None] == [
        next(cron.after(LAST), None),
        next(cron.after(datetime(9999, 12, 29, tzinfo=UTC)), None),
        cron_schedule("0 0 * * *", zone).next_after(LAST),
    ]


@pytest.mark.parametrize("zone", ZONES)
def test_before_walks_down_to_the_spans_start_and_no_further(zone: str) -> None:
    """The slots before the last instant end on 1 November 9999; before the span there
    are none."""
    cron = Cron("0 0 1 * *", zone)
    earliest = list(cron.before(datetime(1, 4, 1, tzinfo=UTC)))[-1]
    assert [date(9999, 11, 1), None, date(1, 2, 1)] == [
        local_day(cron, next(cron.before(LAST))),
        next(cron.before(datetime(1, 1, 20, tzinfo=UTC)), None),
        local_day(cron, earliest),
    ]


def test_the_next_slot_from_the_first_days_of_the_calendar_takes_the_general_walk() -> None:
    """An instant on 2 January of year 1 reads as 1 January on Havana's clock (LMT, -5:29):
    the fast path's day before would leave the calendar (found by fuzzing)."""
    schedule = cron_schedule("25 15 1 1 */1", "America/Havana")
    start = datetime(1, 1, 2, 4, 8, tzinfo=UTC)
    assert next(schedule.slots_after(start)) == schedule.next_after(start)


def test_an_instant_of_the_first_years_prints_with_four_digits() -> None:
    """ISO 8601 writes year 1 as 0001; strftime's %Y does not pad it."""
    assert "0001-02-01T12:00:00Z" == format_utc(datetime(1, 2, 1, 12, tzinfo=UTC))
