"""What only the PostgreSQL backend has to show: its schema, its row locks, its sequences, its
driver's errors as outages, and how a URL names its schema. The contract itself runs on it
through the ``store`` fixture (conftest.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from cronduit.core.config.model import Config, Settings
from cronduit.core.enums import RunState
from cronduit.faults import reason_of
from cronduit.ports import Conflict, NewEvent, Run, Timer, Transaction
from cronduit.store import open_store
from cronduit.store.postgres import LATEST, PostgresStore
from tests.helpers.postgres import (
    URL,
    fresh_schema,
    in_schema,
    postgres_store,
    require_server,
)

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def pg() -> Iterator[PostgresStore]:
    with postgres_store() as store:
        yield store


def _describe(db: psycopg.Connection[Any], schema: str) -> dict[str, list[tuple[Any, ...]]]:
    """A schema's tables by their columns, constraints, indexes and triggers, its views and
    its functions (names without the schema), leaving out the migrations' own bookkeeping."""
    args = {"schema": schema}
    columns = db.execute(
        "SELECT table_name, column_name, ordinal_position, data_type, is_nullable, "
        "column_default, is_identity FROM information_schema.columns "
        "WHERE table_schema = %(schema)s AND table_name <> 'schema_version' "
        "ORDER BY 1, 3", args).fetchall()
    constraints = db.execute(
        "SELECT c.relname, k.conname, k.contype, "
        "replace(pg_get_constraintdef(k.oid), %(schema)s || '.', '') "
        "FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %(schema)s AND c.relname <> 'schema_version' ORDER BY 1, 2",
        args).fetchall()
    indexes = db.execute(
        "SELECT tablename, indexname, replace(indexdef, %(schema)s || '.', '') FROM pg_indexes "
        "WHERE schemaname = %(schema)s AND tablename <> 'schema_version' ORDER BY 1, 2",
        args).fetchall()
    views = db.execute(
        "SELECT viewname, replace(definition, %(schema)s || '.', '') FROM pg_views "
        "WHERE schemaname = %(schema)s ORDER BY 1", args).fetchall()
    functions = db.execute(
        "SELECT p.proname, replace(pg_get_functiondef(p.oid), %(schema)s || '.', '') "
        "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = %(schema)s ORDER BY 1", args).fetchall()
    triggers = db.execute(
        "SELECT c.relname, t.tgname, replace(pg_get_triggerdef(t.oid), %(schema)s || '.', '') "
        "FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %(schema)s AND NOT t.tgisinternal ORDER BY 1, 2", args).fetchall()
    return {"columns": columns, "constraints": constraints, "indexes": indexes,
            "views": views, "functions": functions, "triggers": triggers}


def test_the_migrations_add_up_to_the_schema() -> None:
    """Applying every numbered PostgreSQL migration gives exactly its schema.sql."""
    text = resources.files("cronduit.store.pg").joinpath("schema.sql").read_text()
    with fresh_schema() as migrated, fresh_schema() as documented:
        PostgresStore(in_schema(migrated)).close()
        with psycopg.connect(in_schema(documented), autocommit=True) as db:
            db.execute(text.encode())
            described = _describe(db, documented)
            assert len(described["columns"]) > 80
            # the states (of events, runs, notifications, executions and their steps), a
            # slot's fate, a step attempt's outcome and an execution's activations
            assert 8 == sum(1 for row in described["constraints"] if row[2] == "c")
            # each job's run facts: kept by four triggers on runs (five functions), read and
            # counted again through two views
            assert (4, 5, 2) == (len(described["triggers"]), len(described["functions"]),
                                 len(described["views"]))
            assert described == _describe(db, migrated)


def test_migrating_twice_changes_nothing(pg: PostgresStore) -> None:
    """Opening an up-to-date database applies no migration again."""
    assert LATEST == pg.migrate()
    PostgresStore(pg._conninfo).close()
    with psycopg.connect(pg._conninfo) as db:
        versions = db.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
        assert [(version,) for version in range(1, LATEST + 1)] == versions


