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
"""

from __future__ import annotations

import re

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
