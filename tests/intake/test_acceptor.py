"""The acceptor's group commit and its refusals while the state folder cannot be written.

The store is a real SQLite file; only its commits are made to fail, the way a full or
read-only disk fails them, so what a test sees written is what the disk would hold.
"""

from __future__ import annotations

import asyncio
import errno
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from cronduit.intake.acceptor import RETRY_AFTER, Acceptor
from cronduit.intake.refusals import RequestRefused
from cronduit.ports import Transaction
from cronduit.store.sqlite import SqliteStore

DISK_FULL = sqlite3.OperationalError("database or disk is full")
READ_ONLY = OSError(errno.EROFS, "Read-only file system")
REFUSED = ("state store unavailable: database or disk is full; nothing was accepted, try "
           "again later")
BEGINS = "refusing triggers with 503: state store unavailable: database or disk is full"
ENDS = re.compile(r"accepting triggers again after [0-9]+\.[0-9]s")


class FaultyStore:
    """A real store whose commits fail with :attr:`fault` while it is set: the fault is
    raised inside the transaction, so the store rolls back what the block wrote."""

    def __init__(self, path: Path) -> None:
        self.store = SqliteStore(path, migrate=False)
        self.fault: BaseException | None = None
        self.commits = 0

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        with self.store.transaction() as tx:
            yield tx
            if self.fault is not None:
                raise self.fault
        self.commits += 1

    def close(self) -> None:
        self.store.close()


class Doors:
    """An acceptor over a :class:`FaultyStore`, with what it logged and how often it woke
    the engine."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "cronduit.db"
        SqliteStore(self.path).close()  # the schema, as the daemon makes it before serving
        self.store = FaultyStore(self.path)
        self.lines: list[str] = []
        self.wakes = 0
        self.acceptor = Acceptor(lambda: self.store, self._woken, self.lines.append)

    def _woken(self) -> None:
        self.wakes += 1

    def stored(self, key: str) -> str | None:
        """What a commit left under ``key``, read on a connection of the test's own."""
        store = SqliteStore(self.path, migrate=False)
        try:
            with store.transaction() as tx:
                return tx.get_meta(key)
        finally:
            store.close()


@pytest.fixture
def doors(tmp_path: Path) -> Iterator[Doors]:
    made = Doors(tmp_path)
    yield made
    made.acceptor.close()


def write(key: str, value: str = "accepted") -> Callable[[Transaction], str]:
    """A request's write: one value under ``key``; its result is the value."""
    def work(tx: Transaction) -> str:
        tx.set_meta(key, value)
        return value
    return work


def refuse(status: int) -> Callable[[Transaction], Any]:
    """A request refused by its own rule before it wrote anything."""
    def work(_: Transaction) -> Any:
        raise RequestRefused(status, "refused by its own rule")
    return work


async def answers(acceptor: Acceptor, *works: Callable[[Transaction], Any]) -> list[Any]:
    """Submit ``works`` together (so they share a batch); each one's result or exception."""
    return list(await asyncio.gather(*(acceptor.submit(work) for work in works),
                                     return_exceptions=True))


def test_requests_submitted_together_share_one_commit(doors: Doors) -> None:
    """Ten requests that arrive while none is committing are written by one commit, and
    the engine is woken once for them."""
    results = asyncio.run(answers(doors.acceptor, *(write(f"k{n}", f"v{n}") for n in range(10))))
    assert ([f"v{n}" for n in range(10)], 1, 1) == (results, doors.store.commits, doors.wakes)
    assert "v9" == doors.stored("k9")


def test_a_commit_the_state_folder_refuses_answers_every_request_503_and_writes_nothing(
        doors: Doors) -> None:
    """Every request of the batch hears 503 with the reason and a Retry-After; none of its
    writes is on disk, and the engine is not woken for them."""
    doors.store.fault = DISK_FULL
    results = asyncio.run(answers(doors.acceptor, write("a"), write("b")))
    assert [(503, REFUSED, RETRY_AFTER)] * 2 == [
        (error.status, str(error), error.retry_after) for error in results]
    assert (None, None, 0) == (doors.stored("a"), doors.stored("b"), doors.wakes)


def test_the_log_has_one_line_as_refusals_begin_and_one_as_they_end(doors: Doors) -> None:
    """However many requests are refused in a row, the log gets the line that says they
    began, then the one that says a commit went through again."""
    async def outage_then_recovery() -> list[Any]:
        doors.store.fault = DISK_FULL
        refused = [await answers(doors.acceptor, write(f"k{n}")) for n in range(3)]
        doors.store.fault = None
        return [*refused, await answers(doors.acceptor, write("after"))]

    results = asyncio.run(outage_then_recovery())
    assert [503, 503, 503] == [error.status for [error] in results[:3]]
    assert ["accepted"] == results[3]
    assert (BEGINS, True) == (doors.lines[0], bool(ENDS.fullmatch(doors.lines[1])))
    assert 2 == len(doors.lines)


