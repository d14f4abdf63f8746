"""How deeply a JSON text nests, told without parsing it, so a hostile document is refused
before a recursive parser meets it.

Python's ``json`` module (and most parsers) descends once per ``[`` or ``{``; about a
thousand of them exhaust the interpreter's stack, and the parse dies with ``RecursionError``
instead of a ``ValueError``. Every JSON text cronduit reads from outside (a webhook's body,
a GitHub delivery, an API request, an answer from GitHub's API) is first measured here: the
depth is the deepest nesting of arrays and objects, counted outside strings, in one linear
pass, and a text deeper than :data:`MAX_JSON_DEPTH` is refused whole.

The count agrees with the parsed value's depth for every valid document, and for any other
text it is at least as deep as a parser gets before it fails, so a text that passes cannot
take a parser deeper than the limit. What cronduit keeps of an accepted document (a
webhook's inputs and its body as a string, a delivery's facts) nests a few levels at most,
so nothing read back later (a trigger file, a run record, the audit log) can go deep.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate

MAX_JSON_DEPTH = 64
"""Arrays and objects one inside another that a JSON text cronduit reads may hold. Real
payloads nest far less (a GitHub delivery fewer than ten levels); Python's parser would fail
near a thousand."""

# A string, from its opening quote to its closing one, or to the end of the text when it has
# none. Possessive, and always matching at a quote: a single left-to-right pass with no
# backtracking, whatever the text holds.
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
"""Opening brackets as +1, closing ones as -1 (0xff read as a signed byte)."""
_OPENS_CONTAINER = re.compile(r"[ \t\n\r]*[\[{]")
"""A text whose first token (after JSON's whitespace) opens an array or an object."""
_CHUNK = 1 << 16
"""Brackets counted between two looks at whether the limit is passed."""


class JsonTooDeep(ValueError):
    """A JSON text nested deeper than the limit; the message names the field and the limit,
    never the text."""


def json_depth(text: str, *, stop_above: int | None = None) -> int:
    """The deepest nesting of arrays and objects in ``text``, brackets inside strings not
    counted: 0 for a scalar, 1 for ``[]`` or ``{"a": 1}``, 2 for ``[[]]``.

    With ``stop_above``, counting stops soon after the nesting first goes deeper than that
    (the answer is then some depth past it), so a huge hostile text costs little."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    steps = memoryview(brackets.encode("ascii").translate(_STEPS)).cast("b")
    depth = deepest = 0
    for start in range(0, len(steps), _CHUNK):
        levels = list(accumulate(steps[start:start + _CHUNK], initial=depth))
        peak = max(levels)
        depth, deepest = levels[-1], max(deepest, peak)
        if stop_above is not None and deepest > stop_above:
            break
    return deepest


def check_json_depth(text: str, field: str, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`JsonTooDeep` when ``text`` nests deeper than ``limit``.

    Only a text that opens with an array or an object can take a parser down at all (after
    a scalar, a parser stops at the first thing that follows), so any other text passes
    whatever brackets it holds: a plain-text body full of ``[`` is not JSON to refuse."""
    if text.count("[") + text.count("{") <= limit:  # the common case, at C speed
        return
    if not _OPENS_CONTAINER.match(text):
        return
    if json_depth(text, stop_above=limit) > limit:
        raise JsonTooDeep(f"{field}: JSON nested more than {limit} levels deep (arrays and "
                          f"objects inside one another); at most {limit} are read")


def loads(data: bytes | str, field: str, limit: int = MAX_JSON_DEPTH) -> object:
    """``json.loads(data)``, refusing a text deeper than ``limit`` before parsing it.

    Bytes are decoded as ``json.loads`` decodes them (UTF-8, or UTF-16/32 by their first
    bytes), so what is measured is what would be parsed. Raises ``ValueError`` for text that
    is not JSON (:class:`JsonTooDeep` for one too deep), never anything else.
    """
    text = data.decode(json.detect_encoding(data), "surrogatepass") if isinstance(
        data, bytes) else data
    check_json_depth(text, field, limit)
    return json.loads(text)
