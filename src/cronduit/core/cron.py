"""Cron expressions: parsing, validation and evaluation in a time zone.

Semantics are classic (Vixie/Debian) cron: five fields (minute hour day-of-month month
day-of-week), ``*``, lists, ranges, ``a-b/n``, ``*/n``, month and weekday names, ``7`` for
Sunday, and the macros ``@hourly`` ... ``@yearly``. When both day fields are restricted a day
matches if either does; if either field starts with ``*`` both must match (the classic quirk,
so ``0 0 */2 * 1`` means odd days that are Mondays).

DST policy (Debian cron's, with per-job knobs, see :class:`DstPolicy`):

* A *fixed-time* job (neither the minute nor the hour field starts with ``*``) is read on the
  wall clock. A wall-clock time inside a spring-forward gap runs once, at the first instant
  after the gap, and several such times in one gap collapse into that one run
  (``gap=skip`` drops them instead). A wall-clock time that repeats in a fall-back hour runs
  at its first occurrence (``fold=twice`` runs both).
* A *wildcard* job (the minute or the hour field starts with ``*``) follows real time: it runs
  at every real instant whose wall-clock reading matches, so it ticks through both copies of
  a repeated hour and simply resumes after a gap. The knobs do not apply to it.

Under those two knobs a wall-clock time can be *removed*: a time in a gap under ``gap=skip``,
the second pass of a repeated time under ``fold=once``. The schedule yields no slot for it,
but says which times it removed between two instants (:meth:`DailyPlan.removed_between`), so
the slot ledger can record each as missed, with the rule that removed it.

Evaluation is written by hand rather than taken from a library because the DST rule is the
product's contract and the libraries disagree on it; this module owns and tests it. It is
pure: it never reads the clock, and instants go in and come out as aware UTC datetimes.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronduit.core.enums import DstFold, DstGap

__all__ = [
    "WILDCARD_IGNORES_DST",
    "Cron",
    "CronError",
    "CronExpression",
    "DailyPlan",
    "DstPolicy",
    "RemovedTime",
    "TzPrefixError",
    "ZoneError",
    "cron_plan",
    "dst_policy_ignored",
    "load_zone",
]

_FIELDS = ("minute", "hour", "day-of-month", "month", "day-of-week")
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
_DAYS_IN_MONTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_MIN_YEAR = 1
_MAX_YEAR = 9999
# Schedules walk wall-clock days from February of year 1 to November of year 9999: a month
# in from ``datetime``'s own ends, so that no day a walk looks at (the day before or after
# one, on any zone's clock) leaves its range. An instant outside is read at the nearest end.
_FIRST_DAY = date(1, 2, 1)
_LAST_DAY = date(9999, 11, 30)
_DAY = timedelta(days=1)
_WALK_FROM = (date(1, 1, 2).toordinal() - _EPOCH_ORDINAL) * 86_400
"""Epoch seconds: earlier instants are read as this one (its wall-clock date exists)."""
_WALK_UNTIL = (date(9999, 11, 29).toordinal() - _EPOCH_ORDINAL) * 86_400
"""Epoch seconds: no slot is after this instant (every zone's clock reads it in November)."""
_FIRST_SLOT_AFTER = (_FIRST_DAY.toordinal() - 1 - _EPOCH_ORDINAL) * 86_400
"""Epoch seconds: no slot is before this instant (wall-clock offsets are under a day)."""
_STANDING_RULES = (date(2100, 1, 1).toordinal() - _EPOCH_ORDINAL) * 86_400
"""Epoch seconds past the clock changes tzdata lists one by one: from here every zone keeps
its standing rule, which repeats as the calendar does, so a plan with no slot after this
instant never runs again."""
_NUMBER_DIGITS = 4
"""Significant digits of a field's number read at most: more is out of every field's range
(and past 4,300 of them Python refuses to read one)."""


class CronError(ValueError):
    """An expression cronduit refuses; the message names the field and the rule."""


class ZoneError(ValueError):
    """A time zone name that is not an IANA zone."""


class TzPrefixError(CronError):
    """An expression that starts with ``TZ=ZONE`` or ``CRON_TZ=ZONE``. cronduit reads the zone
    from a setting of its own; the message points at the job's ``time_zone`` unless the caller
    has another way to give it (``cron next --tz``) and says so with :meth:`pointing_at`."""

    def __init__(self, zone: str, setting: str = "set the job's time_zone") -> None:
        super().__init__(f"a TZ= prefix is not supported in the expression; {setting} instead")
        self.zone = zone
        """The zone the prefix named, so the caller can show how to give it its own way."""

    def pointing_at(self, setting: str) -> TzPrefixError:
        """The same refusal, saying ``setting`` (such as ``use --tz``) instead."""
        return TzPrefixError(self.zone, setting)


WILDCARD_IGNORES_DST = ("this cron expression's minute or hour field starts with *, so it "
                        "follows real time through DST changes")
"""Why a DST policy (``dst`` in the config, ``--dst-gap``/``--dst-fold``) has no effect on a
wildcard expression (see the module doc); each caller names its own setting before it."""


def dst_policy_ignored(expression: CronExpression) -> str | None:
    """Why a DST policy has no effect on ``expression``, or None when it applies (the
    expression is fixed-time, read on the wall clock)."""
    return WILDCARD_IGNORES_DST if expression.wildcard else None


@dataclass(frozen=True, slots=True)
class DstPolicy:
    """How a fixed-time job treats wall-clock times that DST skips or repeats."""

    gap: DstGap = DstGap.RUN
    fold: DstFold = DstFold.ONCE


@dataclass(frozen=True, slots=True, order=True)
class RemovedTime:
    """A wall-clock time of a fixed-time job's matching day that the DST rule removed."""

    instant: int
    """Epoch seconds where it belongs in time: the clock change, for a time inside a gap (it
    never existed); the second pass itself, for a repeated time."""
    tag: int
    """1, 2, ...: orders the day's removed times among themselves. Slots fall on whole
    seconds, so ``instant`` plus ``tag`` microseconds names a removed time without ever
    naming a slot (the ledger's key)."""
    day: date
    """The local date the time belongs to."""
    time_of_day: int
    """Seconds after the wall-clock midnight: the time the job names."""
    gap: bool
    """True: inside a spring-forward gap (``gap=skip``); False: a repeated pass
    (``fold=once``)."""


_RemovedYear = tuple[int, int, tuple[int, ...], tuple[RemovedTime, ...]]
_EARLIEST = datetime.min.replace(tzinfo=UTC)
_LATEST = datetime.max.replace(tzinfo=UTC)


@lru_cache(maxsize=4096)
def _transition_days(zone: ZoneInfo, year: int) -> tuple[int, ...]:
    """The ordinals of the days of ``year`` (and the day before it) on which the offset of
    the wall-clock midnight changes by the next midnight: the days the careful path takes.
    Shared by every plan in the zone; read once a year per zone."""
    first = date(year, 1, 1).toordinal() - 1
    last = date(year + 1, 1, 1).toordinal()
    offsets = [_seconds(zone.utcoffset(datetime.fromordinal(o))) for o in range(first, last + 1)]
    return tuple(first + i for i in range(last - first) if offsets[i] != offsets[i + 1])


@lru_cache(maxsize=512)
def load_zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``, or :class:`ZoneError` saying why not."""
    if not name or name != name.strip() or name.startswith(("/", ".")) or ".." in name:
        raise ZoneError(f"unknown time zone {name!r}: use an IANA name such as Europe/London")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ZoneError(
            f"unknown time zone {name!r}: use an IANA name such as Europe/London"
        ) from None


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _number(token: str, index: int) -> int:
    """One value of field ``index``: digits, or a month or weekday name."""
    upper = token.upper()
    if index == 3 and upper in _MONTH_NAMES:
        return _MONTH_NAMES.index(upper) + 1
    if index == 4 and upper in _DAY_NAMES:
        return _DAY_NAMES.index(upper)
    if not token.isdigit() or not token.isascii():
        raise CronError(f"{_FIELDS[index]} field: {_quoted(token)} is not a number")
    low, high = _BOUNDS[index]
    if len(token.lstrip("0")) > _NUMBER_DIGITS:
        raise CronError(f"{_FIELDS[index]} field: {_cut(token)} is outside {low}-{high}")
    value = int(token)
    if not low <= value <= high:
        raise CronError(f"{_FIELDS[index]} field: {value} is outside {low}-{high}")
    return value


def _cut(text: str, limit: int = 12) -> str:
    """``text`` for a message, cut after ``limit`` characters: a field may be any length."""
    return text if len(text) <= limit else f"{text[:limit]}..."


def _quoted(text: str, limit: int = 12) -> str:
    """``text`` quoted for a message (escaped: it may hold anything), cut likewise."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}..."


def _parse_item(item: str, index: int) -> set[int]:
    """One comma-separated item: ``*``, ``*/n``, ``a``, ``a-b`` or ``a-b/n``."""
    name = _FIELDS[index]
    low, high = _BOUNDS[index]
    base, slash, step_text = item.partition("/")
    step = 1
    if slash:
        if not step_text.isdigit() or not step_text.isascii():
            raise CronError(f"{name} field: step {_quoted(step_text)} in {_quoted(item, 24)} "
                            "is not a number")
        too_long = len(step_text.lstrip("0")) > _NUMBER_DIGITS
        step = high - low + 2 if too_long else int(step_text)
        if step == 0:
            raise CronError(f"{name} field: step 0 in {item!r} would never advance")
        if step > high - low + 1:
            raise CronError(
                f"{name} field: step {_cut(step_text)} in {_quoted(item, 24)} is larger "
                f"than the field's range {low}-{high}"
            )
    if base == "*":
        start, end = low, high
        if index == 4:
            end = 6  # "*" in day-of-week is Sunday..Saturday once, not with 7 again
    elif "-" in base:
        first, _, last = base.partition("-")
        start, end = _number(first, index), _number(last, index)
        if end < start:
            raise CronError(
                f"{name} field: range {base!r} runs backwards; write it low-high"
            )
    else:
        if slash:
            raise CronError(
                f"{name} field: {item!r} steps from a single value; write a range such as "
                f"{base}-{high}/{step}"
            )
        start = end = _number(base, index)
    return set(range(start, end + 1, step))


def _parse_field(text: str, index: int) -> frozenset[int]:
    name = _FIELDS[index]
    for mark, meaning in (("L", "L (last)"), ("W", "W (weekday)"), ("#", "# (nth weekday)")):
        if mark in text.upper() and not (mark in "LW" and _has_name(text, index)):
            raise CronError(f"{name} field: {meaning} is not supported")
    if "?" in text:
        raise CronError(f"{name} field: ? is not supported; use *")
    if text == "" or any(part == "" for part in text.split(",")):
        raise CronError(f"{name} field: empty list item in {text!r}")
    values: set[int] = set()
    for item in text.split(","):
        values |= _parse_item(item, index)
    if index == 4 and 7 in values:
        values.discard(7)
        values.add(0)
    return frozenset(values)


def _has_name(text: str, index: int) -> bool:
    """True when every letter in ``text`` belongs to a month or weekday name (``JUL``, ``WED``)."""
    names = _MONTH_NAMES if index == 3 else _DAY_NAMES if index == 4 else ()
    upper = text.upper()
    for token in upper.replace("-", ",").replace("/", ",").split(","):
        if any(c.isalpha() for c in token) and token not in names:
            return False
    return True


@dataclass(frozen=True, slots=True)
class CronExpression:
    """A parsed five-field expression; construct with :meth:`parse`."""

    text: str
    fields: tuple[str, str, str, str, str]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    """0 = Sunday ... 6 = Saturday; a 7 in the text is folded into 0."""
    day_or: bool
    """True when both day fields are restricted, so either may match."""
    wildcard: bool
    """True when the minute or hour field starts with ``*``: the job follows real time."""

    @staticmethod
    def parse(text: str) -> CronExpression:
        return _parse_expression(text)

    def day_matches(self, day: int, weekday: int) -> bool:
        """Whether day-of-month ``day`` falling on cron ``weekday`` (0 = Sunday) matches."""
        in_days = day in self.days
        in_weekdays = weekday in self.weekdays
        return (in_days or in_weekdays) if self.day_or else (in_days and in_weekdays)


@lru_cache(maxsize=65_536)
def _parse_expression(text: str) -> CronExpression:
    if not isinstance(text, str):
        raise CronError("a cron expression must be a string")
    stripped = text.strip()
    if stripped.upper().startswith(("TZ=", "CRON_TZ=")):
        raise TzPrefixError(stripped.split(None, 1)[0].partition("=")[2])
    if stripped.startswith("@"):
        macro = stripped.lower()
        if macro == "@reboot":
            raise CronError("@reboot is not supported: cronduit schedules by time, not by boot")
        if macro not in _MACROS:
            raise CronError(
                f"unknown macro {stripped!r}; use one of {', '.join(sorted(_MACROS))}"
            )
        stripped = _MACROS[macro]
    parts = stripped.split()
    if len(parts) == 6:
        raise CronError(
            "six fields given: a seconds field is not supported; use five fields "
            "(minute hour day-of-month month day-of-week)"
        )
    if len(parts) != 5:
        raise CronError(
            f"expected five fields (minute hour day-of-month month day-of-week), "
            f"got {len(parts)}"
        )
    values = [_parse_field(part, index) for index, part in enumerate(parts)]
    dom_star = parts[2].startswith("*")
    dow_star = parts[4].startswith("*")
    expression = CronExpression(
        text=text,
        fields=(parts[0], parts[1], parts[2], parts[3], parts[4]),
        minutes=values[0],
        hours=values[1],
        days=values[2],
        months=values[3],
        weekdays=values[4],
        day_or=not (dom_star or dow_star),
        wildcard=parts[0].startswith("*") or parts[1].startswith("*"),
    )
    if not _can_ever_match(expression):
        raise CronError(f"{text.strip()!r} can never match a real date")
    return expression


def _can_ever_match(expression: CronExpression) -> bool:
    """Every month shape (length, first weekday) occurs in the Gregorian calendar, so a
    month with no matching day in any shape never matches."""
    for month in expression.months:
        lengths = (28, 29) if month == 2 else (_DAYS_IN_MONTH[month],)
        for length in lengths:
            for first in range(7):
                if _matching_days(expression, length, first):
                    return True
    return False


def _matching_days(expression: CronExpression, length: int, first: int) -> tuple[int, ...]:
    return tuple(
        day
        for day in range(1, length + 1)
        if expression.day_matches(day, (first + day - 1) % 7)
    )


class DailyPlan:
    """The slots of a calendar schedule: on the days that match, at fixed times of day.

    Both cron expressions and ``at`` lists are plans: a cron expression is its matching days
    times its hours times its minutes; an ``at`` list is every day times its times. The plan
    works in integer epoch seconds, which keeps the hot loop to additions on days when the
    zone's offset does not change; only days with a transition take the careful path.
    """

    __slots__ = (
        "_clear",
        "_day_cache",
        "_day_filter",
        "_fixed_offset",
        "_months",
        "_removed_year",
        "_times",
        "_transition_cache",
        "dst",
        "removes",
        "wildcard",
        "zone",
    )

    def __init__(
        self,
        zone: ZoneInfo,
        times_of_day: tuple[int, ...],
        months: frozenset[int],
        day_filter: CronExpression | None,
        wildcard: bool,
        dst: DstPolicy,
    ) -> None:
        self.zone = zone
        self._times = tuple(sorted(set(times_of_day)))
        self._months = tuple(sorted(months))
        self._day_filter = day_filter
        self.wildcard = wildcard
        self.dst = dst
        self._day_cache: dict[tuple[int, int], tuple[int, ...]] = {}
        self._transition_cache: dict[int, list[int]] = {}
        self._fixed_offset = _fixed_offset(zone)
        self.removes = (not wildcard and self._fixed_offset is None
                        and (dst.gap is DstGap.SKIP or dst.fold is DstFold.ONCE))
        """Whether the DST rule can remove a time of this plan (see :meth:`removed_between`)."""
        self._clear: tuple[datetime, datetime] = (_LATEST, _EARLIEST)
        """A span of aware instants known to hold no removed time (:meth:`removed_from`)."""
        self._removed_year: _RemovedYear = (0, 0, (), ())
        """The removed times of the last year asked about: its first and past-the-end epoch
        seconds, their instants, and the times. Firings ask about one year for months on end."""

    # -- days -------------------------------------------------------------------------------

    def _days_of(self, year: int, month: int) -> tuple[int, ...]:
        first_ordinal = date(year, month, 1).toordinal()
        length = 29 if month == 2 and _is_leap(year) else _DAYS_IN_MONTH[month]
        key = (length, first_ordinal % 7)
        days = self._day_cache.get(key)
        if days is None:
            if self._day_filter is None:
                days = tuple(range(1, length + 1))
            else:
                days = _matching_days(self._day_filter, length, first_ordinal % 7)
            self._day_cache[key] = days
        return days

    def _wall_offset(self, ordinal: int) -> int:
        """UTC offset, in seconds, of the wall-clock midnight starting day ``ordinal``."""
        fixed = self._fixed_offset
        if fixed is not None:
            return fixed
        offset = self.zone.utcoffset(datetime.fromordinal(ordinal))
        assert offset is not None
        return offset.days * 86_400 + offset.seconds

    def _day_base(self, ordinal: int) -> int | None:
        """Epoch second of day ``ordinal``'s wall-clock midnight when the zone's offset holds all
        day, so its slots are that plus each time of day; None on a day with a transition."""
        start_offset = self._wall_offset(ordinal)
        if start_offset != self._wall_offset(ordinal + 1):
            return None
        return (ordinal - _EPOCH_ORDINAL) * 86_400 - start_offset

    def _day_slots(self, ordinal: int) -> list[int]:
        """The instants (epoch seconds, ascending) of the slots of day ``ordinal``."""
        base = self._day_base(ordinal)
        if base is None:
            return self._transition_day_slots(ordinal, (ordinal - _EPOCH_ORDINAL) * 86_400)
        return [base + t for t in self._times]

    def _transition_day_slots(self, ordinal: int, local_midnight: int) -> list[int]:
        """The careful path, for a day on which the zone's offset changes.

        Such days are rare (two a year in most zones) and dear to compute, so they are kept.
        """
        cached = self._transition_cache.get(ordinal)
        if cached is None:
            cached = self._resolve_transition_day(ordinal, local_midnight)
            if len(self._transition_cache) >= 256:
                self._transition_cache.clear()
            self._transition_cache[ordinal] = cached
        return cached

    def _resolve_transition_day(self, ordinal: int, local_midnight: int) -> list[int]:
        zone = self.zone
        day = datetime.fromordinal(ordinal)
        instants: set[int] = set()
        for t in self._times:
            wall = day + timedelta(seconds=t)
            before = _seconds(zone.utcoffset(wall))
            after = _seconds(zone.utcoffset(wall.replace(fold=1)))
            wall_seconds = local_midnight + t
            if before == after:
                instants.add(wall_seconds - before)
            elif before > after:  # repeated (fall-back) wall time: first, maybe second
                instants.add(wall_seconds - before)
                if self.wildcard or self.dst.fold is DstFold.TWICE:
                    instants.add(wall_seconds - after)
            elif not self.wildcard and self.dst.gap is DstGap.RUN:
                instants.add(self._gap_end(wall_seconds - after, wall_seconds - before))
        return sorted(instants)

    def _gap_end(self, low: int, high: int) -> int:
        """The transition instant in ``(low, high]``: the first instant after the gap."""
        zone = self.zone
        offset_low = _seconds(datetime.fromtimestamp(low, zone).utcoffset())
        while high - low > 1:
            middle = (low + high) // 2
            if _seconds(datetime.fromtimestamp(middle, zone).utcoffset()) == offset_low:
                low = middle
            else:
                high = middle
        return high

    # -- times the DST rule removed ------------------------------------------------------

    def removed_between(self, low: int, high: int) -> list[RemovedTime]:
        """The removed times whose :attr:`RemovedTime.instant` is at or after ``low`` and before
        ``high`` (epoch seconds), in order. The removed times of the last year asked about are
        kept, so most answers are a bisection. (The calendar's first and last years, where no
        zone's rules were ever written, are taken to remove nothing.)"""
        if not self.removes or high <= low:
            return []
        start, end, instants, found = self._removed_year
        if not start <= low or not high <= end:
            first_year = datetime.fromtimestamp(low, UTC).year
            last_year = datetime.fromtimestamp(high - 1, UTC).year
            if first_year < _MIN_YEAR + 2 or last_year > _MAX_YEAR - 2:
                return []  # the neighbouring years read below would leave the calendar
            instants, found = (), ()
            for year in range(first_year, last_year + 1):
                self._removed_year = kept = self._removed_of_year(year)
                instants += kept[2]
                found += kept[3]
        first = bisect.bisect_left(instants, low)
        if first == len(instants) or instants[first] >= high:
            return []
        return list(found[first:bisect.bisect_left(instants, high, first)])

    def removed_from(self, low: datetime, high: datetime) -> list[RemovedTime]:
        """:meth:`removed_between` for aware instants (a slot and the one after it).

        The usual answer, none, comes from two comparisons: the span from the last ``low``
        asked to the next removed time is kept, and firings move forward through it.
        """
        clear_from, clear_until = self._clear
        if clear_from <= low and high <= clear_until:
            return []
        whole, _ = _epoch_seconds(low)
        found = self.removed_between(whole, _epoch_seconds(high)[0])
        start, end, instants, _ = self._removed_year
        if start <= whole < end:
            index = bisect.bisect_left(instants, whole)
            until = instants[index] if index < len(instants) else end
            self._clear = (low, _to_datetime(until))
        return found

    def _removed_of_year(self, year: int) -> _RemovedYear:
        """The removed times whose instant falls in the UTC ``year``, with its bounds and their
        instants (to bisect)."""
        start = (date(year, 1, 1).toordinal() - _EPOCH_ORDINAL) * 86_400
        end = (date(year + 1, 1, 1).toordinal() - _EPOCH_ORDINAL) * 86_400
        times: list[RemovedTime] = []
        # a local date is within a day of the UTC one, and a gap can end on the next day
        for ordinal in sorted({*_transition_days(self.zone, year - 1),
                               *_transition_days(self.zone, year),
                               *_transition_days(self.zone, year + 1)}):
            times += (r for r in self._removed_of_day(ordinal) if start <= r.instant < end)
        times.sort()
        return start, end, tuple(r.instant for r in times), tuple(times)

    def _removed_of_day(self, ordinal: int) -> list[RemovedTime]:
        """The times of day ``ordinal`` the DST rule removes (none on a day that does not
        match), each tagged in wall-clock order."""
        day = date.fromordinal(ordinal)
        if day.month not in self._months or day.day not in self._days_of(day.year, day.month):
            return []
        midnight = datetime.fromordinal(ordinal)
        local_midnight = (ordinal - _EPOCH_ORDINAL) * 86_400
        removed: list[RemovedTime] = []
        for t in self._times:
            wall = midnight + timedelta(seconds=t)
            before = _seconds(self.zone.utcoffset(wall))
            after = _seconds(self.zone.utcoffset(wall.replace(fold=1)))
            wall_seconds = local_midnight + t
            if before > after and self.dst.fold is DstFold.ONCE:
                instant, gap = wall_seconds - after, False
            elif before < after and self.dst.gap is DstGap.SKIP:
                instant, gap = self._gap_end(wall_seconds - after, wall_seconds - before), True
            else:
                continue
            removed.append(RemovedTime(instant, len(removed) + 1, day, t, gap))
        return removed

    # -- iteration --------------------------------------------------------------------------

    def _local_date(self, instant: int) -> date:
        if self._fixed_offset is not None:
            return date.fromordinal(_EPOCH_ORDINAL + (instant + self._fixed_offset) // 86_400)
        return datetime.fromtimestamp(instant, self.zone).date()

    def instants_after(self, instant: datetime) -> Iterator[datetime]:
        """Slots strictly after the aware ``instant``, ascending, as aware UTC datetimes."""
        whole, _ = _epoch_seconds(instant)
        return map(_to_datetime, self.after(whole))

    def instants_before(self, instant: datetime) -> Iterator[datetime]:
        """Slots strictly before the aware ``instant``, descending, as aware UTC datetimes."""
        whole, fraction = _epoch_seconds(instant)
        return map(_to_datetime, self.before(whole + 1 if fraction else whole))

    def next_after(self, instant: int) -> int | None:
        """The first slot strictly after ``instant`` (epoch seconds), or None.

        A timer firing asks this once per slot; most answers lie later the same day, on a day
        (and a day before it) without a transition, where they are one bisection away. Every
        other case takes the general walk of :meth:`after`.
        """
        if not _FIRST_SLOT_AFTER + 2 * 86_400 <= instant < _WALK_UNTIL:
            return next(self.after(instant), None)  # the day before must be in the calendar
        day = self._local_date(instant)
        if day.month in self._months and day.day in self._days_of(day.year, day.month):
            ordinal = day.toordinal()
            base = self._day_base(ordinal)
            # the previous day must be regular too: a gap slot of it can land on this day
            if base is not None and self._wall_offset(ordinal - 1) == self._wall_offset(ordinal):
                times = self._times
                index = bisect.bisect_right(times, instant - base)
                if index < len(times):
                    return base + times[index]
        return next(self.after(instant), None)

    def after(self, instant: int) -> Iterator[int]:
        """Slot instants strictly after ``instant`` (epoch seconds), ascending."""
        if instant >= _WALK_UNTIL:
            return
        # A gap slot of the previous day can land on this day (a gap across midnight), so the
        # walk starts a day early; a regular previous day is passed over at once.
        local = self._local_date(max(instant, _WALK_FROM))
        start = local - _DAY if local > _FIRST_DAY else _FIRST_DAY
        year, month, first_day = start.year, start.month, start.day
        months = self._months
        times = self._times
        last = instant
        while year < _MAX_YEAR or month <= _LAST_DAY.month:
            if month in months:
                first_ordinal = date(year, month, 1).toordinal() - 1
                for day in self._days_of(year, month):
                    if day < first_day:
                        continue
                    base = self._day_base(first_ordinal + day)
                    if base is not None:
                        if base + times[-1] > last:
                            index = bisect.bisect_right(times, last - base)
                            if index == 0:
                                for t in times:
                                    yield base + t
                            else:  # a partial first day: index, rather than copy the tail
                                for k in range(index, len(times)):
                                    yield base + times[k]
                            last = base + times[-1]
                        continue
                    slots = self._transition_day_slots(
                        first_ordinal + day, (first_ordinal + day - _EPOCH_ORDINAL) * 86_400
                    )
                    if slots and slots[-1] > last:
                        yield from slots[bisect.bisect_right(slots, last) :]
                        last = slots[-1]
            first_day = 1
            month += 1
            if month == 13:
                month = 1
                year += 1

    def before(self, instant: int) -> Iterator[int]:
        """Slot instants strictly before ``instant`` (epoch seconds), descending."""
        if instant <= _FIRST_SLOT_AFTER:
            return
        start = min(self._local_date(min(instant, _WALK_UNTIL)) + _DAY, _LAST_DAY)
        year, month, last_day = start.year, start.month, start.day
        months = self._months
        bound = instant
        while year > _MIN_YEAR or month >= _FIRST_DAY.month:
            if month in months:
                first_ordinal = date(year, month, 1).toordinal() - 1
                for day in reversed(self._days_of(year, month)):
                    if day > last_day:
                        continue
                    slots = self._day_slots(first_ordinal + day)
                    if slots and slots[0] < bound:
                        yield from reversed(slots[: bisect.bisect_left(slots, bound)])
                        bound = slots[0]
            last_day = 31
            month -= 1
            if month == 0:
                month = 12
                year -= 1


def _seconds(offset: timedelta | None) -> int:
    assert offset is not None
    return offset.days * 86_400 + offset.seconds


def _fixed_offset(zone: ZoneInfo) -> int | None:
    """The zone's offset if it never changes (UTC and the Etc zones), else None."""
    if zone.key in ("UTC", "Etc/UTC", "Etc/UCT", "Etc/Universal", "Etc/Zulu", "UCT", "Zulu",
                    "Universal", "GMT", "Etc/GMT", "Etc/GMT0", "Etc/GMT+0", "Etc/GMT-0",
                    "Etc/Greenwich", "GMT0", "GMT+0", "GMT-0", "Greenwich"):
        return 0
    if zone.key.startswith("Etc/GMT"):
        return _seconds(zone.utcoffset(datetime(2000, 1, 1)))
    return None


def _epoch_seconds(instant: datetime) -> tuple[int, bool]:
    """``instant`` as whole epoch seconds (floored) and whether it had a fraction."""
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError("instant must be timezone-aware")
    delta = instant - datetime(1970, 1, 1, tzinfo=UTC)
    whole = delta.days * 86_400 + delta.seconds
    return whole, delta.microseconds != 0


def _to_datetime(instant: int) -> datetime:
    return datetime.fromtimestamp(instant, UTC)


@dataclass(frozen=True)
class Cron:
    """A cron expression read in an IANA time zone with cronduit's DST rules.

    >>> from datetime import datetime, UTC
    >>> cron = Cron("30 1 * * *", "Europe/London")
    >>> next(cron.after(datetime(2026, 3, 28, 12, tzinfo=UTC))).isoformat()
    '2026-03-29T01:00:00+00:00'

    (01:30 does not exist in London that night; the job runs at 02:00 BST, the first instant
    after the gap.) ``after`` and ``before`` iterate aware UTC datetimes strictly after or
    before the given aware instant. Invalid input raises :class:`CronError` or ``ValueError``
    (for an unknown zone) before any iteration.
    """

    expression: str
    tz: str = "UTC"
    dst: DstPolicy = field(default_factory=DstPolicy)
    parsed: CronExpression = field(init=False, repr=False, compare=False)
    plan: DailyPlan = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parsed = CronExpression.parse(self.expression)
        object.__setattr__(self, "parsed", parsed)
        object.__setattr__(self, "plan", cron_plan(parsed, self.tz, self.dst))

    def after(self, instant: datetime) -> Iterator[datetime]:
        return self.plan.instants_after(instant)

    def before(self, instant: datetime) -> Iterator[datetime]:
        return self.plan.instants_before(instant)


@lru_cache(maxsize=1024)
def cron_plan(parsed: CronExpression, tz: str, dst: DstPolicy) -> DailyPlan:
    """The daily plan of a parsed expression; cached, as jobs ask for the same one often.

    Raises :class:`CronError` when the plan never runs: ``gap: skip`` can remove every slot
    of an expression whose times all fall in spring-forward gaps (02:30 on the second Sunday
    of March, in New York), which is refused like an expression that matches no date.
    """
    times = tuple(h * 3600 + m * 60 for h in parsed.hours for m in parsed.minutes)
    plan = DailyPlan(load_zone(tz), times, parsed.months, parsed, parsed.wildcard, dst)
    if plan.removes and dst.gap is DstGap.SKIP and next(plan.after(_STANDING_RULES), None) is None:
        raise CronError(f"{parsed.text.strip()!r} never runs in {tz} with dst gap: skip: every "
                        "time it names falls in a spring-forward gap")
    return plan
