"""Fuzzing cron expressions: parsed or refused cleanly; an accepted one always has a slot.

Each :class:`CronCase` is an expression (valid, near-valid or any text), an IANA zone (any
of them), a DST policy and a start instant (1900 to 2200 mostly, sometimes at the ends of
the calendar). :func:`check` builds the schedule:

- a refusal is a :class:`CronError` (or :class:`ZoneError` for the zone) with a one-line
  message; "can never match a real date" is checked against the calendar by brute force;
- an accepted expression yields a next slot strictly after the start, the same by the
  engine's fast path as by the general walk, with no slot between (the slot before it is at
  or before the start); none only when the calendar ends first (past 9999);
- cronsim, the oracle, agrees where it applies: the default DST policy, a slot between 1970
  and 9000, and either no clock change of the zone near the window or a zone cronsim is
  known to get right (``tests/core/test_cron_oracle.py`` compares whole windows near clock
  changes).
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError
from hypothesis import strategies as st

from cronduit.core.cron import Cron, CronError, DstPolicy, ZoneError
from cronduit.core.enums import DstFold, DstGap
from tests.core.strategies import ODD_ZONES, ZONES, instants_near_transitions, transitions
from tests.core.strategies import cron_texts as valid_cron_texts
from tests.fuzzing.findings import expect
from tests.fuzzing.values import weighted

ALL_ZONES = tuple(sorted(zoneinfo.available_timezones()))
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LAST_CENTURY = datetime(9900, 1, 1, tzinfo=UTC)
"""From here a schedule may have no next slot: ``datetime`` ends with 9999, and an
expression may match once in 40 years (29 February on a Sunday, across a century)."""
CRONSIM_SLOTS = 10_000
"""Ticks of cronsim's walk allowed per case; it has been seen to spin on some inputs."""
_FIELD_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_SINGLE_STEPPED = re.compile(r"(?:^|,)(\w+)-\1/")


@dataclass(frozen=True)
class CronCase:
    """``text`` read in ``zone`` under ``gap``/``fold``, asked for its slots after ``start``."""

    text: str
    zone: str
    gap: DstGap
    fold: DstFold
    start: datetime


# -- the check -----------------------------------------------------------------------------


def check(case: CronCase) -> None:
    """Parse or refuse cleanly; every accepted expression has its next slot."""
    try:
        cron = Cron(case.text, case.zone, DstPolicy(case.gap, case.fold))
    except CronError as error:
        _check_refusal(case.text, str(error))
        return
    except ZoneError as error:
        expect(case.zone not in ALL_ZONES, "an IANA zone refused: %s", error)
        _check_message(str(error))
        return
    _check_slots(cron, case)


def _check_message(message: str) -> None:
    expect(bool(message.strip()), "an empty refusal")
    expect("\n" not in message and "\r" not in message, "a refusal of two lines: %r", message)


def _check_refusal(text: str, message: str) -> None:
    _check_message(message)
    if message.endswith("can never match a real date"):
        expect(not _any_day_matches(_unchecked(text)), "refused, yet a day matches: %r", text)