def test_a_new_reason_during_the_outage_gets_a_line_of_its_own(doors: Doors) -> None:
    """A full disk that turns read-only says so once; going back to a reason already given
    says nothing."""
    async def reasons() -> None:
        for fault in (DISK_FULL, READ_ONLY, DISK_FULL, READ_ONLY):
            doors.store.fault = fault
            await answers(doors.acceptor, write("k"))

    asyncio.run(reasons())
    assert [BEGINS, "still refusing triggers with 503, now: Read-only file system"
            ] == doors.lines


def test_once_commits_go_through_again_the_request_is_accepted_and_the_engine_woken(
        doors: Doors) -> None:
    """The request asked again after a 503, as Retry-After says, is written and answered
    with its result; the engine hears of it."""
    async def ask_twice() -> tuple[list[Any], list[Any]]:
        doors.store.fault = DISK_FULL
        first = await answers(doors.acceptor, write("key"))
        doors.store.fault = None
        return first, await answers(doors.acceptor, write("key"))

    first, again = asyncio.run(ask_twice())
    assert (503, ["accepted"], "accepted", 1) == (
        first[0].status, again, doors.stored("key"), doors.wakes)


def test_a_batch_that_wrote_nothing_does_not_end_the_outage(doors: Doors) -> None:
    """A request refused by its own rule (409: a run going) commits nothing, so it says
    nothing about the disk: the outage goes on until a request is written."""
    async def refused_then_written() -> list[str]:
        doors.store.fault = DISK_FULL
        await answers(doors.acceptor, write("k"))
        doors.store.fault = None
        [busy] = await answers(doors.acceptor, refuse(409))
        seen = [*doors.lines, f"answered {busy.status}"]
        await answers(doors.acceptor, write("k"))
        return seen

    assert [BEGINS, "answered 409"] == asyncio.run(refused_then_written())
    assert (2, True) == (len(doors.lines), bool(ENDS.fullmatch(doors.lines[-1])))


def test_a_store_that_cannot_be_opened_is_an_outage_too(doors: Doors) -> None:
    """The acceptor opens its connection at the first commit; a state folder that cannot
    open it refuses with 503, and the next request opens it and is accepted."""
    opened: list[FaultyStore] = []

    def open_store() -> FaultyStore:
        if not opened:
            opened.append(doors.store)
            raise OSError(errno.ENOSPC, "No space left on device", str(doors.path))
        return doors.store

    acceptor = Acceptor(open_store, lambda: None, doors.lines.append)
    try:
        async def twice() -> list[Any]:
            return [*await answers(acceptor, write("k")), *await answers(acceptor, write("k"))]

        first, second = asyncio.run(twice())
    finally:
        acceptor.close()
    assert ((503, "state store unavailable: No space left on device; nothing was accepted, "
                  "try again later"), "accepted") == ((first.status, str(first)), second)
    assert "refusing triggers with 503: state store unavailable: No space left on device" == (
        doors.lines[0])


def test_a_request_that_fails_on_its_own_fails_alone(doors: Doors) -> None:
    """An unexpected error of one request rolls the batch back; each is then committed on
    its own, so the others are still accepted and only that one hears its error."""
    def broken(_: Transaction) -> None:
        raise LookupError("a bug in one door")

    results = asyncio.run(answers(doors.acceptor, write("a"), broken, write("b")))
    assert ("accepted", "a bug in one door", "accepted") == (
        results[0], str(results[1]), results[2])
    assert ("accepted", "accepted", []) == (doors.stored("a"), doors.stored("b"), doors.lines)


def test_a_disk_that_fails_while_requests_are_committed_one_by_one_refuses_only_those(
        doors: Doors) -> None:
    """The batch is retried request by request after one request's own error; a disk that
    fails during those commits is answered 503 for each request it refuses."""
    def broken(_: Transaction) -> None:
        doors.store.fault = DISK_FULL  # from here on, every commit fails
        raise LookupError("a bug in one door")

    results = asyncio.run(answers(doors.acceptor, broken, write("b")))
    assert (LookupError, 503) == (type(results[0]), results[1].status)
    assert None is doors.stored("b")


def test_a_client_that_went_away_keeps_its_write(doors: Doors) -> None:
    """A request cancelled before its answer is still written: a 202 it never read cannot
    be taken back, and a retry of it is answered from what is stored. The batch after it
    is answered as ever."""
    async def leave_early() -> list[Any]:
        gone = asyncio.ensure_future(doors.acceptor.submit(write("gone")))
        await asyncio.sleep(0)  # queued, its batch started
        gone.cancel()
        return await asyncio.wait_for(answers(doors.acceptor, write("later")), 10)

    assert ["accepted"] == asyncio.run(leave_early())
    assert ("accepted", "accepted") == (doors.stored("gone"), doors.stored("later"))
