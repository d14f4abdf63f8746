"""Group commit for requests: the writes of many concurrent requests in one durable commit.

A webhook is answered 202 only after its event is committed, and a commit waits for the
disk (an fsync, milliseconds here). One commit per request would cap acceptance at the
disk's fsync rate; instead, requests queue their small write functions, and one worker
commits everything queued so far in a single transaction, then answers them all. Under load
the batches grow by themselves; an idle server still commits a lone request at once.

The worker owns its own store connection on its own thread, so the event loop keeps reading
requests (and the engine keeps firing) while a commit waits for the disk.

A commit the state folder refuses (a full or read-only disk) accepted nothing: each request
of the batch is answered 503 with the reason, never 202, and the log gets one line when the
refusals begin and one when a commit succeeds again (:mod:`cronduit.core.outage`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from cronduit.core import outage
from cronduit.faults import reason_of
from cronduit.intake.refusals import RequestRefused
from cronduit.ports import Store, Transaction

T = TypeVar("T")
Work = Callable[[Transaction], Any]
RETRY_AFTER = 5
"""Seconds a 503 tells the caller to wait before trying again (``Retry-After``)."""


def unavailable(reason: str) -> RequestRefused:
    """The answer to a request whose commit the state folder refused: 503, the reason."""
    return RequestRefused(503, f"state store unavailable: {reason}; nothing was accepted, "
                               "try again later", retry_after=RETRY_AFTER)


class Acceptor:
    """Commits queued request writes in batches; :meth:`submit` returns once durable."""

    def __init__(self, open_store: Callable[[], Store], on_commit: Callable[[], None],
                 log: Callable[[str], None] = lambda _: None) -> None:
        self._open_store = open_store
        self._on_commit = on_commit
        """Called on the loop after each commit that wrote something (wakes the engine)."""
        self._log = log
        self._outage: outage.Outage | None = None
        self._store: Store | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cronduit-accept")
        self._pending: list[tuple[Work, asyncio.Future[Any]]] = []
        self._draining = False
        self._drainer: asyncio.Task[None] | None = None

    async def submit(self, work: Callable[[Transaction], T]) -> T:
        """Run ``work`` inside the next batch's transaction; its result once committed.

        ``work`` either writes and returns, or raises :class:`RequestRefused` having written
        nothing; that refusal is raised here and the rest of the batch commits.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._pending.append((work, future))
        if not self._draining:
            self._draining = True
            self._drainer = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    results = await loop.run_in_executor(self._thread, self._commit, batch)
                except Exception as error:  # the store itself failed: every request hears it
                    reason = reason_of(error)
                    if reason is not None:
                        self._refused(reason, loop.time())
                        error = unavailable(reason)
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(error)
                    continue
                if any(ok for ok, _ in results):  # a commit that wrote: the disk takes writes
                    self._accepting(loop.time())
                for (_, future), (ok, value) in zip(batch, results, strict=True):
                    if future.done():  # the client went away; its write stands
                        continue
                    if ok:
                        future.set_result(value)
                    else:
                        future.set_exception(value)
                if any(ok for ok, _ in results):
                    self._on_commit()
        finally:
            self._draining = False

    def _refused(self, reason: str, at: float) -> None:
        step = outage.failed(self._outage, reason, at, outage.ACCEPTOR)
        self._outage = step.outage
        if step.line is not None:
            self._log(step.line)

    def _accepting(self, at: float) -> None:
        step = outage.succeeded(self._outage, at, outage.ACCEPTOR)
        self._outage = step.outage
        if step.line is not None:
            self._log(step.line)

    def _commit(self, batch: list[tuple[Work, asyncio.Future[Any]]]) -> list[tuple[bool, Any]]:
        """Commit the batch; raises what the store raised when the state folder refused it
        (nothing of the batch was written, so none of it can be answered as accepted)."""
        if self._store is None:
            self._store = self._open_store()
        try:
            with self._store.transaction() as tx:
                return [self._one(work, tx) for work, _ in batch]
        except Exception as error:
            if reason_of(error) is not None:
                raise  # the disk's fault, not one request's: none of them is accepted
            if len(batch) == 1:
                return [(False, error)]
        # One request's unexpected failure rolled the batch back: commit each on its own, so
        # it fails alone and the others are still accepted.
        return [self._commit_alone(item) for item in batch]

    def _commit_alone(self, item: tuple[Work, asyncio.Future[Any]]) -> tuple[bool, Any]:
        try:
            return self._commit([item])[0]
        except Exception as error:  # the disk failed now: this one alone hears it
            reason = reason_of(error)
            if reason is None:
                raise
            return False, unavailable(reason)

    @staticmethod
    def _one(work: Work, tx: Transaction) -> tuple[bool, Any]:
        try:
            return True, work(tx)
        except RequestRefused as refused:  # decided before writing: the batch stays good
            return False, refused

    def close(self) -> None:
        """Finish the batch under way and close the worker's connection."""
        self._thread.submit(self._close_store).result()
        self._thread.shutdown(wait=True)

    def _close_store(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
