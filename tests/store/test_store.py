"""The store contract: what every backend promises, each promise with a test."""

from __future__ import annotations

import re
import sqlite3
import time
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path

import pytest

from cronduit.core.enums import EventState
from cronduit.core.payload import Payload
from cronduit.ports import AuditEntry, Conflict, NewEvent, Pause, Run, SlotRecord, Store, Timer
from cronduit.store.sql.migrate import LATEST, statements
from cronduit.store.sqlite import SqliteStore
from tests.helpers.store import advance_timer, put_timer, record_slot

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


def event(delivery: str, job: str = "report", kind: str = "timer") -> NewEvent:
    return NewEvent(delivery_id=delivery, job=job, kind=kind, label=f"{kind} {delivery}",
                    accepted_at=T0)


def run(run_id: str, job: str = "report", exclusive: bool = True, state: str = "running",
        created: datetime = T0) -> Run:
    return Run(id=run_id, job=job, kind="timer", label="cron", state=state, created_at=created,
               exclusive=exclusive)


def test_accepting_the_same_delivery_twice_is_one_event(store: Store) -> None:
    """The unique delivery id makes acceptance idempotent."""
    with store.transaction() as tx:
        first = tx.insert_event(event("slot/report/2026-06-01T09:00:00Z"))
        again = tx.insert_event(event("slot/report/2026-06-01T09:00:00Z"))
    assert first is not None
    assert again is None
    with store.transaction() as tx:
        assert [first] == [e.seq for e in tx.new_events(10)]


def test_events_keep_their_fields_and_acceptance_order(store: Store) -> None:
    """What goes in comes back, oldest first, with the instant intact."""
    slot = datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    with store.transaction() as tx:
        tx.insert_event(NewEvent("a", "report", "timer", "cron x", T0, slot=slot, late=True,
                                 payload=Payload('{"k": 1}'), operator="ana"))
        tx.insert_event(event("b"))
    with store.transaction() as tx:
        first, second = tx.new_events(10)
    assert ("a", slot, True, '{"k": 1}', "ana", "new") == (
        first.delivery_id, first.slot, first.late, first.payload.text, first.operator, first.state)
    assert first.seq < second.seq


def test_routing_moves_events_between_states(store: Store) -> None:
    """new -> waiting -> consumed by a run; only waiting events of the job are listed."""
    with store.transaction() as tx:
        a = tx.insert_event(event("a"))
        b = tx.insert_event(event("b", job="other"))
        assert a is not None
        assert b is not None
        tx.set_event_state([a], "waiting", None)
        tx.set_event_state([b], "waiting", None)
    with store.transaction() as tx:
        assert [a] == [e.seq for e in tx.waiting_events("report")]
        tx.set_event_state([a], "consumed", "run-1")
        assert [] == tx.waiting_events("report")
        assert [a] == [e.seq for e in tx.events_of_run("run-1")]
        assert [] == tx.new_events(10)


def test_a_rolled_back_transaction_writes_nothing(store: Store) -> None:
    """An exception inside the block undoes every write of the block."""
    def accept_then_crash() -> None:
        with store.transaction() as tx:
            tx.insert_event(event("a"))
            raise RuntimeError("crash between accepting and routing")

    with pytest.raises(RuntimeError):
        accept_then_crash()
    with store.transaction() as tx:
        assert [] == tx.new_events(10)


def timer(job: str = "report", due: datetime = T0, last: str | None = None) -> Timer:
    return Timer(job=job, timing_key="cron 0 9 * * *", slot=due, slot_name="n", due_at=due,
                 last_name=last)


def test_due_timers_are_those_at_or_before_now(store: Store) -> None:
    """A timer due exactly now is due; one a microsecond later is not."""
    with store.transaction() as tx:
        put_timer(tx, timer("a", T0))
        put_timer(tx, timer("b", T0 + timedelta(microseconds=1)))
    with store.transaction() as tx:
        assert ["a"] == [t.job for t in tx.due_timers(T0, 10)]
        assert ["a", "b"] == [t.job for t in tx.timers()]


