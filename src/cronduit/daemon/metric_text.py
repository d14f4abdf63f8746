"""A metric family's exposition text, kept between scrapes and re-rendered only where it
changed.

With 10,000 jobs a scrape is some 170,000 lines, and ``prometheus_client`` writes them at
several microseconds a line: rendered whole, every scrape would take a second or more, while
between two scrapes only the jobs that ran or whose gauges moved have new values. So each
family keeps its values and the text of each key (a job, or a job's label set), and a
render writes through ``prometheus_client`` only the keys set since the last one, all of
them in one family in one call; the others' text is reused as it was written. Every line
served is ``prometheus_client``'s own.

Not thread-safe by itself: its owner sets values under one lock (:meth:`KeptFamily.set`,
:meth:`KeptFamily.stale`) and renders under another (:meth:`KeptFamily.write`,
:meth:`KeptFamily.text`), so a value set while a render writes is rendered by the next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Generic, TypeVar

from prometheus_client import generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

__all__ = ["KeptFamily"]

K = TypeVar("K")
V = TypeVar("V")


class _One(Collector):
    """A collector of one family, as ``generate_latest`` takes it."""

    def __init__(self, metric: Metric) -> None:
        self.metric = metric

    def collect(self) -> Iterable[Metric]:
        return [self.metric]


class KeptFamily(Generic[K, V]):
    """One family: a value per key, and each key's lines as last rendered.

    ``new`` makes the family empty (its name, help, type and label names); ``add`` adds one
    key's samples for a value to it."""

    def __init__(self, new: Callable[[], Metric], add: Callable[[Metric, K, V], None]) -> None:
        self._new = new
        self._add = add
        self.values: dict[K, V] = {}
        self._stale: dict[K, None] = {}
        """The keys to render again, in the order they were set (a dict: a set's order would
        scatter a new family's keys)."""
        self._lines: dict[K, bytes] = {}
        self._head = generate_latest(_One(new()))
        """The family's ``# HELP`` and ``# TYPE`` lines."""
        self._body: bytes | None = self._head

    def set(self, key: K, value: V) -> None:
        """Give ``key`` a value, to be rendered at the next :meth:`write`."""
        self.values[key] = value
        self._stale[key] = None

    def drop(self, key: K) -> None:
        """Take ``key`` out of the family."""
        if self.values.pop(key, None) is not None or key in self._lines:
            self._stale[key] = None

    def replace(self, values: Mapping[K, V]) -> None:
        """Make the family hold ``values`` exactly: only keys whose value differs from the
        one held become stale (a reading of the gauges, most of them unchanged)."""
        for key, value in values.items():
            if key not in self.values or self.values[key] != value:
                self.set(key, value)
        for key in [key for key in self.values if key not in values]:
            self.drop(key)

    def stale(self) -> list[tuple[K, V | None]]:
        """The keys set or dropped since the last call, each with its value now (None:
        dropped); they are no longer stale."""
        taken = [(key, self.values.get(key)) for key in self._stale]
        self._stale.clear()
        return taken

    def write(self, changes: list[tuple[K, V | None]]) -> int:
        """Render the keys of :meth:`stale`, all in one ``prometheus_client`` call, and keep
        each key's lines; the number of keys rendered."""
        if not changes:
            return 0
        metric = self._new()
        counts: list[tuple[K, int]] = []
        for key, value in changes:
            if value is None:
                self._lines.pop(key, None)
                continue
            before = len(metric.samples)
            self._add(metric, key, value)
            counts.append((key, len(metric.samples) - before))
        # One line per sample (prometheus_client escapes a newline in a label value), after
        # the two header lines; the text ends with a newline, hence the last empty piece.
        lines = generate_latest(_One(metric)).split(b"\n")[2:]
        at = 0
        for key, count in counts:
            self._lines[key] = b"".join(line + b"\n" for line in lines[at:at + count])
            at += count
        self._body = None
        return len(counts)

    def text(self) -> bytes:
        """The family's text: its header and every key's lines."""
        if self._body is None:
            self._body = self._head + b"".join(self._lines.values())
        return self._body
