"""This daemon's lease on its node, where other daemons share the state (SPEC §10).

The lease is taken at start (a new epoch), then renewed every third of ``settings.lease``.
Its validity is tracked here on the monotonic clock, from the instant *before* each renewal
was sent: the database counts the renewed lease from a later instant, so this daemon's
idea of its lease always ends first. From that instant the supervisor is told when the runs
of this node must be gone (the lease's end less :data:`LEASE_MARGIN`), so even a daemon
that is frozen, or cut off from the database, has its runs ended before another daemon may
sweep the node and retry them. A renewal refused (the lease lapsed, by the database's
clock) means the lease is lost: the daemon stops starting runs and takes the node again,
with a new epoch, once it can.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from cronduit.ports import HolderGone, Membership, NodeClaim

LEASE_MARGIN_SHARE = 0.2
"""The share of the lease kept between this node's runs being ended and the lease's end:
time for their processes to take SIGTERM, then SIGKILL (the supervisor's grace)."""
MAX_LEASE_MARGIN = 10.0
"""The margin at most, in seconds, whatever the lease."""


def lease_margin(lease: float) -> float:
    """Seconds before the lease's end by which this node's runs must be gone."""
    return min(MAX_LEASE_MARGIN, lease * LEASE_MARGIN_SHARE)


@dataclass
class NodeLease:
    """The node's lease as this daemon holds it; every call blocks (run it off the loop)."""

    membership: Membership
    claim: NodeClaim
    lease: float
    holder_gone: HolderGone
    hold_runs_until: Callable[[float | None], None]
    """Tells the supervisor by when (monotonic) this node's runs must be gone."""
    monotonic: Callable[[], float] = time.monotonic
    epoch: int = 0
    valid_until: float = 0.0
    """The lease's end on the monotonic clock, as this daemon counts it (0: none held)."""

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
            self.valid_until = 0.0
            return False
        self._held_from(sent)
        return True

    def starts_runs(self) -> bool:
        """Whether runs may start: the lease is held and its margin not reached."""
        return self.monotonic() < self.valid_until - lease_margin(self.lease)

    def _held_from(self, sent: float) -> None:
        self.valid_until = sent + self.lease
        self.hold_runs_until(self.valid_until - lease_margin(self.lease))
