"""A metric family's exposition text, kept between scrapes and written again only where it
changed, each key's lines from a pattern ``prometheus_client`` wrote once.

With 10,000 jobs a scrape is some 170,000 lines. ``prometheus_client`` writes a line in
several microseconds (it validates and escapes every label name, sorts and escapes every
label set, for every sample): whole, that is a second or more, and even a scrape where
every job changed (every-minute jobs scraped every minute) took 0.7 s. So the lines are not
written sample by sample through it:

* each family's lines for one key are written once through ``prometheus_client``, with
  placeholder label values and values; what it writes becomes the family's pattern
  (:func:`pattern_of`), so the names, suffixes, label order, ``le`` values and layout are
  its own;
* a key's lines are that pattern filled in, once per change of its value: its label values
  escaped as ``prometheus_client`` escapes them (:func:`escaped`), its values written by
  ``prometheus_client``'s own :func:`~prometheus_client.utils.floatToGoString`
  (:func:`written`; :func:`count_written` keeps what it wrote of the counts, which repeat
  from key to key and scrape to scrape);
* between scrapes each key's lines are kept as they were last written, and a scrape writes
  only the keys set since the last one.

This is hand-written only where ``prometheus_client``'s exposition was the slow part:
filling a pattern is one ``%`` a key. ``tests/daemon/test_metrics.py`` holds the
result to what ``prometheus_client`` writes whole, byte for byte, label values needing
escapes included.

Not thread-safe by itself: its owner sets values under one lock (:meth:`KeptFamily.set`,
:meth:`KeptFamily.stale`) and renders under another (:meth:`KeptFamily.write`,
:meth:`KeptFamily.text`), so a value set while a render writes is rendered by the next.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter
from typing import Generic, TypeVar

from prometheus_client import generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

__all__ = ["KeptFamily", "Key", "Pattern", "count_written", "escaped", "pattern_of", "written"]

V = TypeVar("V")
Key = tuple[str, ...]
"""A key of a family: its label values, in the order of the family's label names."""


class _One(Collector):
    """A collector of one family, as ``generate_latest`` takes it."""

    def __init__(self, metric: Metric) -> None:
        self.metric = metric

    def collect(self) -> Iterable[Metric]:
        return [self.metric]


def written(value: float) -> str:
    """A sample's value as ``prometheus_client`` writes it."""
    # (prometheus_client leaves this function unannotated)
    text: str = floatToGoString(value)  # type: ignore[no-untyped-call]
    return text


@lru_cache(maxsize=1 << 14)
def count_written(count: int) -> str:
    """A count as ``prometheus_client`` writes it, kept: a bucket's or a counter's count is
    most often one of a few small numbers, each written again for thousands of keys."""
    return written(count)


