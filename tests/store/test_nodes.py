"""The store's side of many daemons: runs owned by nodes, jobs left to other nodes, per-job
claims, lost nodes; on every backend (the ``store`` fixture), and the node leases that only
a shared (PostgreSQL) store holds."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from cronduit.core.enums import RunState
from cronduit.ports import LeaseLost, NewEvent, NodeClaim, NodeTaken, Run, Store
from cronduit.store.pg.transaction import INTAKE_LOCK
from cronduit.store.postgres import PostgresStore
from cronduit.store.sqlite import SqliteStore
from tests.helpers.postgres import postgres_store

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


def _run(run_id: str, job: str, node: str | None, state: RunState = RunState.RUNNING,
         **more: object) -> Run:
    return Run(id=run_id, job=job, kind="manual", label="m", state=state, created_at=T0,
               exclusive=False, node=node, **more)  # type: ignore[arg-type]


def test_new_events_leave_out_the_jobs_excluded(store: Store) -> None:
    with store.transaction() as tx:
        tx.insert_events([NewEvent(f"manual/{n}", job, "manual", "m", T0)
                          for n, job in enumerate(["a", "b", "a", "c"])])
    with store.transaction() as tx:
        assert ["a", "b", "a", "c"] == [e.job for e in tx.new_events(10)]
        assert ["b", "c"] == [e.job for e in tx.new_events(10, ["a"])]
        assert ["b"] == [e.job for e in tx.new_events(10, ["a", "c"])]


def test_runs_are_owned_by_the_node_that_started_them(store: Store) -> None:
    with store.transaction() as tx:
        tx.insert_run(_run("r1", "a", "n1"))
        tx.insert_run(_run("r2", "a", "n2"))
        tx.insert_run(_run("r3", "b", "n1", RunState.ENDED))
    with store.transaction() as tx:
        assert ["r1"] == [r.id for r in tx.active_runs_of_node("n1")]
        assert ["r2"] == [r.id for r in tx.active_runs_of_node("n2")]
        assert "n1" == (tx.get_run("r3") or _run("x", "x", None)).node
        assert ["r1", "r2"] == [r.id for r in tx.active_runs()]


def test_a_node_retries_its_own_runs_and_those_no_node_holds(store: Store) -> None:
    due = T0 - timedelta(seconds=1)
    with store.transaction() as tx:
        for run_id, job, node in (("mine", "a", "n1"), ("theirs", "a", "n2"),
                                  ("free", "a", None), ("left", "b", None)):
            tx.insert_run(_run(run_id, job, node, RunState.BACKOFF, next_attempt_at=due))
    with store.transaction() as tx:
        assert ["mine", "free", "left"] == [r.id for r in tx.due_backoffs(T0, "n1")]
        assert ["mine", "free"] == [r.id for r in tx.due_backoffs(T0, "n1", ["b"])]
        assert ["mine", "theirs", "free", "left"] == [r.id for r in tx.due_backoffs(T0)]


def test_deadlines_and_stops_are_each_nodes_own(store: Store) -> None:
    past = T0 - timedelta(seconds=1)
    with store.transaction() as tx:
        tx.insert_run(_run("mine", "a", "n1", deadline_at=past))
        tx.insert_run(_run("theirs", "b", "n2", deadline_at=past))
        tx.insert_run(_run("asked", "c", "n1", cancel_reason="cancelled"))
    with store.transaction() as tx:
        assert ["mine"] == [r.id for r in tx.overdue_runs(T0, "n1")]
        assert ["mine", "theirs"] == [r.id for r in tx.overdue_runs(T0)]
        assert ["asked"] == [r.id for r in tx.cancelled_runs("n1")]
        assert [] == tx.cancelled_runs("n2")


def test_a_job_claimed_in_one_transaction_is_claimed_again_in_it(store: Store) -> None:
    with store.transaction() as tx:
        assert tx.claim_job("a")
        assert tx.claim_job("a")
        assert tx.claim_job("b")


def test_a_store_of_one_daemon_has_no_lost_node(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "cronduit.db")
    with store.transaction() as tx:
        assert [] == tx.lost_nodes("n1", 10)
        tx.release_backoffs("n1")
        tx.retire_node("n1", 1, "n2")
    store.close()


@contextmanager
def _beside(store: PostgresStore) -> Iterator[PostgresStore]:
    """A second daemon's store on the same schema."""
    other = PostgresStore(store._conninfo, migrate=False)
    try:
        yield other
    finally:
        other.close()


# -- PostgreSQL: what only a store shared by many daemons holds --------------------------


