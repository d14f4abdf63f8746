"""States are enums: the store hands back members, and the database refuses any other value."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cronduit.core.enums import EventState, NotificationState, RunState, SlotFate
from cronduit.ports import Conflict, NewEvent, Run, SlotRecord, Store

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


def run(run_id: str, state: str = RunState.RUNNING) -> Run:
    return Run(id=run_id, job="report", kind="manual", label="m", state=state,  # type: ignore[arg-type]
               created_at=T0, exclusive=False)


def test_states_come_back_as_enum_members(store: Store) -> None:
    """An event's, a run's, a slot's and a notification's state read back as the member."""
    with store.transaction() as tx:
        seq = tx.insert_event(NewEvent("manual/1", "report", "manual", "m", T0))
        tx.insert_run(run("r1"))
        tx.record_slots([SlotRecord("report", T0, "n", SlotFate.MISSED, "late", T0)])
        tx.insert_notification("r1", "ops", "{}", T0)
    with store.transaction() as tx:
        [event] = tx.new_events(1)
        found = tx.get_run("r1")
        [slot] = tx.slots("report", None, None)
        [notification] = tx.notifications_of_run("r1")
    assert seq == event.seq
    assert found is not None
    assert [EventState.NEW, RunState.RUNNING, SlotFate.MISSED, NotificationState.PENDING] == [
        event.state, found.state, slot.fate, notification.state]
    assert [EventState, RunState, SlotFate, NotificationState] == [
        type(event.state), type(found.state), type(slot.fate), type(notification.state)]


def test_an_event_state_outside_the_enum_is_refused(store: Store) -> None:
    """Routing an event to a state nobody reads fails, and the event keeps its state."""
    with store.transaction() as tx:
        seq = tx.insert_event(NewEvent("manual/1", "report", "manual", "m", T0))
    assert seq is not None
    with pytest.raises(Conflict), store.transaction() as tx:
        tx.set_event_state([seq], "queued", None)  # type: ignore[arg-type]
    with store.transaction() as tx:
        assert [EventState.NEW] == [event.state for event in tx.new_events(10)]


def test_a_run_state_outside_the_enum_is_refused(store: Store) -> None:
    """Neither a new run nor an update may carry a state outside RunState."""
    with pytest.raises(Conflict), store.transaction() as tx:
        tx.insert_run(run("r0", state="pending"))
    with store.transaction() as tx:
        tx.insert_run(run("r1"))
    with pytest.raises(Conflict), store.transaction() as tx:
        tx.update_run("r1", state="finished")
    with store.transaction() as tx:
        found = tx.get_run("r1")
        assert (None, RunState.RUNNING) == (tx.get_run("r0"), found and found.state)


def test_a_slot_fate_outside_the_enum_is_refused(store: Store) -> None:
    """The ledger takes only ran, skipped and missed."""
    with pytest.raises(Conflict), store.transaction() as tx:
        tx.record_slots([SlotRecord("report", T0, "n", "lost", "", T0)])  # type: ignore[arg-type]
    with store.transaction() as tx:
        assert [] == tx.slots("report", None, None)


def test_a_notification_state_outside_the_enum_is_refused(store: Store) -> None:
    """A try recorded with a state outside NotificationState leaves the notification as it
    was."""
    with store.transaction() as tx:
        tx.insert_notification("r1", "ops", "{}", T0)
        [queued] = tx.notifications_of_run("r1")
    with pytest.raises(Conflict), store.transaction() as tx:
        tx.record_notification_try(queued.seq, "delivered", T0, "", T0)  # type: ignore[arg-type]
    with store.transaction() as tx:
        [kept] = tx.notifications_of_run("r1")
    assert (NotificationState.PENDING, 0) == (kept.state, kept.attempts)
