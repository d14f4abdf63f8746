"""What the HTTP app needs from the daemon, as one small object the tests can build too."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from cronduit.core.config.model import Config
from cronduit.intake.acceptor import Acceptor
from cronduit.ports import Clock


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
    workspace: Callable[[str], Path | None] = lambda _: None
    """A job's workspace clone, where git can tell whether a commit is in a branch; None
    when the job has no workspace, or no run has made its clone yet."""
    metrics: Callable[[], bytes] = lambda: b""
    """The daemon's metrics in the Prometheus text format, rendered from what the daemon
    keeps (never read from the store by a scrape)."""
