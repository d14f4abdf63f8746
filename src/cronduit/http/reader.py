"""The API's reads: run on a worker thread of their own, over a store connection of their own,
each in a reading transaction (:meth:`cronduit.ports.Store.reading`).

Reads never queue behind the acceptor's group commits, nor hold the daemon's writer up, and
the event loop goes on serving webhooks while one waits for the database. A store that
cannot be read (a database away, a broken file) answers 503 with the reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from cronduit.faults import reason_of
from cronduit.intake import RequestRefused
from cronduit.ports import Store, Transaction

T = TypeVar("T")
RETRY_AFTER = 5
"""Seconds a 503 tells the caller to wait before reading again (``Retry-After``)."""


class Reader:
    """Runs read functions on its own thread and store; :meth:`read` is awaited."""

    def __init__(self, open_store: Callable[[], Store]) -> None:
        self._open_store = open_store
        self._store: Store | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cronduit-read")

    async def read(self, work: Callable[[Transaction], T]) -> T:
        """``work``'s answer, read in one reading transaction."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._read, work)

    def _read(self, work: Callable[[Transaction], T]) -> T:
        try:
            if self._store is None:
                self._store = self._open_store()
            with self._store.reading() as tx:
                return work(tx)
        except RequestRefused:
            raise
        except Exception as error:
            reason = reason_of(error)
            if reason is None:
                raise
            raise RequestRefused(503, f"state store unavailable: {reason}; try again later",
                                 retry_after=RETRY_AFTER) from None

    def close(self) -> None:
        """Finish the read under way and close the connection."""
        self._thread.submit(self._close_store).result()
        self._thread.shutdown(wait=True)

    def _close_store(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