def test_a_firing_commits_only_against_the_version_it_read(store: Store) -> None:
    """advance_timer is the replay guard: a second firing from the same read changes nothing."""
    with store.transaction() as tx:
        put_timer(tx, timer())
        read = tx.get_timer("report")
    assert read is not None
    moved = Timer(job="report", timing_key=read.timing_key, slot=T0 + timedelta(days=1),
                  slot_name="next", due_at=T0 + timedelta(days=1), last_name="ran")
    with store.transaction() as tx:
        assert advance_timer(tx, moved, read.version)
        assert not advance_timer(tx, moved, read.version)
        stored = tx.get_timer("report")
    assert stored is not None
    assert ("ran", T0 + timedelta(days=1), read.version + 1) == (
        stored.last_name, stored.due_at, stored.version)


def test_a_batch_of_firings_counts_only_the_timers_it_moved(store: Store) -> None:
    """advance_timers writes each timer under its own guard and says how many it wrote, so the
    engine can tell a replayed batch (a count short) and roll it back."""
    with store.transaction() as tx:
        tx.put_timers([timer("a"), timer("b")])
        read = {t.job: t for t in tx.timers()}
    later = T0 + timedelta(hours=1)

    def moved(job: str) -> Timer:
        return Timer(job, read[job].timing_key, later, "later", later, "ran")

    with store.transaction() as tx:
        assert tx.advance_timers([(moved("a"), read["a"].version),
                                  (moved("b"), read["b"].version)]) == 2
        assert tx.advance_timers([(moved("a"), read["a"].version),
                                  (moved("b"), read["b"].version + 1)]) == 1
        assert tx.advance_timers([]) == 0
        versions = {t.job: t.version for t in tx.timers()}
    assert {"a": read["a"].version + 1, "b": read["b"].version + 2} == versions


def test_deleting_a_timer_removes_it(store: Store) -> None:
    """A removed job loses its timer."""
    with store.transaction() as tx:
        put_timer(tx, timer())
        tx.delete_timer("report")
        assert [] == tx.timers()


def test_a_slot_gets_one_fate(store: Store) -> None:
    """The ledger's key is (job, slot): a slot is recorded, and so fired, once."""
    record = SlotRecord("report", T0, "2026-06-01 09:00 UTC", "ran", "", T0, event_seq=1)
    with store.transaction() as tx:
        assert record_slot(tx, record)
        assert not record_slot(tx, record)
        record_slot(tx, SlotRecord("report", T0 + timedelta(hours=1), "x", "missed", "late", T0,
                                   count=5, until_slot=T0 + timedelta(hours=5)))
    with store.transaction() as tx:
        listed = tx.slots("report", None, None)
        window = tx.slots("report", T0 + timedelta(minutes=1), None)
    assert ["ran", "missed"] == [r.fate for r in listed]
    assert [(5, T0 + timedelta(hours=5))] == [(r.count, r.until_slot) for r in window]


def test_one_exclusive_run_in_progress_per_job(store: Store) -> None:
    """The database refuses a second exclusive run of a job while one is not ended."""
    with store.transaction() as tx:
        tx.insert_run(run("r1"))
    with pytest.raises(Conflict), store.transaction() as tx:
        tx.insert_run(run("r2"))
    with store.transaction() as tx:
        tx.insert_run(run("p1", exclusive=False))
        tx.insert_run(run("other", job="other"))
        tx.update_run("r1", state="ended", outcome="success")
        tx.insert_run(run("r3"))
        assert ["p1", "r3"] == sorted(r.id for r in tx.active_runs("report"))


def test_runs_update_and_read_back(store: Store) -> None:
    """update_run writes named fields; unknown names are refused."""
    with store.transaction() as tx:
        tx.insert_run(run("r1"))
        tx.update_run("r1", attempts=2, exit_status=3, finished_at=T0, late=True)
        got = tx.get_run("r1")
        with pytest.raises(ValueError, match="unknown run fields"):
            tx.update_run("r1", colour="red")
    assert got is not None
    assert (2, 3, T0, True) == (got.attempts, got.exit_status, got.finished_at, got.late)


