"""The secrets file's format: ``NAME=value`` lines, read strictly, from bytes to values.

The edge (:mod:`cronduit.secrets`) opens the file and hands its bytes here. A line is one
of:

- blank, or a comment (its first non-blank character is ``#``): skipped;
- ``NAME=value`` or ``export NAME=value``: ``NAME`` is letters, digits and ``_``, not
  starting with a digit (as the config's secret names are); the value is everything after
  the first ``=``, spaces around it dropped, and one pair of matching quotes around it
  (``'…'`` or ``"…"``) removed. A name given twice keeps its last value.

Anything else is an error naming the line, never its text: a line of a secrets file may be
a secret pasted on its own. So is a file that is not UTF-8, or that holds a NUL character
(no environment variable can carry one, so a run would fail to launch). Lines end at
``\\n``, ``\\r\\n`` or ``\\r``, as an editor counts them; a UTF-8 byte order mark at the start
is allowed.
"""

from __future__ import annotations

import re

MAX_SECRETS_FILE = 1024 * 1024
"""Bytes a secrets file may hold: room for thousands of secrets, and a bound on what is
read when the setting names the wrong file."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"


class SecretsFileError(ValueError):
    """A secrets file that cannot be read as given. ``line`` is the 1-based line at fault
    (None for the file as a whole); the message says what is wrong, never what the line
    holds."""

    def __init__(self, line: int | None, problem: str) -> None:
        super().__init__(problem)
        self.line = line
        self.problem = problem


def parse_secrets(data: bytes) -> dict[str, str]:
    """Every ``NAME: value`` of the file's bytes ``data``, or :class:`SecretsFileError` for
    the first line that breaks the format."""
    if len(data) > MAX_SECRETS_FILE:
        raise SecretsFileError(None, f"larger than {MAX_SECRETS_FILE:,} bytes: not a secrets "
                                     "file")
    text = _decoded(data.removeprefix(_BOM))
    values: dict[str, str] = {}
    for number, line in enumerate(_LINE_BREAK.split(text), start=1):
        entry = _entry(line, number)
        if entry is not None:
            values[entry[0]] = entry[1]
    return values


def _decoded(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = len(_LINE_BREAK.findall(data[:error.start].decode("utf-8", "replace"))) + 1
        raise SecretsFileError(line, "not UTF-8 text") from None
    if "\x00" in text:
        line = len(_LINE_BREAK.findall(text[:text.index("\x00")])) + 1
        raise SecretsFileError(line, "holds a NUL character, which no environment variable "
                                     "can carry")
    return text


def _entry(line: str, number: int) -> tuple[str, str] | None:
    """The name and value of one line; None for a blank line or a comment."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    name, equals, value = stripped.partition("=")
    if not equals:
        raise SecretsFileError(number, "not NAME=value: the line has no '='")
    name = name.strip()
    if name.startswith("export ") or name.startswith("export\t"):
        name = name[len("export"):].strip()
    if not _NAME.fullmatch(name):
        raise SecretsFileError(number, "the name before '=' must be letters, digits and _, "
                                       "not starting with a digit")
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return name, value
