"""What the HTTP app needs from the daemon, as one small object the tests can build too."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from cronduit.core.config.model import Config
from cronduit.intake.acceptor import Acceptor
from cronduit.ports import Clock, Run, Transaction

T = TypeVar("T")


class Reads(Protocol):
    """Runs a read function in a reading transaction, off the event loop
    (:class:`cronduit.http.reader.Reader`); its answer."""

    def __call__(self, work: Callable[[Transaction], T], /) -> Awaitable[T]: ...


LogBytes = Callable[[Run, int, int], tuple[bytes, int] | None]
"""Attempt N's log of a run on this host from a position in the job's bytes on (holes
skipped, cuts marked), and the position after it; None when this host has no such log."""


def _no_log(run: Run, attempt: int, position: int) -> tuple[bytes, int] | None:
    return None


async def _nowhere(node: str) -> str | None:
    return None


@dataclass
class Gateway:
    """The daemon as the HTTP app sees it."""

    config: Callable[[], Config]
    """The config in force now (it changes on apply)."""
    secret: Callable[[str], str | None]
    """A secret's value by name; None when it is not set."""
    acceptor: Acceptor
    clock: Clock
    dispatching: Callable[[], bool]
    """False in a dry run: triggers are accepted but nothing starts (run-now answers 503)."""
    run_of: Callable[[str, float], Awaitable[str | None]]
    """The run that consumed a delivery, waiting up to the given seconds for the engine to
    route it; None when it is still waiting behind other work."""
    read: Reads
    """The API's reads: a store of their own, never queued behind the acceptor's writes."""
    workspace: Callable[[str], Path | None] = lambda _: None
    """A job's workspace clone, where git can tell whether a commit is in a branch; None
    when the job has no workspace, or no run has made its clone yet."""
    metrics: Callable[[], bytes] = lambda: b""
    """The daemon's metrics in the Prometheus text format, rendered from what the daemon
    keeps (never read from the store by a scrape)."""
    run_folder: Callable[[str], Path | None] = lambda _: None
    """A run's folder on this host (its workspace note, its logs); None: none here."""
    log: LogBytes = _no_log
    """A run's log as this host has it (:data:`LogBytes`)."""
    node: str | None = None
    """This daemon's node, where daemons on many hosts share the state; None: alone."""
    peer: Callable[[str], Awaitable[str | None]] = _nowhere
    """Where the daemon of a node listens, as ``http://HOST:PORT``; None when no live
    daemon of that node says (its log cannot be asked of it)."""