def _holding(store: PostgresStore, claim: Callable[[Transaction], list[Any]]
             ) -> tuple[threading.Thread, list[list[Any]], threading.Event, threading.Event]:
    """A transaction on another thread that claims rows and holds them until told."""
    claimed: list[list[Any]] = []
    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        with store.transaction() as tx:
            claimed.append(claim(tx))
            holding.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    assert holding.wait(30)
    return thread, claimed, holding, done


def test_due_timers_skip_the_timers_another_transaction_claimed(pg: PostgresStore) -> None:
    """FOR UPDATE SKIP LOCKED: two daemons firing at once each get timers of their own,
    without waiting for each other."""
    with pg.transaction() as tx:
        tx.put_timers([Timer(job, "cron", T0, "n", T0, None) for job in ("a", "b", "c")])
    thread, claimed, _, done = _holding(pg, lambda tx: tx.due_timers(T0, 1))
    try:
        with pg.transaction() as tx:
            others = tx.due_timers(T0, 10)
    finally:
        done.set()
        thread.join()
    assert [["a"]] == [[t.job for t in batch] for batch in claimed]
    assert ["b", "c"] == [t.job for t in others]


def test_new_events_skip_the_events_another_router_claimed(pg: PostgresStore) -> None:
    """An event is routed once even with routers on many daemons."""
    with pg.transaction() as tx:
        tx.insert_events([NewEvent(f"manual/{n}", "report", "manual", "m", T0)
                          for n in range(3)])
    thread, claimed, _, done = _holding(pg, lambda tx: tx.new_events(2))
    try:
        with pg.transaction() as tx:
            others = tx.new_events(10)
    finally:
        done.set()
        thread.join()
    assert [["manual/0", "manual/1"]] == [[e.delivery_id for e in batch] for batch in claimed]
    assert ["manual/2"] == [e.delivery_id for e in others]


def test_batches_accepted_side_by_side_get_the_seqs_the_database_gave(
        pg: PostgresStore) -> None:
    """Two transactions accepting batches at once: every event gets a seq of its own, and
    each batch's answer is the seqs its events were stored under (the SQLite backend's way,
    the last seq plus one, would give both batches the same). The second waits on the
    intake lock the first holds to its commit (so seqs rise in commit order): it runs on a
    thread of its own, and the first commits while it waits."""
    def batch(name: str) -> list[NewEvent]:
        return [NewEvent(f"{name}/{n}", "report", "manual", "m", T0) for n in range(3)]

    first, second = _racing(pg, lambda tx: tx.insert_events(batch("a")),
                            lambda tx: tx.insert_events(batch("b")))
    assert 6 == len(set(first + second))
    with pg.transaction() as tx:
        stored = [tx.event_by_delivery(e.delivery_id) for e in batch("a") + batch("b")]
    assert first + second == [e.seq for e in stored if e is not None]


def _racing(store: PostgresStore, first: Callable[[Transaction], Any],
            second: Callable[[Transaction], Any]) -> tuple[Any, Any]:
    """``first`` writes and holds its transaction open while ``second`` starts on another
    thread (where it waits on ``first``'s row or key, or runs after its commit: the outcome
    must be the same); then ``first`` commits. What each gave."""
    thread, claimed, _, done = _holding(store, lambda tx: [first(tx)])
    answers: list[Any] = []

    def race() -> None:
        try:
            with store.transaction() as tx:
                answers.append(second(tx))
        except Exception as error:  # what the second transaction met, for the assertion
            answers.append(error)

    racer = threading.Thread(target=race)
    racer.start()
    done.set()
    thread.join()
    racer.join(30)
    return claimed[0][0], answers[0]


def test_of_two_firings_of_one_timer_version_only_the_first_moves_it(
        pg: PostgresStore) -> None:
    """The version guard is one atomic step per row: the later firing counts 0 and must roll
    back its batch, though both read version 0."""
    armed = Timer("a", "cron", T0, "n", T0, None)
    with pg.transaction() as tx:
        tx.put_timers([armed])
    moved = Timer("a", "cron", T0 + timedelta(hours=1), "n2", T0 + timedelta(hours=1), "n")
    first, second = _racing(pg, lambda tx: tx.advance_timers([(moved, 0)]),
                            lambda tx: tx.advance_timers([(moved, 0)]))
    assert (1, 0) == (first, second)
    with pg.transaction() as tx:
        assert 1 == (tx.get_timer("a") or armed).version


