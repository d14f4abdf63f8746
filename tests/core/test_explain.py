"""Cron expressions said in English, as ``cronduit cron explain`` prints them."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from cronduit.core.cron import CronError, CronExpression
from cronduit.core.explain import explain
from tests.core.strategies import cron_texts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # fixed times of day
        ("30 2 * * 1-5", "At 02:30, Monday through Friday"),
        ("0 9,13,18 * * *", "At 09:00, 13:00 and 18:00"),
        ("0 6,18 * * *", "At 06:00 and 18:00"),
        ("0 22 * * 1-5", "At 22:00, Monday through Friday"),
        ("5 4 * * sun", "At 04:05, on Sunday"),
        ("0 9 * * MON-FRI", "At 09:00, Monday through Friday"),
        # rhythms within the hour
        ("* * * * *", "Every minute"),
        ("*/15 * * * *", "Every 15 minutes"),
        ("*/7 * * * *", "Every 7 minutes from minute 0 through 56"),
        ("5-59/15 * * * *", "Every 15 minutes from minute 5 through 50"),
        ("1-50/1 * * * *", "Every minute from minute 1 through 50"),
        ("0 * * * *", "At minute 0 of every hour"),
        ("15,45 * * * *", "At minute 15 and 45 of every hour"),
        ("*/30 9-17 * * *", "Every 30 minutes, from 09:00 through 17:59"),
        ("*/15 9 * * *", "Every 15 minutes from 09:00 through 09:45"),
        ("* 9 * * *", "Every minute from 09:00 through 09:59"),
        ("0-4,10,20 9 * * *", "At minute 0 through 4, 10 and 20 past 09:00"),
        (
            "*/10 9,17 * * *",
            "Every 10 minutes, from 09:00 through 09:59 and from 17:00 through 17:59",
        ),
        # rhythms across hours
        ("0 9-17 * * *", "At minute 0 past every hour from 09:00 through 17:00"),
        ("0,30 8-14 * * *", "At minute 0 and 30 past every hour from 08:00 through 14:00"),
        ("0 */2 * * *", "At minute 0 of every 2nd hour"),
        ("30 1-23/2 * * *", "At minute 30 of every 2nd hour from 01:00 through 23:59"),
        ("23 0-20/2 * * *", "At minute 23 of every 2nd hour from 00:00 through 20:59"),
        # days of the month, and the classic either-day rule
        ("0 0 1 * *", "At 00:00, on day 1 of the month"),
        ("0 4 8-14 * *", "At 04:00, on day 8 through 14 of the month"),
        ("0 0 1,2 * *", "At 00:00, on day 1 and 2 of the month"),
        ("0 0 */2 * *", "At 00:00, on every 2nd day of the month from day 1 through 31"),
        ("0 0 1,15 * 1", "At 00:00, on day 1 and 15 of the month or on Monday"),
        ("0 0 13 * 5", "At 00:00, on day 13 of the month or on Friday"),
        ("0 0 1-7 * 1", "At 00:00, on day 1 through 7 of the month or on Monday"),
        ("0 0 1-31 * 1", "At 00:00"),
        (
            "0 0 */2 * 1",
            "At 00:00, on every 2nd day of the month from day 1 through 31, if it falls on Monday",
        ),
        ("10 * 1 * *", "At minute 10 of every hour, on day 1 of the month"),
        # weekdays
        ("0 0 * * 7", "At 00:00, on Sunday"),
        ("0 0 * * 1,3,5", "At 00:00, on Monday, Wednesday and Friday"),
        ("0 0 * * 1-5/2", "At 00:00, on Monday, Wednesday and Friday"),
        ("0 0 * * 5-7", "At 00:00, Friday through Sunday"),
        ("0 0 * * sat,sun", "At 00:00, on Saturday and Sunday"),
        ("0 0 * * 0,1,6", "At 00:00, Saturday through Monday"),
        ("0 0 * * */2", "At 00:00, on Sunday, Tuesday, Thursday and Saturday"),
        ("*/5 * * * 0,6", "Every 5 minutes, on Saturday and Sunday"),
        # months
        ("0 0 * 1,7 *", "At 00:00, in January and July"),
        ("0 0 * 3-10 *", "At 00:00, from March through October"),
        ("0 0 1 jan-mar *", "At 00:00, on day 1 of the month, from January through March"),
        ("0 0 1 1-3,6 *", "At 00:00, on day 1 of the month, in January through March and June"),
        ("0 12 * */3 *", "At 12:00, in January, April, July and October"),
        ("0 0 29 2 *", "At 00:00, on day 29 of the month, in February"),
        # macros
        ("@hourly", "At minute 0 of every hour"),
        ("@daily", "At 00:00"),
        ("@weekly", "At 00:00, on Sunday"),
        ("@monthly", "At 00:00, on day 1 of the month"),
        ("@yearly", "At 00:00, on day 1 of the month, in January"),
    ],
)
def test_it_says_the_expression_in_words(text: str, expected: str) -> None:
    """Each expression reads as the sentence an operator would write for it."""
    assert expected == explain(text)


@pytest.mark.parametrize("text", ["0 0 30 2 *", "61 * * * *", "0 0 L * *", "@reboot", "* * *"])
def test_an_invalid_expression_raises_the_parser_error(text: str) -> None:
    """Explaining never hides a bad expression: the parser's error reaches the caller."""
    with pytest.raises(CronError):
        explain(text)


