"""The daemon's side of its node lease: when it holds it, when runs may start, and what the
supervisor is told."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cronduit.daemon.lease import NodeLease
from cronduit.executor import lease_deadline
from cronduit.ports import HolderGone, NodeClaim, NodeRecord


@dataclass
class FakeMembership:
    renewing: bool = True
    epochs: int = 0
    fenced: list[tuple[str, int]] = field(default_factory=list)

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC)

    def register(self, claim: NodeClaim, lease: float, holder_gone: HolderGone) -> int:
        self.epochs += 1
        return self.epochs

    def renew(self, name: str, epoch: int, lease: float) -> bool:
        return self.renewing and epoch == self.epochs

    def fence(self, name: str, epoch: int) -> None:
        self.fenced.append((name, epoch))

    def nodes(self) -> list[NodeRecord]:
        return []

    def listen(self, wake: Any) -> Any:
        raise NotImplementedError


def _lease(membership: FakeMembership, clock: list[float], held: list[float | None]
           ) -> NodeLease:
    return NodeLease(membership, NodeClaim("n1", "h", 1, 1), 30.0, lambda _, __: False,
                     held.append, lease_deadline, monotonic=lambda: clock[0])


def test_taking_the_node_fences_the_store_and_tells_the_supervisor() -> None:
    membership, clock, held = FakeMembership(), [100.0], []
    lease = _lease(membership, clock, held)
    lease.take()
    assert [("n1", 1)] == membership.fenced
    assert [lease_deadline(100.0, 30.0)] == held
    assert lease.starts_runs()


def test_runs_stop_starting_once_a_renewal_failed_and_another_is_due() -> None:
    membership, clock, held = FakeMembership(), [100.0], []
    lease = _lease(membership, clock, held)
    lease.take()
    clock[0] = 110.0
    assert lease.renew()  # counted from before it was sent
    assert lease_deadline(110.0, 30.0) == held[-1]
    membership.renewing = False
    clock[0] = 120.0
    assert not lease.renew()
    assert not lease.starts_runs()  # refused: lost at once
    assert lease_deadline(110.0, 30.0) == held[-1]  # the supervisor keeps the last deadline


def test_a_lease_not_renewed_in_time_stops_runs_starting_before_the_supervisor_acts() -> None:
    membership, clock, held = FakeMembership(), [100.0], []
    lease = _lease(membership, clock, held)
    lease.take()
    clock[0] = 100.0 + lease.every * 1.9  # one renewal missed (the database is away)
    assert lease.starts_runs()
    clock[0] = 100.0 + lease.every * 2  # the second is due, and not done
    assert not lease.starts_runs()
    assert clock[0] < lease_deadline(100.0, 30.0)  # before the supervisor's kill


def test_taking_the_node_again_gives_a_new_epoch() -> None:
    membership, clock, held = FakeMembership(), [0.0], []
    lease = _lease(membership, clock, held)
    lease.take()
    lease.take()
    assert (2, [("n1", 1), ("n1", 2)]) == (lease.epoch, membership.fenced)
