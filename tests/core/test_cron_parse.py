"""Parsing and refusing cron expressions: classic syntax in, pointed errors out."""

from __future__ import annotations

import pytest

from cronduit.core.cron import (
    WILDCARD_IGNORES_DST,
    CronError,
    CronExpression,
    TzPrefixError,
    dst_policy_ignored,
)


@pytest.mark.parametrize(
    ("text", "minutes", "hours", "days", "months", "weekdays"),
    [
        ("* * * * *", range(60), range(24), range(1, 32), range(1, 13), range(7)),
        ("*/15 * * * *", [0, 15, 30, 45], range(24), range(1, 32), range(1, 13), range(7)),
        ("0 9-17/4 * * *", [0], [9, 13, 17], range(1, 32), range(1, 13), range(7)),
        ("0 9,13,18 * * *", [0], [9, 13, 18], range(1, 32), range(1, 13), range(7)),
        ("0 0 * jan,Jul *", [0], [0], range(1, 32), [1, 7], range(7)),
        ("0 0 * * MON-fri", [0], [0], range(1, 32), range(1, 13), [1, 2, 3, 4, 5]),
        ("0 0 * * 7", [0], [0], range(1, 32), range(1, 13), [0]),
        ("0 0 * * 5-7", [0], [0], range(1, 32), range(1, 13), [0, 5, 6]),
        ("0 0 * * */2", [0], [0], range(1, 32), range(1, 13), [0, 2, 4, 6]),
        ("@hourly", [0], range(24), range(1, 32), range(1, 13), range(7)),
        ("@weekly", [0], [0], range(1, 32), range(1, 13), [0]),
        ("@yearly", [0], [0], [1], [1], range(7)),
    ],
)
def test_it_parses_classic_fields(
    text: str, minutes: object, hours: object, days: object, months: object, weekdays: object
) -> None:
    """Each field expands to the set of values classic cron gives it."""
    parsed = CronExpression.parse(text)
    assert frozenset(minutes) == parsed.minutes  # type: ignore[arg-type]
    assert frozenset(hours) == parsed.hours  # type: ignore[arg-type]
    assert frozenset(days) == parsed.days  # type: ignore[arg-type]
    assert frozenset(months) == parsed.months  # type: ignore[arg-type]
    assert frozenset(weekdays) == parsed.weekdays  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "day_or"),
    [
        ("0 0 1 * 1", True),
        ("0 0 */2 * 1", False),
        ("0 0 1 * *", False),
        ("0 0 * * 1", False),
        ("0 0 1-31 * 1", True),
    ],
)
def test_day_fields_combine_with_the_star_quirk(text: str, day_or: bool) -> None:
    """Both day fields restricted means either matches, unless one of them starts with '*'."""
    assert day_or == CronExpression.parse(text).day_or


