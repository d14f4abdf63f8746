"""Hypothesis strategies shared by the core's property tests."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

from hypothesis import strategies as st

ZONES = (
    "Europe/London",
    "America/New_York",
    "Europe/Berlin",
    "Australia/Sydney",
    "Pacific/Auckland",
    "America/St_Johns",  # -03:30, changes at 02:00
    "Australia/Lord_Howe",  # shifts by 30 minutes
    "Pacific/Chatham",  # +12:45, changes at 02:45
    "America/Havana",  # changes at midnight
    "America/Santiago",  # changes at 24:00
    "Asia/Beirut",  # changes at midnight
    "Europe/Dublin",  # negative DST in tzdata
    "Asia/Kolkata",  # no DST at all
)
"""Zones cronsim is known to misjudge: half-hour and :45 shifts, midnight changes."""
ODD_ZONES = frozenset(
    {"Australia/Lord_Howe", "Pacific/Chatham", "America/Havana", "America/Santiago",
     "Asia/Beirut"}
)


@cache
def transitions(zone: str, year: int) -> tuple[datetime, ...]:
    """The UTC instants in ``year`` at which ``zone``'s offset changes (found by bisection)."""
    tz = ZoneInfo(zone)
    found: list[datetime] = []
    day = datetime(year, 1, 1, tzinfo=UTC)
    end = datetime(year + 1, 1, 1, tzinfo=UTC)
    while day < end:
        following = day + timedelta(hours=12)
        if day.astimezone(tz).utcoffset() != following.astimezone(tz).utcoffset():
            low, high = day, following
            while high - low > timedelta(seconds=1):
                middle = low + (high - low) / 2
                if middle.astimezone(tz).utcoffset() == low.astimezone(tz).utcoffset():
                    low = middle
                else:
                    high = middle
            found.append(high.replace(microsecond=0))
        day = following
    return tuple(found)


def _field(low: int, high: int, names: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    value = st.integers(low, high)
    single = value.map(str)
    if names:
        single = single | st.sampled_from(names)
    ranged = st.tuples(value, value).map(lambda p: f"{min(p)}-{max(p)}")
    # cronsim reads a one-value range with a step ("5-5/2") as "5 to the field's end, step 2";
    # classic cron reads it as just 5. Generate proper ranges so the oracles stay comparable.
    proper = st.tuples(value, value).filter(lambda p: p[0] != p[1])
    proper_ranged = proper.map(lambda p: f"{min(p)}-{max(p)}")
    stepped = st.tuples(proper_ranged, st.integers(1, max(1, (high - low) // 2))).map(
        lambda p: f"{p[0]}/{p[1]}"
    )
    star_step = st.integers(1, max(1, (high - low) // 2)).map(lambda n: f"*/{n}")
    item = single | ranged | stepped
    listed = st.lists(item, min_size=2, max_size=3).map(",".join)
    return st.one_of(st.just("*"), star_step, single, ranged, stepped, listed)


minute_fields = _field(0, 59)
hour_fields = st.one_of(_field(0, 23), st.sampled_from(["0", "1", "2", "3", "0-3", "1,2", "23"]))
# Mostly "*" in the day fields, so that most generated schedules fire inside the test window.
day_fields = st.one_of(st.just("*"), st.just("*"), st.just("*"), _field(1, 31))
month_fields = st.one_of(st.just("*"), st.just("*"), st.just("*"), _field(1, 12))
weekday_fields = st.one_of(st.just("*"), st.just("*"), _field(0, 7, ("mon", "SUN", "fri")))

cron_texts = st.builds(
    lambda *fields: " ".join(fields),
    minute_fields,
    hour_fields,
    day_fields,
    month_fields,
    weekday_fields,
)


@st.composite
def instants_near_transitions(draw: st.DrawFn, zone: str) -> datetime:
    """An instant within two days of one of ``zone``'s transitions, 2020-2035."""
    year = draw(st.integers(2020, 2035))
    changes = transitions(zone, year)
    if not changes:
        return datetime(year, draw(st.integers(1, 12)), 15, tzinfo=UTC)
    change = draw(st.sampled_from(changes))
    return change + timedelta(minutes=draw(st.integers(-48 * 60, 48 * 60)))


# -- JSON -----------------------------------------------------------------------------


def json_values(max_leaves: int = 30) -> st.SearchStrategy[object]:
    """Any JSON value: scalars (strings full of quotes, backslashes and brackets included)
    inside lists and objects nested to any depth."""
    tricky = st.text(alphabet=st.sampled_from('[]{}"\\,: \n\tx\u2028é'), max_size=8)
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                        st.text(max_size=8), tricky)
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=4),
                                st.dictionaries(st.one_of(st.text(max_size=4), tricky),
                                                inner, max_size=4)),
        max_leaves=max_leaves)


def json_texts() -> st.SearchStrategy[str]:
    """JSON documents as a client may spell them: compact or indented, ASCII or not."""
    return st.builds(
        lambda value, indent, ascii_only: json.dumps(value, indent=indent,
                                                     ensure_ascii=ascii_only),
        json_values(), st.sampled_from([None, 0, 2]), st.booleans())
