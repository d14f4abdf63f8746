"""Outside text made safe to show: in a label, a log line, a table cell.

Values from outside cronduit (a webhook body, a GitHub payload, an operator's name) may hold
characters that a terminal or a log reader acts on instead of showing: ESC starts sequences
that move the cursor, recolour or clear the screen; NUL makes a log file read as binary; a
line break forges a second log line; Unicode's bidirectional controls reorder what is shown
(the "Trojan Source" trick). :func:`clean` replaces each with a visible escape, spelled as
Python spells it (``\\x1b``, ``\\x00``, ``\\u202e``), so whoever reads the line sees that
something was there, and what. The raw value stays where it is data (a trigger's file);
only what is shown is cleaned.

Replaced (:data:`UNSAFE`): the C0 controls U+0000-U+001F (ESC, NUL, tab and newline
included), DEL U+007F, the C1 controls U+0080-U+009F, Unicode's ``Bidi_Control`` characters
(U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), the line and paragraph separators
U+2028 and U+2029, and lone surrogates (U+D800-U+DFFF, which a JSON body can carry and
which cannot be written as UTF-8 at all). Other invisible characters, such as a no-break
space or a zero-width joiner inside an emoji, drive nothing and are kept.

Free text that cronduit records as given (who asks for a run, a pause or an apply, and why)
is not cleaned but checked: :func:`check_line` is the one rule every operator and reason
field goes through, at every door (CLI options, HTTP bodies, the intake functions), so what
is recorded always prints on one line as it was typed.
"""

from __future__ import annotations

import re
import unicodedata

UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]"
)
"""The characters :func:`clean` replaces: one of them anywhere makes text unsafe to show."""

ELLIPSIS = "…"
"""Marks text cut at its limit."""


def clean(text: str, limit: int | None = None) -> str:
    """``text`` with every :data:`UNSAFE` character shown as its escape (``\\x1b``).

    With ``limit``, the result is at most that many characters: a longer one is cut and
    ends in ``…``, and an escape is never cut in half.
    """
    shown = UNSAFE.sub(_escaped, text)
    if limit is None or len(shown) <= limit:
        return shown
    kept: list[str] = []
    room = limit - len(ELLIPSIS)
    for char in text:
        piece = escape(char) if UNSAFE.match(char) else char
        room -= len(piece)
        if room < 0:
            break
        kept.append(piece)
    return "".join(kept) + ELLIPSIS


def escape(char: str) -> str:
    """One character as Python writes it in a string literal: ``\\x1b``, ``\\u202e``."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escaped(match: re.Match[str]) -> str:
    return escape(match.group())


MAX_OPERATOR = 200
"""Characters an operator's name may have (who asks for a run, a pause, an apply)."""
MAX_REASON = 500
"""Characters a reason may have (why a job is paused): a sentence or two, not a document."""

REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
"""Unicode categories :func:`check_line` refuses: controls (C0, DEL, C1: newlines, tabs,
ESC), format characters (bidirectional controls, zero-width ones), the line and paragraph
separators, and lone surrogates. Every :data:`UNSAFE` character is in one of them."""


class TextError(ValueError):
    """A free-text field (an operator, a reason) that cannot be recorded as given; the
    message names the field and the rule, never the value."""


def check_line(value: str, field: str, limit: int) -> str:
    """``value`` without the spaces around it: not blank, at most ``limit`` characters,
    and one line of printable text (no character of :data:`REFUSED_CATEGORIES`), so it
    prints as typed in a log line, a table cell and the audit log. ``field`` is how the
    caller named it (``operator``, ``--operator``)."""
    text = value.strip(" ")  # spaces only: a line break at either end is refused too
    if not text:
        raise TextError(f"{field}: required, and not blank")
    if len(text) > limit:
        raise TextError(f"{field}: at most {limit} characters, not {len(text)}")
    for char in text:
        if unicodedata.category(char) in REFUSED_CATEGORIES:
            raise TextError(f"{field}: control characters (newlines, tabs, escapes) are "
                            f"refused, and it holds {escape(char)}")
    return text


def check_operator(operator: str, field: str = "operator") -> str:
    """Who asks (see :func:`check_line`), at most :data:`MAX_OPERATOR` characters."""
    return check_line(operator, field, MAX_OPERATOR)


def check_reason(reason: str, field: str = "reason") -> str:
    """Why (see :func:`check_line`), at most :data:`MAX_REASON` characters."""
    return check_line(reason, field, MAX_REASON)
