"""Cron expressions in English, for ``cronduit cron explain`` and the dashboard.

A sentence has up to three parts, in this order: when in the day ("At 02:30", "Every 15
minutes, from 09:00 through 17:59"), which days ("Monday through Friday", "on day 1 of the
month"), which months ("in January and July"). A part whose field matches everything is left
out, so ``0 0 * * *`` is simply "At 00:00".

Fields are described from the parsed value sets, so ``7`` and ``sun``, ``0-59`` and ``*``
read the same. The text gives one hint: a minute, hour or day-of-month field written as a
single step (``*/15``, ``1-23/2``) is said as a step, because that is how its author thinks of
it; any other field is said as its values, with runs of three or more as ranges. The day
fields follow the classic rule the parser records in ``day_or``: both restricted means either
may match ("... or on Monday"); one starting with ``*`` but restricted (``*/2``) means both
must ("..., if it falls on Monday").
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

from cronduit.core.cron import CronExpression

__all__ = ["explain"]

# Spelled out rather than taken from ``calendar``, whose names follow the process locale.
_MONTHS: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WEEKDAYS: Final = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_ORDINAL_SUFFIXES: Final = {1: "st", 2: "nd", 3: "rd"}
_MAX_TIMES: Final = 12
"""Up to this many fixed times are listed one by one ("At 09:00, 13:00 and 18:00")."""

_Span = tuple[int, int]
"""Consecutive values, first and last; a single value when both are the same."""


@dataclass(frozen=True, slots=True)
class _Step:
    """A field written as one stepped item: ``first``, ``first + every``, ... up to ``last``."""

    first: int
    last: int
    every: int
    whole: bool
    """It starts at the field's lowest value and runs to its end, as ``*/n`` does."""


@dataclass(frozen=True, slots=True)
class _Field:
    """One field's values, with the step its text was written as, if any."""

    values: frozenset[int]
    low: int
    high: int
    step: _Step | None = None

    @property
    def every(self) -> bool:
        return len(self.values) == self.high - self.low + 1

    def spans(self) -> list[_Span]:
        return _spans(sorted(self.values), lambda value: value + 1)

    @property
    def only_values(self) -> bool:
        """Plain values: no step and no range of three or more."""
        return self.step is None and all(first == last for first, last in self.spans())


@functools.lru_cache(maxsize=1024)
def explain(text: str) -> str:
    """Say ``text`` in English; raises CronError for an invalid expression. Kept for the
    expressions said last: a listing of every job says each job's, and many share one."""
    expression = CronExpression.parse(text)
    minute_text, hour_text, day_text, _, _ = expression.fields
    minute = _field(expression.minutes, 0, 59, minute_text)
    hour = _field(expression.hours, 0, 23, hour_text)
    day = _field(expression.days, 1, 31, day_text)
    parts = [
        _time(minute, hour),
        _days(day, expression.weekdays, expression.day_or),
        _months(expression.months),
    ]
    return ", ".join(part for part in parts if part)


# -- fields ----------------------------------------------------------------------------------


def _field(values: frozenset[int], low: int, high: int, text: str) -> _Field:
    return _Field(values, low, high, _step(values, low, high, text))


def _step(values: frozenset[int], low: int, high: int, text: str) -> _Step | None:
    """The field as a step, when it was written as one stepped item that skips values.

    A step of 1 is a plain range, and a step that reaches one value is that value.
    """
    ordered = sorted(values)
    if "," in text or "/" not in text or len(ordered) < 2:
        return None
    first, last, every = ordered[0], ordered[-1], ordered[1] - ordered[0]
    if every == 1:
        return None
    return _Step(first, last, every, whole=first == low and last + every > high)


def _spans(ordered: Sequence[int], successor: Callable[[int], int]) -> list[_Span]:
    """Runs of consecutive values; a run of two is said as two values, not a range."""
    runs: list[list[int]] = []
    for value in ordered:
        if runs and successor(runs[-1][-1]) == value:
            runs[-1].append(value)
        else:
            runs.append([value])
    spans: list[_Span] = []
    for run in runs:
        if len(run) == 2:
            spans.extend(((run[0], run[0]), (run[1], run[1])))
        else:
            spans.append((run[0], run[-1]))
    return spans


def _say_spans(spans: Iterable[_Span], name: Callable[[int], str], word: str = "and") -> str:
    return _join([_say_span(span, name) for span in spans], word)


def _say_span(span: _Span, name: Callable[[int], str]) -> str:
    first, last = span
    return name(first) if first == last else f"{name(first)} through {name(last)}"


def _join(items: Sequence[str], word: str = "and") -> str:
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} {word} {items[-1]}"


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else _ORDINAL_SUFFIXES.get(number % 10, "th")
    return f"{number}{suffix}"


def _clock(hour: int, minute: int) -> str:
    return f"{hour:02d}:{minute:02d}"


# -- time of day -----------------------------------------------------------------------------