def test_history_is_newest_first_and_pruning_keeps_the_newest(store: Store) -> None:
    """history() lists newest first; runs_to_prune() names ended runs beyond the newest N."""
    with store.transaction() as tx:
        for i in range(5):
            tx.insert_run(run(f"r{i}", state="ended", created=T0 + timedelta(minutes=i)))
        assert ["r4", "r3", "r2"] == [r.id for r in tx.history("report", 3)]
        assert ["r0", "r1"] == [r.id for r in tx.runs_to_prune("report", 3)]
        tx.update_run("r0", files_pruned=True)
        assert ["r1"] == [r.id for r in tx.runs_to_prune("report", 3)]


def test_run_ends_are_recorded_once_and_read_in_order(store: Store) -> None:
    """A run-ended event per run; readers follow the sequence; chaining marks them."""
    with store.transaction() as tx:
        first = tx.insert_run_end("report", "r1", "failed", "failure", T0)
        assert 0 == tx.insert_run_end("report", "r1", "failed", "failure", T0)
        tx.insert_run_end("other", "r2", "completed", "success", T0)
        assert ["r1", "r2"] == [e.run_id for e in tx.run_ends_after(None, 0)]
        assert ["r2"] == [e.run_id for e in tx.run_ends_after(None, first)]
        assert ["r1"] == [e.run_id for e in tx.run_ends_after("report", 0)]
        tx.mark_chained(first)
        assert ["r2"] == [e.run_id for e in tx.unchained_run_ends(10)]
        assert first + 1 == tx.last_run_end_seq()


def test_meta_is_a_small_key_value_table(store: Store) -> None:
    """set_meta overwrites; get_meta of an unknown key is None."""
    with store.transaction() as tx:
        assert tx.get_meta("heartbeat") is None
        tx.set_meta("heartbeat", "1")
        tx.set_meta("heartbeat", "2")
        assert "2" == tx.get_meta("heartbeat")


_CHECK = re.compile(r"CHECK \((?:[^()]|\([^()]*\))*\)")
"""A CHECK constraint's text, with parentheses nested one deep (``state IN (...)``)."""


def _schema(db: sqlite3.Connection) -> list[tuple[str, object]]:
    """Tables by their columns, foreign keys and CHECK constraints (an ALTER TABLE words the
    CREATE text its own way, so the whole text is not compared; nothing else reports the
    CHECKs), and every index and trigger by its SQL."""
    described: list[tuple[str, object]] = []
    for kind, name, sql in db.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
            "AND name <> 'schema_version' ORDER BY name").fetchall():
        if kind == "table":
            columns = db.execute(f"PRAGMA table_info({name})").fetchall()
            keys = db.execute(f"PRAGMA foreign_key_list({name})").fetchall()
            checks = sorted(_CHECK.findall(" ".join(sql.split())))
            described.append((name, (columns, keys, checks)))
        else:
            described.append((name, " ".join(sql.split())))
    return described


def test_the_migrations_add_up_to_the_schema(tmp_path: Path) -> None:
    """Applying every numbered migration gives exactly the documented schema.sql."""
    migrated = SqliteStore(tmp_path / "migrated.db")
    migrated.close()
    documented = sqlite3.connect(tmp_path / "documented.db")
    text = resources.files("cronduit.store.sql").joinpath("schema.sql").read_text()
    for statement in statements(text):
        documented.execute(statement)
    assert _schema(documented) == _schema(sqlite3.connect(tmp_path / "migrated.db"))


def test_migrating_twice_changes_nothing(tmp_path: Path) -> None:
    """Opening an up-to-date store applies no migration again."""
    store = SqliteStore(tmp_path / "c.db")
    assert LATEST == store.migrate()
    store.close()


