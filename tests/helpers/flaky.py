"""A real store whose commits fail when a test says, as they do on a full disk."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from cronduit.ports import Transaction
from cronduit.store.sqlite import SqliteStore

FULL = "database or disk is full"


class FlakyStore:
    """A real store whose commits fail, as on a full disk, when the test says: the
    transaction's body runs, then its commit fails and it is rolled back."""

    def __init__(self, inner: SqliteStore) -> None:
        self.inner = inner
        self._commits = 0
        self._failing: set[int] = set()
        self.down = False
        """While set, every commit fails."""
        self.failed = 0
        """How many commits failed."""

    def fail(self, *which: int) -> None:
        """Fail the commits numbered ``which`` from now on (0: the next one)."""
        self._failing = {self._commits + n for n in which}

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        with self.inner.transaction() as tx:
            yield tx
            self._commits += 1
            if self.down or self._commits - 1 in self._failing:
                self.failed += 1
                raise sqlite3.OperationalError(FULL)

    def close(self) -> None:
        self.inner.close()
