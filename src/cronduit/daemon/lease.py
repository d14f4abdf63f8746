"""This daemon's lease on its node, where other daemons share the state (SPEC §10).

The lease is taken at start (a new epoch), then renewed every third of ``settings.lease``.
Its validity is tracked here on the monotonic clock, from the instant *before* each renewal
was sent: the database counts the renewed lease from a later instant, so this daemon's
idea of its lease always ends first. From that instant the supervisor is told when the runs
of this node must be gone (``deadline``: the lease's end less the executor's margin,
:func:`cronduit.executor.lease_deadline`), so even a daemon that is frozen, or cut off from
the database, has its runs ended before another daemon may sweep the node and retry them.
A renewal refused (the lease lapsed, by the database's clock) means the lease is lost: the
daemon stops starting runs and takes the node again, with a new epoch, once it can.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from cronduit.ports import HolderGone, Membership, NodeClaim


@dataclass
class NodeLease:
    """The node's lease as this daemon holds it; every call blocks (run it off the loop)."""

    membership: Membership
    claim: NodeClaim
    lease: float
    holder_gone: HolderGone
    hold_runs_until: Callable[[float | None], None]
    """Tells the supervisor by when (monotonic) this node's runs must be gone."""
    deadline: Callable[[float, float], float]
    """(monotonic instant the renewal was sent, lease) -> that instant."""
    monotonic: Callable[[], float] = time.monotonic
    epoch: int = 0
    runs_until: float = 0.0
    """When (monotonic) this node's runs must be gone, as last told (0: no lease held)."""

    @property
    def name(self) -> str:
        return self.claim.name

    @property
    def every(self) -> float:
        """Seconds between renewals: a third of the lease, so two can fail before it ends."""
        return self.lease / 3

    def take(self) -> None:
        """Take the node (a new epoch) and fence the store with it. Raises
        :class:`~cronduit.ports.NodeTaken` while another live daemon holds it."""
        sent = self.monotonic()
        self.epoch = self.membership.register(self.claim, self.lease, self.holder_gone)
        self.membership.fence(self.name, self.epoch)
        self._held_from(sent)

    def renew(self) -> bool:
        """Renew the lease; False when it is lost (it lapsed, or the node was swept)."""
        sent = self.monotonic()
        if not self.membership.renew(self.name, self.epoch, self.lease):
            self.runs_until = 0.0
            return False
        self._held_from(sent)
        return True

    def starts_runs(self) -> bool:
        """Whether runs may start: the lease was renewed within the last two renewal
        periods (less a half, for the time a renewal takes). Past that the supervisor is
        about to end this node's runs; starting more would only feed it."""
        return self.monotonic() < self.runs_until - self.every / 2

    def _held_from(self, sent: float) -> None:
        self.runs_until = self.deadline(sent, self.lease)
        self.hold_runs_until(self.runs_until)