@pytest.fixture
def pg() -> Iterator[PostgresStore]:
    with postgres_store() as store:
        yield store


def _claim(name: str, host: str = "h1", pid: int = 100) -> NodeClaim:
    return NodeClaim(name, host, pid, 1, "127.0.0.1:1")


def _gone(_: int, __: int | None) -> bool:
    return True


def _alive(_: int, __: int | None) -> bool:
    return False


def _expire(store: PostgresStore, name: str) -> None:
    with psycopg.connect(store._conninfo, autocommit=True) as db:
        db.execute("UPDATE nodes SET expires_at = clock_timestamp() - interval '1 second' "
                   "WHERE name = %s", (name,))


def test_a_node_taken_again_gets_a_new_epoch(pg: PostgresStore) -> None:
    nodes = pg.membership
    assert 1 == nodes.register(_claim("n1"), 30, _alive)
    _expire(pg, "n1")
    assert 2 == nodes.register(_claim("n1", "h2"), 30, _alive)
    assert [("n1", 2, "h2")] == [(n.name, n.epoch, n.host) for n in nodes.nodes()]


def test_a_second_live_daemon_with_the_same_name_is_refused(pg: PostgresStore) -> None:
    nodes = pg.membership
    nodes.register(_claim("n1", "h1"), 30, _alive)
    with pytest.raises(NodeTaken, match=r"node n1: a live daemon holds it \(host h1, pid 100"):
        nodes.register(_claim("n1", "h2"), 30, _gone)  # another host: its liveness unknown
    with pytest.raises(NodeTaken):
        nodes.register(_claim("n1", "h1", 200), 30, _alive)  # same host, holder alive


def test_a_restart_on_the_same_host_takes_the_node_at_once(pg: PostgresStore) -> None:
    """The daemon that held it from this host is gone: no need to wait out its lease."""
    nodes = pg.membership
    nodes.register(_claim("n1", "h1", 100), 30, _alive)
    assert 2 == nodes.register(_claim("n1", "h1", 200), 30, _gone)


def test_a_lease_is_renewed_only_while_valid_and_its_own(pg: PostgresStore) -> None:
    nodes = pg.membership
    epoch = nodes.register(_claim("n1"), 30, _alive)
    assert nodes.renew("n1", epoch, 30)
    assert not nodes.renew("n1", epoch + 1, 30)
    _expire(pg, "n1")
    assert not nodes.renew("n1", epoch, 30)  # lapsed: renewing it would revive a lost node


def test_a_fenced_store_writes_nothing_once_its_lease_lapsed(pg: PostgresStore) -> None:
    nodes = pg.membership
    epoch = nodes.register(_claim("n1"), 30, _alive)
    nodes.fence("n1", epoch)
    with pg.transaction() as tx:
        tx.insert_event(NewEvent("manual/1", "a", "manual", "m", T0))
    _expire(pg, "n1")
    with pytest.raises(LeaseLost, match="node n1's lease"), pg.transaction() as tx:
        tx.insert_event(NewEvent("manual/2", "a", "manual", "m", T0))
    nodes.fence("n1", nodes.register(_claim("n1"), 30, _alive))
    with pg.transaction() as tx:
        assert ["manual/1"] == [e.delivery_id for e in tx.new_events(10)]


def test_an_expired_node_is_swept_once_and_not_while_its_last_transaction_runs(
        pg: PostgresStore) -> None:
    nodes = pg.membership
    nodes.fence("n1", nodes.register(_claim("n1"), 30, _alive))
    with _beside(pg) as other:
        other.membership.register(_claim("n2"), 30, _alive)
        passed, release = threading.Event(), threading.Event()

        def late_transaction() -> None:
            with pg.transaction():  # passed the fence: holds n1's row in key-share mode
                passed.set()
                release.wait(30)

        thread = threading.Thread(target=late_transaction)
        thread.start()
        assert passed.wait(30)
        _expire(pg, "n1")
        try:
            with other.transaction() as tx:
                assert [] == tx.lost_nodes("n2", 10)  # skipped, not waited for
        finally:
            release.set()
            thread.join()
        with other.transaction() as tx:
            lost = tx.lost_nodes("n2", 10)
            assert [("n1", 1)] == lost
            tx.retire_node("n1", 1, "n2")
        with other.transaction() as tx:
            assert [] == tx.lost_nodes("n2", 10)
        assert [("n1", "n2")] == [(n.name, n.retired_by) for n in nodes.nodes()
                                  if n.retired_at is not None]