def _time(minute: _Field, hour: _Field) -> str:
    if (
        minute.only_values
        and hour.only_values
        and len(minute.values) * len(hour.values) <= _MAX_TIMES
    ):
        times = [_clock(h, m) for h in sorted(hour.values) for m in sorted(minute.values)]
        return f"At {_join(times)}"
    if len(hour.values) == 1:
        within = _within_one_hour(minute, min(hour.values))
        if within:
            return within
    phrase, at_minutes = _minutes(minute)
    return phrase + _hours(hour, at_minutes)


def _within_one_hour(minute: _Field, hour: int) -> str | None:
    """A job confined to one hour reads best as clock times: "from 09:00 through 09:45"."""
    if minute.every:
        return f"Every minute from {_clock(hour, 0)} through {_clock(hour, 59)}"
    if minute.step:
        step = minute.step
        return (
            f"Every {step.every} minutes from {_clock(hour, step.first)} "
            f"through {_clock(hour, step.last)}"
        )
    spans = minute.spans()
    if len(spans) == 1:
        first, last = spans[0]
        return f"Every minute from {_clock(hour, first)} through {_clock(hour, last)}"
    return None


def _minutes(minute: _Field) -> tuple[str, bool]:
    """The minute phrase, and whether it names minutes ("At minute ...") or a rhythm."""
    if minute.every:
        return "Every minute", False
    step = minute.step
    if step:
        if step.whole and 60 % step.every == 0:
            return f"Every {step.every} minutes", False
        return f"Every {step.every} minutes from minute {step.first} through {step.last}", False
    spans = minute.spans()
    if len(spans) == 1 and spans[0][0] != spans[0][1]:
        return f"Every minute from minute {spans[0][0]} through {spans[0][1]}", False
    return f"At minute {_say_spans(spans, str)}", True


def _hours(hour: _Field, at_minutes: bool) -> str:
    """The hours, phrased to follow the minute phrase."""
    if hour.every:
        return " of every hour" if at_minutes else ""
    step = hour.step
    if step:
        phrase = f" of every {_ordinal(step.every)} hour"
        if step.whole and 24 % step.every == 0:
            return phrase
        return f"{phrase} from {_clock(step.first, 0)} through {_clock(step.last, 59)}"
    spans = hour.spans()
    if at_minutes:
        # "At minute 0 past 09:00 and every hour from 12:00 through 14:00"
        return " past " + _join([_hours_past(first, last) for first, last in spans])
    # "Every 10 minutes, from 09:00 through 09:59 and from 17:00 through 17:59"
    return ", " + _join(
        [f"from {_clock(first, 0)} through {_clock(last, 59)}" for first, last in spans]
    )


def _hours_past(first: int, last: int) -> str:
    if first == last:
        return _clock(first, 0)
    return f"every hour from {_clock(first, 0)} through {_clock(last, 0)}"


# -- days and months -------------------------------------------------------------------------


def _days(day: _Field, weekdays: frozenset[int], day_or: bool) -> str | None:
    weekday_every = len(weekdays) == 7
    if day_or:
        # Either field may match, so one that matches every day makes every day match.
        if day.every or weekday_every:
            return None
        return f"{_month_days(day)} or on {_say_weekdays(weekdays)}"
    if weekday_every:
        return None if day.every else _month_days(day)
    if day.every:
        spans = _weekday_spans(weekdays)
        if len(spans) == 1 and spans[0][0] != spans[0][1]:
            return _say_weekdays(weekdays)  # "Monday through Friday" needs no "on"
        return f"on {_say_weekdays(weekdays)}"
    return f"{_month_days(day)}, if it falls on {_say_weekdays(weekdays, 'or')}"


def _month_days(day: _Field) -> str:
    step = day.step
    if step:
        return (
            f"on every {_ordinal(step.every)} day of the month "
            f"from day {step.first} through {step.last}"
        )
    return f"on day {_say_spans(day.spans(), str)} of the month"


def _weekday_spans(weekdays: frozenset[int]) -> list[_Span]:
    """Runs of weekdays in Sunday-first order, except that days forming one run through
    Saturday and Sunday read as that run ("Friday through Sunday", "Saturday and Sunday")."""
    ordered = sorted(weekdays)
    if {0, 6} <= weekdays and len(weekdays) < 7:
        start = min(set(range(7)) - weekdays) + 1
        rotated = [(start + offset) % 7 for offset in range(7)]
        cyclic = [weekday for weekday in rotated if weekday in weekdays]
        if all((a + 1) % 7 == b for a, b in pairwise(cyclic)):
            ordered = cyclic
    return _spans(ordered, lambda weekday: (weekday + 1) % 7)


def _say_weekdays(weekdays: frozenset[int], word: str = "and") -> str:
    return _say_spans(_weekday_spans(weekdays), _WEEKDAYS.__getitem__, word)


def _months(months: frozenset[int]) -> str | None:
    if len(months) == 12:
        return None
    spans = _spans(sorted(months), lambda month: month + 1)
    if len(spans) == 1 and spans[0][0] != spans[0][1]:
        return f"from {_month_name(spans[0][0])} through {_month_name(spans[0][1])}"
    return f"in {_say_spans(spans, _month_name)}"


def _month_name(month: int) -> str:
    return _MONTHS[month - 1]