def test_next_due_is_the_soonest_timer_backoff_or_deadline(store: Store) -> None:
    """What the daemon sleeps until: timers (unless in a dry run), retries and deadlines."""
    with store.transaction() as tx:
        assert tx.next_due(with_timers=True) is None
        put_timer(tx, timer("a", T0 + timedelta(hours=3)))
        tx.insert_run(Run(id="r1", job="b", kind="manual", label="m", state="backoff",
                          created_at=T0, next_attempt_at=T0 + timedelta(hours=2)))
        tx.insert_run(Run(id="r2", job="c", kind="manual", label="m", state="running",
                          created_at=T0, deadline_at=T0 + timedelta(hours=1)))
        assert T0 + timedelta(hours=1) == tx.next_due(with_timers=True)
        tx.update_run("r2", cancel_reason="timeout")
        assert T0 + timedelta(hours=2) == tx.next_due(with_timers=False)
        tx.update_run("r1", state="ended")
        assert T0 + timedelta(hours=3) == tx.next_due(with_timers=True)
        assert tx.next_due(with_timers=False) is None


def test_due_backoffs_overdue_runs_and_active_counts(store: Store) -> None:
    """The engine's cheap per-tick questions answer from the runs' states and times."""
    hour = timedelta(hours=1)
    with store.transaction() as tx:
        tx.insert_run(Run(id="sleeping", job="a", kind="manual", label="m", state="backoff",
                          created_at=T0, next_attempt_at=T0 + hour, deadline_at=T0 + 3 * hour))
        tx.insert_run(Run(id="late", job="b", kind="manual", label="m", state="running",
                          created_at=T0, deadline_at=T0 + hour))
        tx.insert_run(Run(id="stopped", job="c", kind="manual", label="m", state="running",
                          created_at=T0, deadline_at=T0, cancel_reason="timeout"))
        assert [] == tx.due_backoffs(T0)
        assert ["sleeping"] == [r.id for r in tx.due_backoffs(T0 + hour)]
        assert [] == tx.overdue_runs(T0)
        assert ["late"] == [r.id for r in tx.overdue_runs(T0 + hour)]
        assert (1, 1) == tx.active_count("a")
        assert (1, 0) == tx.active_count("b")
        assert (0, 0) == tx.active_count("nobody")


def test_jobs_work_reads_a_batch_of_jobs_runs_and_newest_waiting_at_once(store: Store) -> None:
    """Per job: runs going, how many in backoff, the oldest in backoff, the newest trigger
    waiting; a job with none of these is left out, and ended runs do not count."""
    with store.transaction() as tx:
        for run_id, job, state in (("a1", "a", "running"), ("a2", "a", "backoff"),
                                   ("a3", "a", "backoff"), ("b1", "b", "ended"),
                                   ("c1", "c", "running")):
            tx.insert_run(run(run_id, job=job, exclusive=False, state=state))
        seqs = [tx.insert_event(event(d, job=j)) for d, j in
                (("1", "b"), ("2", "b"), ("3", "d"), ("4", "a"))]
        tx.set_event_state([s for s in seqs[:2] if s is not None], "waiting", None)
        work = tx.jobs_work(["a", "b", "c", "d", "nobody"])
    assert {"a", "b", "c"} == work.keys()  # d's trigger is new, not waiting
    assert (3, 2, "a2", None) == (work["a"].running, work["a"].backoff, work["a"].sleeping,
                                  work["a"].newest_waiting)
    newest = work["b"].newest_waiting
    assert newest is not None
    assert (0, 0, None, seqs[1]) == (work["b"].running, work["b"].backoff, work["b"].sleeping,
                                     newest.seq)
    assert (1, 0) == (work["c"].running, work["c"].backoff)
    with store.transaction() as tx:
        assert {} == tx.jobs_work([])


def test_held_elsewhere_finds_each_jobs_oldest_new_trigger_outside_a_batch(
        store: Store) -> None:
    """What a router holds is left out; of the rest still new, each job's lowest seq."""
    with store.transaction() as tx:
        seqs = [tx.insert_event(event(d, job=j)) for d, j in
                (("1", "a"), ("2", "a"), ("3", "a"), ("4", "b"), ("5", "c"))]
        assert None not in seqs
        one, two, three, four, five = (s for s in seqs if s is not None)
        tx.set_event_state([five], "waiting", None)  # routed already: not new
        assert {"a": two} == tx.held_elsewhere(["a", "b", "c"], [one, four])
        assert {"a": one, "b": four} == tx.held_elsewhere(["a", "b"], [three])
        assert {} == tx.held_elsewhere([], [one])


