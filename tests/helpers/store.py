"""Store operations only tests need, kept out of the product's seam.

:class:`cronduit.ports.Transaction` holds what cronduit itself calls. A test that wants one
timer written, one timer moved or one ledger row added gets it here, built over the
product's batch methods, so it exercises what the engine runs. Only reading a delivery back
has no product method to stand on: it uses the SQL transaction's ``*_for_tests`` method.
"""

from __future__ import annotations

from cronduit.ports import Delivery, SlotRecord, Timer, Transaction
from cronduit.store.pg.transaction import PgTransaction
from cronduit.store.sql.transaction import SqlTransaction


def put_timer(tx: Transaction, timer: Timer) -> None:
    """Create or replace ``timer.job``'s timer: :meth:`~Transaction.put_timers` of one."""
    tx.put_timers([timer])


def advance_timer(tx: Transaction, timer: Timer, expected_version: int) -> bool:
    """Re-arm one timer under its version guard; whether it was written (False: the stored
    version moved since ``expected_version`` was read, a replayed firing)."""
    return tx.advance_timers([(timer, expected_version)]) == 1


def record_slot(tx: Transaction, record: SlotRecord) -> bool:
    """Add one slot's fate; False when the slot had one already (which it keeps)."""
    had = tx.slots(record.job, record.slot, record.slot)
    tx.record_slots([record])
    return not had


def get_delivery(tx: Transaction, delivery_id: str) -> Delivery | None:
    """The code-host delivery recorded under ``delivery_id``, or None: read back through the
    SQL backends' test-only method, since nothing in cronduit reads a delivery whole."""
    assert isinstance(tx, SqlTransaction | PgTransaction), (
        f"no test-only delivery read on {type(tx)}")
    return tx.delivery_for_tests(delivery_id)