@pytest.mark.parametrize(
    ("text", "wildcard"),
    [
        ("*/30 * * * *", True),
        ("0 * * * *", True),
        ("*/15 1 * * *", True),
        ("@hourly", True),
        ("0 1-23/2 * * *", False),
        ("30 2 * * *", False),
        ("@daily", False),
    ],
)
def test_wildcard_jobs_are_those_whose_minute_or_hour_starts_with_a_star(
    text: str, wildcard: bool
) -> None:
    """The DST rule depends on it: wildcard jobs follow real time."""
    assert wildcard == CronExpression.parse(text).wildcard


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("61 * * * *", "minute field: 61 is outside 0-59"),
        ("* 24 * * *", "hour field: 24 is outside 0-23"),
        ("* * 0 * *", "day-of-month field: 0 is outside 1-31"),
        ("* * * 13 *", "month field: 13 is outside 1-12"),
        ("* * * * 8", "day-of-week field: 8 is outside 0-7"),
        ("*/0 * * * *", "step 0"),
        ("5-1 * * * *", "runs backwards"),
        ("5/15 * * * *", "steps from a single value"),
        ("0 0 * * 5#3", "# (nth weekday) is not supported"),
        ("0 0 L * *", "L (last) is not supported"),
        ("0 0 15W * *", "W (weekday) is not supported"),
        ("0 0 ? * *", "? is not supported"),
        ("0 0 0 * * *", "seconds field is not supported"),
        ("0 0 * *", "expected five fields"),
        ("TZ=Europe/London 0 9 * * *", "time_zone"),
        ("CRON_TZ=UTC 0 9 * * *", "time_zone"),
        ("@reboot", "@reboot is not supported"),
        ("@fortnightly", "unknown macro"),
        ("0 0 30 2 *", "can never match a real date"),
        ("0 0 31 4,6,9,11 *", "can never match a real date"),
        ("x * * * *", "is not a number"),
        ("1,,2 * * * *", "empty list item"),
        ("*/90 * * * *", "larger than the field's range"),
    ],
)
def test_it_refuses_what_it_cannot_honour(text: str, message: str) -> None:
    """Unsupported or impossible expressions are refused with a message naming the rule."""
    with pytest.raises(CronError, match=None) as caught:
        CronExpression.parse(text)
    assert message in str(caught.value)


def test_a_tz_prefix_names_its_zone_and_the_setting_the_caller_gives() -> None:
    """The config's refusal points at time_zone; a caller with its own zone option (cron
    next's --tz) gets the same refusal pointing at that option instead."""
    with pytest.raises(TzPrefixError) as caught:
        CronExpression.parse("CRON_TZ=Asia/Tokyo 0 9 * * *")
    assert ("Asia/Tokyo", "a TZ= prefix is not supported in the expression; set the job's "
                          "time_zone instead", "a TZ= prefix is not supported in the "
                          "expression; use --tz instead") == (
        caught.value.zone, str(caught.value), str(caught.value.pointing_at("use --tz")))


@pytest.mark.parametrize(("text", "expected"), [
    ("30 1 * * *", None),
    ("0 9 * * 1-5", None),
    ("@daily", None),
    ("*/30 1 * * *", WILDCARD_IGNORES_DST),
    ("0 * * * *", WILDCARD_IGNORES_DST),
])
def test_a_dst_policy_applies_to_fixed_time_expressions_only(text: str,
                                                             expected: str | None) -> None:
    """Why a DST policy has no effect on an expression (its minute or hour field starts with
    *), or None when the expression is fixed-time and the policy applies."""
    assert expected == dst_policy_ignored(CronExpression.parse(text))


def test_feb_29_is_accepted_because_leap_years_exist() -> None:
    """A date that exists only in leap years still matches a real date."""
    assert frozenset({29}) == CronExpression.parse("0 0 29 2 *").days


def test_names_with_letters_l_and_w_are_not_mistaken_for_modifiers() -> None:
    """JUL contains an L and WED a W; they are names, not the unsupported modifiers."""
    assert frozenset({7}) == CronExpression.parse("0 0 * jul wed").months


@pytest.mark.parametrize(("text", "message"), [
    ("1" * 5000 + " * * * *", "minute field: 111111111111... is outside 0-59"),
    ("* * 1-" + "9" * 5000 + " * *", "day-of-month field: 999999999999... is outside 1-31"),
    ("*/" + "1" * 5000 + " * * * *", "minute field: step 111111111111... in '*/1111"),
    ("0" * 40 + "7 * * * *", None),
])
def test_a_number_of_any_length_is_read_or_refused_as_out_of_range(text: str,
                                                                     message: str | None
                                                                     ) -> None:
    """A number past Python's 4,300-digit limit for reading one is out of range like any
    other, with the message cut short; leading zeros do not count ("0007" is 7)."""
    if message is None:
        assert frozenset({7}) == CronExpression.parse(text).minutes
        return
    with pytest.raises(CronError) as caught:
        CronExpression.parse(text)
    assert str(caught.value).startswith(message)
    assert len(str(caught.value)) < 200