def test_set_event_states_writes_each_events_own_state_and_run(store: Store) -> None:
    """Many events, each its own state and consuming run, in one call."""
    with store.transaction() as tx:
        tx.insert_run(run("r1", exclusive=False))
        seqs = [tx.insert_event(event(d)) for d in ("1", "2", "3")]
        one, two, three = (s for s in seqs if s is not None)
        tx.set_event_states([(one, EventState.CONSUMED, "r1"), (two, EventState.WAITING, None),
                             (three, EventState.UNMATCHED, None)])
        tx.set_event_states([])
    with store.transaction() as tx:
        assert [one] == [e.seq for e in tx.events_of_run("r1")]
        assert [two] == [e.seq for e in tx.waiting_events("report")]
        assert [] == tx.new_events(10)


def test_waiting_events_with_a_limit_are_the_oldest_of_the_queue(store: Store) -> None:
    """The head of a job's queue: its oldest waiting events, in order, no other job's."""
    with store.transaction() as tx:
        seqs = [tx.insert_event(event(d, job=j)) for d, j in
                (("1", "a"), ("2", "b"), ("3", "a"), ("4", "a"))]
        tx.set_event_state([s for s in seqs if s is not None], "waiting", None)
        assert [seqs[0], seqs[2]] == [e.seq for e in tx.waiting_events("a", 2)]
        assert [seqs[0], seqs[2], seqs[3]] == [e.seq for e in tx.waiting_events("a", 10)]
        assert [seqs[0], seqs[2], seqs[3]] == [e.seq for e in tx.waiting_events("a")]


def test_jobs_with_waiting_lists_each_job_once(store: Store) -> None:
    """Start-up looks only at jobs that have triggers waiting."""
    with store.transaction() as tx:
        seqs = [tx.insert_event(event(d, job=j)) for d, j in
                (("1", "b"), ("2", "a"), ("3", "b"), ("4", "c"))]
        tx.set_event_state([s for s in seqs[:3] if s is not None], "waiting", None)
        assert ["a", "b"] == tx.jobs_with_waiting()


def test_batched_events_and_ledger_rows_link_and_stay_idempotent(store: Store) -> None:
    """insert_events skips accepted deliveries and gives each delivery id its event's seq;
    record_slots links each row to the event it names and skips slots that have a fate."""
    with store.transaction() as tx:
        first = tx.insert_events([event("slot/a/1"), event("slot/a/2")])
        again = tx.insert_events([event("slot/a/2"), event("slot/a/3")])
        tx.record_slots([
            SlotRecord("a", T0, "n1", "ran", "", T0, event_seq=first[0]),
            SlotRecord("a", T0 + timedelta(hours=1), "n2", "missed", "late", T0),
        ])
        tx.record_slots([SlotRecord("a", T0, "n1", "ran", "", T0, event_seq=again[1])])
        seqs = {e.delivery_id: e.seq for e in tx.new_events(10)}
        ledger = tx.slots("a", None, None)
    assert ["slot/a/1", "slot/a/2", "slot/a/3"] == sorted(seqs)
    assert ([seqs["slot/a/1"], seqs["slot/a/2"]], [seqs["slot/a/2"], seqs["slot/a/3"]]) == (
        first, again)
    assert [(seqs["slot/a/1"], "ran"), (None, "missed")] == [(r.event_seq, r.fate)
                                                             for r in ledger]


def test_batched_events_follow_events_accepted_one_by_one(store: Store) -> None:
    """Seqs keep rising across both ways of accepting, so routing keeps acceptance order."""
    with store.transaction() as tx:
        single = tx.insert_event(event("manual/1", kind="manual"))
        batch = tx.insert_events([event("slot/a/1"), event("slot/b/1")])
        after = tx.insert_event(event("manual/2", kind="manual"))
        order = [e.delivery_id for e in tx.new_events(10)]
    assert single is not None
    assert after is not None
    assert single < batch[0] < batch[1] < after
    assert ["manual/1", "slot/a/1", "slot/b/1", "manual/2"] == order


