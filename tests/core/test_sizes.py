"""Sizes as the config writes them: a whole number and an IEC unit, powers of 1024."""

from __future__ import annotations

import pytest

from cronduit.core.sizes import SIZE_HINT, SizeError, format_size, parse_size


def test_each_unit_is_a_power_of_1024() -> None:
    """KiB, MiB, GiB and TiB are 2**10, 2**20, 2**30 and 2**40 bytes."""
    assert [512 << 10, 64 << 20, 2 << 30, 1 << 40] == [
        parse_size(text) for text in ("512KiB", "64MiB", "2GiB", "1TiB")
    ]


def test_a_number_alone_is_refused_for_having_no_unit() -> None:
    """``1048576`` might mean bytes or mebibytes: the config says which."""
    with pytest.raises(SizeError) as caught:
        parse_size("1048576")
    assert f"{SIZE_HINT}: a number alone has no unit" == str(caught.value)


@pytest.mark.parametrize("text", ["64MB", "64mib", "64 MiB", "64M", "64m"])
def test_a_size_spelled_another_way_is_refused_with_the_spelling_to_use(text: str) -> None:
    """Decimal or lower-case units mean other numbers of bytes to some readers."""
    with pytest.raises(SizeError) as caught:
        parse_size(text)
    assert f"{SIZE_HINT}: spell the unit just so (powers of 1024), with no space" == str(
        caught.value)


@pytest.mark.parametrize("text", ["1.5GiB", "MiB", "", "-1MiB", "64MiB64KiB", "lots"])
def test_what_is_not_a_size_at_all_gets_the_plain_hint(text: str) -> None:
    """Fractions, signs, sums and words are not sizes."""
    with pytest.raises(SizeError) as caught:
        parse_size(text)
    assert SIZE_HINT == str(caught.value)


def test_a_size_is_shown_in_its_largest_whole_unit() -> None:
    """Messages and markers echo a size as a user would write it."""
    assert ["64MiB", "1536KiB", "1TiB", "1000 bytes"] == [
        format_size(size) for size in (64 << 20, 1536 << 10, 1 << 40, 1000)
    ]