@lru_cache(maxsize=1 << 16)
def escaped(value: str) -> str:
    """A label value as ``prometheus_client`` writes it in the text format: backslash,
    newline and double quote escaped (kept, since the same job names come back in every
    family and every change)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


_HOLDER = re.compile("\x00([0-9]+)\x00")


def _holder(index: int) -> str:
    """A placeholder label value, which no escaping changes: found again as it is in the
    text ``prometheus_client`` writes (:data:`_HOLDER`)."""
    return f"\x00{index}\x00"


@dataclass(frozen=True)
class Pattern:
    """One key's lines in a family, to be filled in: ``text % tuple(arguments[at] for at in
    order)``, where the arguments are the key's label values (escaped), then its samples'
    values (written).

    A ``%`` pattern, its arguments picked in the order they come: ``str.format`` would take
    them by number, but it parses its pattern again at every call, twice as slow (the
    pattern of a job's histogram is nine lines, each naming the job)."""

    text: str
    order: tuple[int, ...]
    values: int
    """How many sample values it takes."""


def pattern_of(new: Callable[[], Metric], width: int, add: Callable[[Metric, Key, V], None],
               blank: V) -> Pattern:
    """The pattern of one key's lines in the family ``new`` makes, with ``width`` labels,
    its samples in the order ``add`` adds them.

    Written by ``prometheus_client`` once, for a key of placeholder label values given
    ``blank``; each sample line is ``series value`` (no timestamp), so its value is what
    follows its last space."""
    metric = new()
    add(metric, tuple(_holder(index) for index in range(width)), blank)
    text = generate_latest(_One(metric)).decode()
    lines = text.split("\n")[2:-1]  # the HELP and TYPE lines, the last newline
    if not lines or any(line.startswith("#") for line in lines):
        raise ValueError(f"not one block of samples: {text!r}")
    parts: list[str] = []
    order: list[int] = []
    for at, line in enumerate(lines):
        # Split on the holders: literal text, a label's index, literal text, and so on.
        pieces = _HOLDER.split(line.rsplit(" ", 1)[0])
        for index, piece in enumerate(pieces):
            if index % 2:
                parts.append("%s")
                order.append(int(piece))
            else:
                parts.append(piece.replace("%", "%%"))
        parts.append(" %s\n")
        order.append(width + at)
    return Pattern("".join(parts), tuple(order), len(lines))


class KeptFamily(Generic[V]):
    """One family: a value per key, and each key's lines as last written.

    ``new`` makes the family empty (its name, help, type and ``width`` label names);
    ``add`` adds one key's samples for a value to it, as ``prometheus_client`` would be
    given them; ``samples`` gives the values of those samples, in the same order, written
    as ``prometheus_client`` writes them (:func:`written`, :func:`count_written`); ``blank``
    is any value (the pattern is written with it)."""

    def __init__(self, new: Callable[[], Metric], width: int,
                 add: Callable[[Metric, Key, V], None],
                 samples: Callable[[V], Sequence[str]], blank: V) -> None:
        pattern = pattern_of(new, width, add, blank)
        self._fill = pattern.text.__mod__
        # (itemgetter of one index gives the item, not a tuple of it: a lone "%s" takes it)
        self._pick = itemgetter(*pattern.order)
        self._count = pattern.values
        self._samples = samples
        self.values: dict[Key, V] = {}
        self._stale: dict[Key, None] = {}
        """The keys to write again, in the order they were set (a dict: a set's order would
        scatter a new family's keys)."""
        self._lines: dict[Key, bytes] = {}
        self._head = generate_latest(_One(new()))
        """The family's ``# HELP`` and ``# TYPE`` lines."""
        self._body: bytes | None = self._head

    def set(self, key: Key, value: V) -> None:
        """Give ``key`` a value, to be written at the next :meth:`write`."""
        self.values[key] = value
        self._stale[key] = None

    def drop(self, key: Key) -> None:
        """Take ``key`` out of the family."""
        if self.values.pop(key, None) is not None or key in self._lines:
            self._stale[key] = None

    def replace(self, values: Mapping[Key, V]) -> None:
        """Make the family hold ``values`` exactly: only keys whose value differs from the
        one held become stale (a reading of the gauges, most of them unchanged)."""
        held = self.values
        for key, value in values.items():
            if key not in held or held[key] != value:
                self.set(key, value)
        if len(held) != len(values):  # then some held key is not in values
            for key in [key for key in held if key not in values]:
                self.drop(key)

    @property
    def pending(self) -> int:
        """How many keys are set or dropped since the last :meth:`stale`."""
        return len(self._stale)

    def stale(self) -> list[tuple[Key, V | None]]:
        """The keys set or dropped since the last call, each with its value now (None:
        dropped); they are no longer stale."""
        taken = [(key, self.values.get(key)) for key in self._stale]
        self._stale.clear()
        return taken

    def write(self, changes: list[tuple[Key, V | None]]) -> int:
        """Write the lines of the keys of :meth:`stale` and keep them; the number of keys
        written."""
        if not changes:
            return 0
        fill, pick, samples, lines = self._fill, self._pick, self._samples, self._lines
        count = 0
        for key, value in changes:
            if value is None:
                lines.pop(key, None)
                continue
            values = samples(value)
            if len(values) != self._count:
                raise ValueError(f"{len(values)} sample values for {self._count} lines")
            lines[key] = fill(pick((*map(escaped, key), *values))).encode()
            count += 1
        self._body = None
        return count

    def text(self) -> bytes:
        """The family's text: its header and every key's lines."""
        if self._body is None:
            self._body = b"".join([self._head, *self._lines.values()])  # one copy, not two
        return self._body