def test_a_job_claimed_by_one_daemon_is_refused_to_another_until_it_commits(
        pg: PostgresStore) -> None:
    with _beside(pg) as other:
        claimed, release = threading.Event(), threading.Event()

        def hold() -> None:
            with pg.transaction() as tx:
                assert tx.claim_job("a")
                claimed.set()
                release.wait(30)

        thread = threading.Thread(target=hold)
        thread.start()
        assert claimed.wait(30)
        try:
            with other.transaction() as tx:
                assert not tx.claim_job("a")
                assert tx.claim_job("b")
        finally:
            release.set()
            thread.join()
        with other.transaction() as tx:
            assert tx.claim_job("a")


def test_the_store_clock_is_the_database_clock(pg: PostgresStore) -> None:
    with psycopg.connect(pg._conninfo) as db:
        row = db.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None
    assert abs((pg.membership.now() - row[0]).total_seconds()) < 5


def test_daemons_sending_at_once_each_claim_different_notifications(pg: PostgresStore) -> None:
    """Each due notification is claimed by one daemon's pass (its next try moved ahead),
    so the daemons sharing the state send it once; the claim lapses if that daemon dies."""
    with pg.transaction() as tx:
        for run_id in ("r1", "r2", "r3"):
            tx.insert_notification(run_id, "ops", "{}", T0)
    with _beside(pg) as other:
        with pg.transaction() as tx:
            first = [n.run_id for n in tx.due_notifications(T0, 2)]
        with other.transaction() as tx:
            second = [n.run_id for n in tx.due_notifications(T0, 10)]
        with other.transaction() as tx:
            assert [] == tx.due_notifications(T0 + timedelta(seconds=60), 10)
            lapsed = tx.due_notifications(T0 + timedelta(minutes=3), 10)
    assert (["r1", "r2"], ["r3"]) == (first, second)
    assert ["r1", "r2", "r3"] == [n.run_id for n in lapsed]
    assert all(n.next_at == T0 + timedelta(seconds=120) for n in lapsed)  # when each was due


def test_a_trigger_accepted_outside_an_engine_wakes_the_listening_daemons(
        pg: PostgresStore) -> None:
    woken = threading.Event()
    listening = pg.membership.listen(woken.set)
    try:
        assert woken.wait(10)  # once at the start: whatever was committed unheard
        woken.clear()
        with pg.transaction() as tx:
            tx.insert_event(NewEvent("manual/1", "a", "manual", "m", T0))
        assert woken.wait(10)
        woken.clear()
        nodes = pg.membership
        nodes.fence("n1", nodes.register(_claim("n1"), 30, _alive))
        with pg.transaction() as tx:  # an engine's own firing: it routes it itself
            tx.insert_event(NewEvent("timer/2", "a", "timer", "t", T0))
            tx.update_run("none", cancel_reason="cancelled")  # a stop for another node
        assert woken.wait(10)
    finally:
        listening.close()


def test_a_job_claimed_in_one_schema_is_not_held_in_another(pg: PostgresStore) -> None:
    """Advisory locks belong to the database, not to a schema: two states in one database
    (two clusters, each in its schema) with a job of the same name must not hold each
    other's claims."""
    with postgres_store() as elsewhere, pg.transaction() as tx:
        assert tx.claim_job("a")
        with elsewhere.transaction() as other:
            assert other.claim_job("a")


def test_triggers_commit_in_the_order_of_their_seqs(pg: PostgresStore) -> None:
    """A transaction accepting triggers waits for one that accepted before it to commit, so
    no trigger commits with a seq lower than one already visible: routers on other daemons
    meet each job's triggers in acceptance order."""
    inserted, release = threading.Event(), threading.Event()
    first: list[int | None] = []

    def hold() -> None:
        with pg.transaction() as tx:
            first.append(tx.insert_event(NewEvent("webhook/j/1", "j", "webhook", "w", T0)))
            inserted.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert inserted.wait(30)
    second: list[int | None] = []
    with _beside(pg) as other:
        def accept() -> None:
            with other.transaction() as tx:
                second.append(tx.insert_event(NewEvent("webhook/j/2", "j", "webhook", "w",
                                                       T0)))

        accepting = threading.Thread(target=accept)
        accepting.start()
        try:
            with psycopg.connect(pg._conninfo, autocommit=True) as db:
                deadline = time.monotonic() + 30
                while not db.execute(  # the second waits for the first, on the intake lock
                        "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                        " AND classid = %s", (INTAKE_LOCK,)).fetchone():
                    assert time.monotonic() < deadline
                    time.sleep(0.01)
            assert [] == second
        finally:
            release.set()
            holder.join()
            accepting.join()
    assert first[0] is not None
    assert second[0] is not None
    assert first[0] < second[0]
