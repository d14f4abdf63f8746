"""Cleaning outside text before it is shown: which characters, how they read, the limit; and
the one rule every operator and reason field is held to."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronduit.core.text import (
    MAX_OPERATOR,
    MAX_REASON,
    UNSAFE,
    TextError,
    check_line,
    check_operator,
    check_reason,
    clean,
)


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


@pytest.mark.parametrize(("value", "says"), [
    ("", "required"), ("   ", "required"),
    ("ana\nINFO forged line", "control characters"), ("ana\r", "holds \\x0d"),
    ("\x1b[31mana", "holds \\x1b"), ("ana\u2028bo", "holds \\u2028"),
    ("ana\u2029", "holds \\u2029"), ("a\tb", "holds \\x09"), ("a\x00b", "holds \\x00"),
    ("a\x85b", "holds \\x85"), ("\u202eana", "holds \\u202e"), ("a\ud800", "holds \\ud800"),
    ("x" * (MAX_OPERATOR + 1), "at most 200 characters, not 201"),
])
def test_an_operator_that_would_not_print_on_one_line_is_refused(value: str, says: str) -> None:
    """Blank, line breaks, ESC, separators, bidi controls, lone surrogates, too long."""
    with pytest.raises(TextError, match=re.escape(says)) as refused:
        check_operator(value)
    assert str(refused.value).startswith("operator: ")


def test_the_message_names_the_field_the_caller_gave_and_never_the_value() -> None:
    """The CLI says ``--operator``; the value (it could be anything) is not echoed."""
    with pytest.raises(TextError) as refused:
        check_operator("secret-ish\nvalue", "--operator")
    assert str(refused.value).startswith("--operator: ")
    assert "secret-ish" not in str(refused.value)


def test_a_reason_has_its_own_limit_and_the_same_rule() -> None:
    assert "x" * MAX_REASON == check_reason("x" * MAX_REASON)
    with pytest.raises(TextError, match="at most 500"):
        check_reason("x" * (MAX_REASON + 1))
    with pytest.raises(TextError, match=r"^reason: control characters"):
        check_reason("disk\nfull")


def test_a_value_is_kept_without_surrounding_spaces_and_otherwise_as_typed() -> None:
    """Accents and a no-break space are kept; only spaces at the ends are stripped, and a
    line break at an end is refused like one inside (it is not a space)."""
    assert "Ana Lúcia\u00a0M" == check_operator("  Ana Lúcia\u00a0M ")
    with pytest.raises(TextError):
        check_operator("ana\n")


@given(st.text(max_size=40))
def test_what_the_rule_accepts_is_already_clean(text: str) -> None:
    """Anything accepted shows unchanged wherever it is cleaned: the rule is stricter."""
    try:
        kept = check_line(text, "operator", 200)
    except TextError:
        return
    assert kept == clean(kept)
    assert 1 == len(kept.splitlines())
