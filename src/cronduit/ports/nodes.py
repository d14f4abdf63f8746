"""The node seam: a daemon's lease on its node, where many daemons share one state.

With a PostgreSQL state every daemon holds a lease on its node's row (SPEC §10): taken at
start with a new epoch, renewed every third of ``settings.lease``, renewable only while it is
still valid, by the database's clock. The name and epoch are the fencing token: once the
store is fenced, each of its transactions first checks that the lease is still this one's and
still valid, so a daemon that was paused or cut off past its lease changes nothing.
An SQLite state has one daemon (its lock file says so) and no membership.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True, slots=True)
class NodeClaim:
    """Who asks for a node: the daemon's process on its host."""

    name: str
    host: str
    pid: int
    pid_start: int | None
    listen: str | None = None


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """A node as the store holds it."""

    name: str
    epoch: int
    host: str
    pid: int
    pid_start: int | None
    listen: str | None
    started_at: datetime
    renewed_at: datetime
    expires_at: datetime
    retired_at: datetime | None
    retired_by: str | None


class NodeTaken(Exception):
    """A live daemon holds the node: a second one with the same name is refused."""


class LeaseLost(Exception):
    """The node's lease is no longer this daemon's (it expired, or another took the node):
    the transaction wrote nothing."""


class Membership(Protocol):
    """Node leases in a store shared by many daemons."""

    def now(self) -> datetime:
        """The store's clock: every due time and lease is compared with it."""
        ...

    def register(self, claim: NodeClaim, lease: float, holder_gone: HolderGone) -> int:
        """Take the node for ``lease`` seconds; its new epoch. Refused with
        :class:`NodeTaken` while another daemon's lease on it is valid, unless that daemon
        was on this host and ``holder_gone`` says its process is gone (a restart)."""
        ...

    def renew(self, name: str, epoch: int, lease: float) -> bool:
        """Extend the lease by ``lease`` seconds from the store's now, only while it is
        still valid and still ``epoch``'s; whether it was."""
        ...

    def fence(self, name: str, epoch: int) -> None:
        """From now on every transaction of this store checks the lease first and raises
        :class:`LeaseLost` if it is not valid and ``epoch``'s."""
        ...

    def nodes(self) -> list[NodeRecord]:
        """Every node, live or not, by name."""
        ...

    def listen(self, wake: Callable[[], None]) -> Closing:
        """Call ``wake`` (from another thread) when another daemon committed something this
        one should look at now, and after each reconnection; a hint, never the only way."""
        ...


class Closing(Protocol):
    def close(self) -> None:
        ...


class HolderGone(Protocol):
    def __call__(self, pid: int, pid_start: int | None) -> bool:
        """Whether the process ``pid`` (started at ``pid_start``) on this host is gone."""
        ...