def test_spellings_of_the_same_schedule_read_the_same() -> None:
    """Names, ``7`` for Sunday and full ranges change nothing in the sentence."""
    spellings = ["0 8 * * 0,6", "0 8 * * sun,sat", "0 8 * * 6,7", "0-0 8 */1 */1 SAT,SUN"]
    expected = ["At 08:00, on Saturday and Sunday"] * len(spellings)
    assert expected == [explain(text) for text in spellings]


# -- properties ------------------------------------------------------------------------------


def _field(low: int, high: int, names: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    """One field in any classic spelling: values, names, ranges, steps and lists of them."""
    value = st.integers(low, high).map(str)
    if names:
        value = value | st.sampled_from(names)
    pair = st.tuples(st.integers(low, high), st.integers(low, high)).map(sorted)
    ranged = pair.map(lambda p: f"{p[0]}-{p[1]}")
    stepped = st.tuples(pair, st.integers(1, high - low)).map(
        lambda p: f"{p[0][0]}-{p[0][1]}/{p[1]}" if p[0][0] < p[0][1] else f"*/{p[1]}"
    )
    item = value | ranged | stepped
    return st.just("*") | item | st.lists(item, min_size=2, max_size=4).map(",".join)


expressions = st.one_of(
    cron_texts,
    st.sampled_from(["@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly"]),
    st.builds(
        "{} {} {} {} {}".format,
        _field(0, 59),
        _field(0, 23),
        _field(1, 31),
        _field(1, 12, ("jan", "FEB", "Jul", "dec")),
        _field(0, 7, ("sun", "MON", "Fri", "sat")),
    ),
)


@given(expressions)
def test_every_valid_expression_explains_in_plain_words(text: str) -> None:
    """Whatever the spelling, a valid expression yields one clean English sentence."""
    try:
        CronExpression.parse(text)
    except CronError:
        assume(False)
    sentence = explain(text)
    assert sentence.startswith(("At ", "Every "))
    assert re.fullmatch(r"[A-Za-z0-9:, ]+", sentence), sentence
    assert "  " not in sentence
    assert not re.search(r"\b[Ee]very 1(st)? ", sentence), sentence
    assert ", ," not in sentence
    assert not sentence.endswith((",", " "))


@given(
    st.sets(st.integers(0, 59), min_size=1, max_size=3),
    st.sets(st.integers(0, 23), min_size=1, max_size=3),
)
def test_a_fixed_time_job_lists_exactly_its_times(minutes: set[int], hours: set[int]) -> None:
    """Short lists of plain values read as their times of day, earliest first."""
    assume(not _has_run_of_three(minutes) and not _has_run_of_three(hours))
    text = f"{','.join(map(str, minutes))} {','.join(map(str, hours))} * * *"
    expected = [f"{h:02d}:{m:02d}" for h in sorted(hours) for m in sorted(minutes)]
    assert expected == re.findall(r"\d\d:\d\d", explain(text))


def _has_run_of_three(values: set[int]) -> bool:
    """Three consecutive values read as a range, not as single times."""
    return any(value + 1 in values and value + 2 in values for value in values)
