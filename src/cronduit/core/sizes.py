"""Sizes as written in the config: ``512KiB``, ``64MiB``, ``2GiB``, ``1TiB``.

A size is held as a whole number of bytes. Units are powers of 1024, spelled as the IEC
does (``MiB``, not ``MB`` or ``mb``): a size that means a different number of bytes to
different readers is a size someone gets wrong.
"""

from __future__ import annotations

import re

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
TiB = 1 << 40

_UNIT_BYTES = {"TiB": TiB, "GiB": GiB, "MiB": MiB, "KiB": KiB}
_SIZE = re.compile(r"([0-9]{1,16})(KiB|MiB|GiB|TiB)")
_LOOSE = re.compile(r"[0-9]+ ?[kmgtKMGT]i?[bB]?", re.ASCII)
"""``64MB``, ``64 mib``, ``64M``: a size meant, in another spelling."""
SIZE_HINT = ("must be a size such as 512KiB, 64MiB or 2GiB "
             "(a whole number; units KiB, MiB, GiB, TiB)")


class SizeError(ValueError):
    """A size string that does not follow the ``<whole number><unit>`` form."""


def parse_size(text: str) -> int:
    """The number of bytes ``text`` names: a whole number and one unit, ``64MiB``."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise SizeError(_why_not(text))
    return int(match[1]) * _UNIT_BYTES[match[2]]


def _why_not(text: str) -> str:
    if text.isdigit():
        return f"{SIZE_HINT}: a number alone has no unit"
    if _LOOSE.fullmatch(text):
        return f"{SIZE_HINT}: spell the unit just so (powers of 1024), with no space"
    return SIZE_HINT


def format_size(size: int) -> str:
    """The config spelling of ``size`` in its largest whole unit (``64MiB``), else bytes."""
    for unit, unit_bytes in _UNIT_BYTES.items():
        if size and size % unit_bytes == 0:
            return f"{size // unit_bytes}{unit}"
    return f"{size} bytes"