def test_of_two_exclusive_runs_started_at_once_the_later_is_refused(
        pg: PostgresStore) -> None:
    """One exclusive run of a job in progress, across daemons: a unique key."""
    def start(run_id: str) -> Callable[[Transaction], Any]:
        return lambda tx: tx.insert_run(Run(id=run_id, job="report", kind="timer",
                                            label="cron", state=RunState.RUNNING,
                                            created_at=T0))

    first, second = _racing(pg, start("r1"), start("r2"))
    assert first is None
    assert isinstance(second, Conflict)
    with pg.transaction() as tx:
        assert ["r1"] == [r.id for r in tx.active_runs("report")]


def test_one_delivery_accepted_twice_at_once_is_one_event(pg: PostgresStore) -> None:
    """The second acceptance waits for the first's key and gets None once it commits."""
    def accept(tx: Transaction) -> int | None:
        return tx.insert_event(NewEvent("hook/1", "report", "webhook", "w", T0))

    first, second = _racing(pg, accept, accept)
    assert isinstance(first, int)
    assert second is None


def test_a_server_that_cannot_be_reached_is_an_outage_with_its_reason() -> None:
    """Connection refused, a server shutting down, a full disk: the daemon lives through
    them (cronduit.faults), each with its driver's reason; a constraint is no outage."""
    with pytest.raises(psycopg.OperationalError) as refused:
        PostgresStore("postgresql://postgres@127.0.0.1:9/test?connect_timeout=5")
    assert "refused" in (reason_of(refused.value) or "")
    assert "could not extend file" == reason_of(psycopg.errors.DiskFull("could not extend file"))
    assert reason_of(psycopg.errors.AdminShutdown("terminating connection")) is not None
    assert reason_of(psycopg.errors.UniqueViolation("duplicate key")) is None


def test_a_connection_the_server_dropped_fails_one_transaction_only() -> None:
    """The pool gives the next transaction a new connection: an administrator's
    pg_terminate_backend is an outage of one transaction, with its reason."""
    with fresh_schema() as schema:
        pg = PostgresStore(in_schema(schema), pool_size=1)  # the one connection is dropped
        try:
            _drop_the_connection(pg)
        finally:
            pg.close()


def _drop_the_connection(pg: PostgresStore) -> None:
    with pg.transaction() as tx:
        tx.set_meta("k", "v")
        pid = tx._cursor.connection.info.backend_pid  # type: ignore[attr-defined]
    with psycopg.connect(URL, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(psycopg.OperationalError) as lost, pg.transaction() as tx:
        tx.get_meta("k")
    assert reason_of(lost.value)
    with pg.transaction() as tx:
        assert "v" == tx.get_meta("k")


def test_open_store_opens_the_schema_a_url_names(tmp_path: Path) -> None:
    """``settings.state: postgresql://…?options=-csearch_path%3Dname`` puts the tables in
    that schema, as libpq's own option says."""
    with fresh_schema() as schema:
        url = f"{URL}?options=-csearch_path%3D{schema}"
        store = open_store(Config(settings=Settings(state=url), filename="c.yaml"),
                           tmp_path / "c.yaml")
        try:
            with store.transaction() as tx:
                tx.set_meta("where", schema)
        finally:
            store.close()
        with psycopg.connect(URL) as db:
            assert (schema,) == db.execute(
                sql.SQL("SELECT value FROM {}.meta").format(sql.Identifier(schema))).fetchone()


@pytest.mark.parametrize("where", ["127.0.0.1:1/test", "127.0.0.1:5432/test"])
def test_a_failed_connection_names_its_reason_never_the_password(where: str) -> None:
    """SPEC §10: the database password never appears in an error or a log line. A refused
    port, and a server that knows no such role, are each a fault whose reason is libpq's own
    words, without the URL's secret part."""
    if where.endswith(":5432/test"):
        require_server()
    url = f"postgresql://nobody_here:s3cret-Pw-42@{where}"
    with pytest.raises(psycopg.OperationalError) as raised:
        PostgresStore(url)
    reason = reason_of(raised.value)
    assert reason is not None
    assert "s3cret-Pw-42" not in reason
    assert "s3cret-Pw-42" not in str(raised.value)
