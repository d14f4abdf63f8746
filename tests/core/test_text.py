"""Cleaning outside text before it is shown: which characters, how they read, the limit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronduit.core.text import UNSAFE, clean


def test_esc_and_nul_become_visible_escapes() -> None:
    """A colour sequence and a NUL read as text, not as commands to the terminal."""
    assert "webhook \\x1b[31mred\\x00" == clean("webhook \x1b[31mred\x00")


@pytest.mark.parametrize(("char", "shown"), [
    ("\n", "\\x0a"), ("\t", "\\x09"), ("\r", "\\x0d"), ("\x7f", "\\x7f"), ("\x9b", "\\x9b"),
    ("\u202e", "\\u202e"), ("\u2066", "\\u2066"), ("\u200f", "\\u200f"), ("\u061c", "\\u061c"),
    ("\u2028", "\\u2028"), ("\ud800", "\\ud800"),
])
def test_each_kind_of_unsafe_character_is_escaped(char: str, shown: str) -> None:
    """C0 (line breaks included), DEL, C1, bidi controls, separators and lone surrogates."""
    assert f"a{shown}b" == clean(f"a{char}b")


def test_ordinary_text_is_kept_as_it_is() -> None:
    """Accents, emoji with their joiners, a no-break space and backslashes are left alone."""
    text = "café 10\u00a0€ 🏳️\u200d🌈 C:\\temp \\x1b"
    assert text == clean(text)


def test_a_long_text_is_cut_at_the_limit_with_an_ellipsis() -> None:
    """The limit counts the ellipsis, so the result is exactly ``limit`` characters."""
    assert "abcd…" == clean("abcdefgh", limit=5)
    assert "abcde" == clean("abcde", limit=5)


def test_an_escape_is_never_cut_in_half() -> None:
    """A cut that would fall inside ``\\x1b`` drops the whole escape."""
    assert "ab…" == clean("ab\x1bcdef", limit=6)
    assert "ab\\x1b…" == clean("ab\x1bcdef", limit=7)


@given(st.text(), st.one_of(st.none(), st.integers(min_value=1, max_value=80)))
def test_cleaned_text_holds_nothing_unsafe_and_keeps_to_its_limit(
        text: str, limit: int | None) -> None:
    """Whatever comes in, nothing unsafe goes out, and never more than the limit."""
    shown = clean(text, limit)
    assert UNSAFE.search(shown) is None
    assert limit is None or len(shown) <= limit
    shown.encode("utf-8")  # no lone surrogate is left to break a log file


@given(st.text())
def test_cleaning_changes_text_exactly_when_it_holds_something_unsafe(text: str) -> None:
    """Text with nothing to clean comes back unchanged, and nothing else does."""
    assert (UNSAFE.search(text) is None) == (text == clean(text))
