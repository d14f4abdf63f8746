"""Run ids sort by the time they were made and never repeat within one generator."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from cronduit.core.run_ids import RunIds

AT = datetime(2026, 12, 1, 14, 0, tzinfo=UTC)


def test_an_id_is_twenty_hex_digits_led_by_the_milliseconds() -> None:
    """The first eleven digits are the milliseconds since the epoch, in hex."""
    made = RunIds().next(AT, 0xABC)
    assert len(made) == 20
    assert int(made, 16) >= 0
    assert int(made[:11], 16) == int(AT.timestamp() * 1000)
    assert made[11:] == "000000abc"


def test_ids_of_one_millisecond_count_up_from_the_random_start() -> None:
    """A second id in the same millisecond is the first plus one, whatever its randomness."""
    ids = RunIds()
    first, second = ids.next(AT, 41), ids.next(AT, 7)
    assert int(second, 16) == int(first, 16) + 1


def test_a_clock_stepped_back_still_gives_larger_ids() -> None:
    """Ids keep increasing when the wall clock goes back an hour."""
    ids = RunIds()
    first = ids.next(AT, 5)
    assert ids.next(AT - timedelta(hours=1), 999) > first


def test_a_full_millisecond_borrows_the_next() -> None:
    """After 2**36 ids in one millisecond the count moves to the next one."""
    ids = RunIds()
    last = ids.next(AT, 2**36 - 1)
    after = ids.next(AT, 3)
    assert after > last
    assert int(after[:11], 16) == int(last[:11], 16) + 1


@given(st.lists(st.tuples(st.integers(-10**6, 10**6), st.integers(0, 2**36 - 1)),
                min_size=2, max_size=200))
def test_ids_strictly_increase_and_sort_as_numbers(steps: list[tuple[int, int]]) -> None:
    """Any sequence of instants (forward, equal or back) gives strictly increasing ids,
    which as text sort the same way as numbers (fixed width)."""
    ids = RunIds()
    made = [ids.next(AT + timedelta(milliseconds=shift), bits) for shift, bits in steps]
    assert made == sorted(made)
    assert len(set(made)) == len(made)
    assert all(len(one) == 20 for one in made)