def _check_slots(cron: Cron, case: CronCase) -> None:
    start = case.start
    first = next(cron.after(start), None)
    if first is None:
        expect(start >= LAST_CENTURY, "accepted, yet no slot after %s", start)
        return
    expect(first > start, "slot %s is not after %s", first, start)
    fast = cron.plan.next_after(int((start - EPOCH) // timedelta(seconds=1)))
    expect(fast is not None and datetime.fromtimestamp(fast, UTC) == first,
           "next_after says %s, after() says %s", fast, first)
    before = next(cron.before(first), None)
    expect(before is None or before <= start, "slot %s lies between %s and %s", before, start,
           first)
    if _cronsim_applies(case, first):
        theirs = _cronsim_next(case.text, case.zone, start)
        expect(theirs is None or theirs == first, "cronsim says %s, cronduit %s", theirs, first)


def _cronsim_applies(case: CronCase, first: datetime) -> bool:
    if (case.gap, case.fold) != (DstGap.RUN, DstFold.ONCE) or not 1970 <= first.year < 9000:
        return False
    if _SINGLE_STEPPED.search(case.text):
        return False  # cronsim reads "5-5/2" as "5 to the end, step 2"; classic cron as 5
    if case.zone in ZONES and case.zone not in ODD_ZONES:
        return not _inside_repeated_hour(case.start, case.zone)
    low, high = case.start - timedelta(days=1), first + timedelta(days=1)
    return not any(low <= change <= high
                   for year in range(low.year, high.year + 1)
                   for change in transitions(case.zone, year))


def _cronsim_next(text: str, zone: str, start: datetime) -> datetime | None:
    try:
        walk = _BoundedCronSim(text, start.astimezone(ZoneInfo(zone)))
        return next(walk).astimezone(UTC)
    except (CronSimError, _CronsimStuck, StopIteration):
        return None  # cronsim refuses (@macros, ranges it reads otherwise) or spins


class _CronsimStuck(Exception):
    pass


class _BoundedCronSim(CronSim):
    """cronsim with a budget of ticks, so an input it loops on cannot hang the fuzzer."""

    budget = CRONSIM_SLOTS

    def tick(self, seconds: int = 1) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise _CronsimStuck
        super().tick(seconds)


def _inside_repeated_hour(instant: datetime, zone: str) -> bool:
    tz = ZoneInfo(zone)
    wall = instant.astimezone(tz).replace(tzinfo=None)
    return wall.replace(tzinfo=tz, fold=0).utcoffset() != wall.replace(tzinfo=tz,
                                                                        fold=1).utcoffset()


# -- "can never match a real date", by brute force -------------------------------------------


@dataclass(frozen=True)
class _Days:
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    day_or: bool


def _unchecked(text: str) -> _Days:
    """The day fields of ``text``, parsed by hand (the parser refuses the whole expression)."""
    from cronduit.core import cron  # noqa: PLC0415 - its field parser, private on purpose

    stripped = text.strip()
    stripped = cron._MACROS.get(stripped.lower(), stripped)
    parts = stripped.split()
    values = [cron._parse_field(part, index) for index, part in enumerate(parts)]
    return _Days(values[2], values[3], values[4],
                 not (parts[2].startswith("*") or parts[4].startswith("*")))


@cache
def _calendar_days() -> tuple[date, ...]:
    """Every day of 28 consecutive years (each weekday and leap shape) and of a century's
    years that skip February 29th."""
    start, end = date(2000, 1, 1), date(2028, 1, 1)
    days = [start + timedelta(days=n) for n in range((end - start).days)]
    days += [date(2100, 1, 1) + timedelta(days=n) for n in range(365 * 4)]
    return tuple(days)


def _any_day_matches(parsed: _Days) -> bool:
    for day in _calendar_days():
        if day.month not in parsed.months:
            continue
        in_days, in_weekdays = day.day in parsed.days, (day.weekday() + 1) % 7 in parsed.weekdays
        if (in_days or in_weekdays) if parsed.day_or else (in_days and in_weekdays):
            return True
    return False


# -- the cases -----------------------------------------------------------------------------


def _numbers(index: int) -> st.SearchStrategy[str]:
    low, high = _FIELD_BOUNDS[index]
    return st.one_of(
        st.integers(low, high).map(str),
        st.integers(low - 1, high + 1).map(str),
        st.sampled_from(["007", "00", "99999999999999999999", "1" * 5000, "-1", "+1", "1.0",
                         "\u0661", "\uff11", "0x1", ""]),
    )


_NAMES = ("jan", "JAN", "Feb", "dec", "mon", "SUN", "sat", "thu", "january", "monday",
          "L", "W", "5L", "15W", "LW", "1#3", "5#6", "?", "*", "**", "JUL-DEC", "MON-FRI")


def _field(index: int) -> st.SearchStrategy[str]:
    """One field: one to three items, each a number, a name, ``*`` or a range, with or
    without a step, any of which may break a rule."""
    number = _numbers(index) | st.sampled_from(_NAMES)
    base = st.one_of(number, st.just("*"), st.builds("{}-{}".format, number, number))
    step = st.one_of(st.just(""), st.integers(0, 62).map("/{}".format),
                     _numbers(index).map("/{}".format))
    item = st.builds(str.__add__, base, step)
    return st.lists(item, min_size=1, max_size=3).map(",".join)


_FIELDS = tuple(_field(index) for index in range(5))


_SEPARATORS = (" ", " ", " ", "  ", "\t", "\u00a0", "\u2003", "\n", "\x0b", "\u3000")
_MACROS = ("@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually",
           "@reboot", "@HOURLY", "@every 5m", "@", " @daily ")


@st.composite
def near_valid_cron(draw: st.DrawFn) -> str:
    """Five fields (or four, or six) of items that may break any rule, joined by any space."""
    count = draw(st.sampled_from([5, 5, 5, 5, 4, 6, 1]))
    fields = [draw(_FIELDS[min(i, 4)]) for i in range(count)]
    spaces = [draw(st.sampled_from(_SEPARATORS)) for _ in range(count - 1)]
    text = fields[0] + "".join(space + field for space, field in zip(spaces, fields[1:],
                                                                    strict=True))
    prefix = draw(st.sampled_from(["", "", "", "TZ=UTC ", "CRON_TZ=Europe/London ", " "]))
    return prefix + text + draw(st.sampled_from(["", "", " ", "\n"]))


def cron_texts() -> st.SearchStrategy[str]:
    """Cron expressions: valid ones (as the oracle test draws them), near-valid ones,
    macros, and any text."""
    return weighted((6, valid_cron_texts), (2, near_valid_cron()),
                    (1, st.sampled_from(_MACROS)), (1, st.text(max_size=20)))


_TEXTS = cron_texts()
_ZONES = weighted((4, st.sampled_from(ZONES)), (5, st.sampled_from(ALL_ZONES)),
                  (1, st.sampled_from(["Nope/Zone", "", "UTC ", "../UTC"])))
starts = weighted(
    (12, st.datetimes(datetime(1970, 1, 1), datetime(2200, 1, 1), timezones=st.just(UTC))),
    (4, st.datetimes(datetime(1900, 1, 1), datetime(1970, 1, 1), timezones=st.just(UTC))),
    (1, st.datetimes(datetime(1, 1, 1), datetime(1, 2, 3), timezones=st.just(UTC))),
    (1, st.datetimes(datetime(9999, 11, 1), datetime(9999, 12, 31, 23, 59),
                     timezones=st.just(UTC))),
)


@st.composite
def cron_cases(draw: st.DrawFn) -> CronCase:
    """An expression, a zone (a tricky one often), a DST policy and a start instant (in a
    zone with tricky clock changes, within two days of one, half the time)."""
    zone = draw(_ZONES)
    policy = draw(st.sampled_from([(DstGap.RUN, DstFold.ONCE)] * 3
                                  + [(g, f) for g in DstGap for f in DstFold]))
    near_change = zone in ZONES and draw(st.booleans())
    start = draw(instants_near_transitions(zone) if near_change else starts)
    return CronCase(draw(_TEXTS), zone, *policy, start)
