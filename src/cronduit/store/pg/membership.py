"""Node leases on PostgreSQL: :class:`cronduit.ports.Membership`.

Every comparison with a lease's end is made in SQL against ``clock_timestamp()``, the
database's clock, never a daemon's: a host whose clock is minutes off takes, renews and loses
its lease exactly when the others see it so.

The fence: once :meth:`PgMembership.fence` names the node and epoch, each transaction of the
store first reads the node's row ``FOR KEY SHARE`` where the epoch is still this one's and
the lease is still valid, and raises :class:`~cronduit.ports.LeaseLost` (writing nothing)
when it is not. The row lock is held until the transaction ends, and a sweep claims a lost
node's row ``FOR UPDATE SKIP LOCKED``, which that lock excludes: a transaction that passed
the fence either commits before the node is swept, or the sweep waits for a later turn. A
renewal updates no key, so it never waits for the fence (nor the fence for it).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import psycopg

from cronduit.core.nodes import taken_by
from cronduit.ports import Closing, HolderGone, LeaseLost, NodeClaim, NodeRecord, NodeTaken

_HELD = "SELECT host, pid, pid_start, expires_at, retired_at, clock_timestamp() FROM nodes " \
        "WHERE name = %s FOR UPDATE"
_TAKE = """
INSERT INTO nodes (name, epoch, host, pid, pid_start, listen, started_at, renewed_at,
                   expires_at)
VALUES (%(name)s, 1, %(host)s, %(pid)s, %(pid_start)s, %(listen)s, clock_timestamp(),
        clock_timestamp(), clock_timestamp() + make_interval(secs => %(lease)s))
ON CONFLICT (name) DO UPDATE SET
    epoch = nodes.epoch + 1, host = excluded.host, pid = excluded.pid,
    pid_start = excluded.pid_start, listen = excluded.listen,
    started_at = excluded.started_at, renewed_at = excluded.renewed_at,
    expires_at = excluded.expires_at, retired_at = NULL, retired_by = NULL
RETURNING epoch"""
_RENEW = """
UPDATE nodes SET renewed_at = clock_timestamp(),
                 expires_at = clock_timestamp() + make_interval(secs => %(lease)s)
WHERE name = %(name)s AND epoch = %(epoch)s AND retired_at IS NULL
  AND expires_at > clock_timestamp()"""
FENCE = """
SELECT 1 FROM nodes
WHERE name = %s AND epoch = %s AND retired_at IS NULL AND expires_at > clock_timestamp()
FOR KEY SHARE"""


class PgMembership:
    """Node leases in the store's database; ``connect`` gives a pooled connection's context
    and ``set_fence`` tells the store which lease its transactions check."""

    def __init__(self, connect: Callable[[], Any],
                 set_fence: Callable[[tuple[str, int] | None], None],
                 listen: Callable[[Callable[[], None]], Closing]) -> None:
        self._connect = connect
        self._set_fence = set_fence
        self.listen = listen
        """Start calling a (thread-safe) wake on other daemons' commits that concern them
        (:mod:`cronduit.store.pg.listener`); close what it gives to stop."""

    def now(self) -> datetime:
        with self._connect() as db:
            row = db.execute("SELECT clock_timestamp()").fetchone()
        when: datetime = row[0]
        return when

    def register(self, claim: NodeClaim, lease: float, holder_gone: HolderGone) -> int:
        with self._connect() as db, db.transaction():
            held = db.execute(_HELD, (claim.name,)).fetchone()
            if held is not None:
                host, pid, pid_start, expires_at, retired_at, now = held
                why = taken_by(host, pid, expires_at, retired_at is not None, now, claim.host,
                               host == claim.host and holder_gone(pid, pid_start))
                if why is not None:
                    raise NodeTaken(f"node {claim.name}: {why}")
            row = db.execute(_TAKE, {"name": claim.name, "host": claim.host, "pid": claim.pid,
                                     "pid_start": claim.pid_start, "listen": claim.listen,
                                     "lease": lease}).fetchone()
        return int(row[0])

    def renew(self, name: str, epoch: int, lease: float) -> bool:
        with self._connect() as db, db.transaction():
            cursor = db.execute(_RENEW, {"name": name, "epoch": epoch, "lease": lease})
            return bool(cursor.rowcount == 1)

    def fence(self, name: str, epoch: int) -> None:
        self._set_fence((name, epoch))

    def nodes(self) -> list[NodeRecord]:
        with self._connect() as db:
            cursor = db.execute("SELECT name, epoch, host, pid, pid_start, listen, started_at, "
                                "renewed_at, expires_at, retired_at, retired_by FROM nodes "
                                "ORDER BY name")
            return [NodeRecord(*row) for row in cursor.fetchall()]


def check_fence(cursor: psycopg.Cursor[Any], fence: tuple[str, int]) -> None:
    """The first statement of a fenced transaction (see the module's docstring)."""
    if cursor.execute(FENCE, fence).fetchone() is None:
        name, epoch = fence
        raise LeaseLost(f"node {name}'s lease (epoch {epoch}) is no longer valid: another "
                        "daemon may have taken its runs over; nothing was written")