def test_a_transaction_opened_inside_another_fails_rather_than_waits(store: Store) -> None:
    """A nested transaction is a bug; it must surface as an error at once, never hang the
    daemon waiting for itself."""
    began = time.monotonic()
    with (store.transaction(), pytest.raises(Exception, match="transaction"),
          store.transaction()):
        pass
    assert time.monotonic() - began < 5

def test_a_job_has_at_most_one_active_pause(store: Store) -> None:
    """A second active pause of the same job is refused by the store; after the resume the
    job can be paused again, and the history keeps both."""
    with store.transaction() as tx:
        tx.insert_pause(Pause("report", "disk full", "ana", T0))
        with pytest.raises(Conflict):
            tx.insert_pause(Pause("report", "again", "bo", T0))
    with store.transaction() as tx:
        assert "disk full" == (tx.active_pause("report") or Pause("", "", "", T0)).reason
        ended = tx.end_pause("report", T0 + timedelta(hours=1), "bo")
        assert ended is not None
        assert (T0 + timedelta(hours=1), "bo") == (ended.resumed_at, ended.resumed_by)
        assert tx.end_pause("report", T0, "bo") is None
        assert tx.active_pause("report") is None
        tx.insert_pause(Pause("report", "again", "bo", T0 + timedelta(hours=2)))


def test_pauses_lists_the_active_and_those_resumed_lately(store: Store) -> None:
    """pauses() is the active ones; with resumed_after, also those resumed after it."""
    until = T0 + timedelta(hours=3)
    with store.transaction() as tx:
        tx.insert_pause(Pause("a", "r", "ana", T0, until=until))
        tx.insert_pause(Pause("b", "r", "ana", T0))
        tx.end_pause("b", T0 + timedelta(hours=1), "ana")
    with store.transaction() as tx:
        assert [("a", until)] == [(p.job, p.until) for p in tx.pauses()]
        assert ["a", "b"] == [p.job for p in tx.pauses(resumed_after=T0)]
        assert ["a"] == [p.job for p in tx.pauses(resumed_after=T0 + timedelta(hours=1))]
        assert until == tx.next_due(with_timers=False)


def test_the_audit_log_reads_newest_first(store: Store) -> None:
    """Entries come back whole, newest first, as many as asked."""
    with store.transaction() as tx:
        first = tx.insert_audit(AuditEntry("pause", "ana", T0, "report", '{"reason": "x"}'))
        second = tx.insert_audit(AuditEntry("apply", "bo", T0 + timedelta(minutes=1)))
    with store.transaction() as tx:
        newest, oldest = tx.audit(10)
        assert [second] == [entry.seq for entry in tx.audit(1)]
    assert first < second
    assert ("apply", "bo", None, "{}") == (newest.action, newest.operator, newest.job,
                                          newest.detail)
    assert ("pause", "report", T0, '{"reason": "x"}') == (oldest.action, oldest.job, oldest.at,
                                                         oldest.detail)


def test_batch_writes_bind_by_position_only_in_the_querys_own_order() -> None:
    """The firing path binds tuples by position: the order is checked against queries.sql, so
    an edit that moves a parameter fails loudly instead of writing a value to another column."""
    from cronduit.store.sql.transaction import positional  # noqa: PLC0415 - the SQL backends' helper

    order = ("slot", "slot_name", "due_at", "last_name", "job", "expected_version")
    assert "WHERE job = ? AND version = ?" in positional("advance_timer", order)
    with pytest.raises(ValueError, match="advance_timer takes"):
        positional("advance_timer", order[::-1])


def test_the_processes_of_a_ticks_launches_are_recorded_in_one_go(store: Store) -> None:
    """record_starts sets each run's pid and process start time, and nothing else."""
    with store.transaction() as tx:
        tx.insert_run(run("r1", job="a"))
        tx.insert_run(run("r2", job="b"))
        tx.record_starts([("r1", 101, 5001), ("r2", 102, 5002)])
    with store.transaction() as tx:
        found = [tx.get_run(run_id) for run_id in ("r1", "r2")]
    assert [("r1", 101, 5001, "running"), ("r2", 102, 5002, "running")] == [
        (r.id, r.pid, r.pid_start, r.state) for r in found if r is not None]
