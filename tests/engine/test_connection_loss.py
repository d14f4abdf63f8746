"""The engine on PostgreSQL when the server ends its connections in the middle of a tick, as
a restart (a fast shutdown) does: what a commit made before the loss is carried out once
the server is back, and nothing is done twice.

The connections are really dropped: the server is asked to end the engine's sessions
(``pg_terminate_backend``, as a fast shutdown ends them) at a chosen step of the tick, so
the next statement fails as it does when the server goes away.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import psycopg
import pytest

from cronduit.core.config import load_config
from cronduit.core.enums import EventState, RunState
from cronduit.engine import Engine
from cronduit.ports import NewEvent
from cronduit.store.postgres import POOL_SIZE, PostgresStore
from cronduit.testing import FakeRunner
from tests.helpers.postgres import URL, fresh_schema, in_schema

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)

ALLOW_ONE = """\
jobs:
  poke:
    run: 'true'
    overlap: {default: allow, max_parallel: 1}
"""
"""A job whose second trigger waits while its first run goes (as any ``allow`` job's does
once ``max_parallel`` runs go), and starts when that run ends."""


def drop_sessions(application: str) -> None:
    """End every session of ``application`` on the server, and wait until they are gone."""
    with psycopg.connect(URL, autocommit=True) as db:
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                   "WHERE application_name = %s", (application,))
        deadline = time.monotonic() + 10
        while db.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                         (application,)).fetchone() != (0,):
            assert time.monotonic() < deadline, "the server did not end the sessions"
            time.sleep(0.01)


@dataclass
class Dropping:
    """A store whose sessions the test has the server end (:meth:`drop`), and a reader on
    the same schema whose own sessions stay."""

    store: PostgresStore
    reader: PostgresStore
    application: str

    def drop(self) -> None:
        drop_sessions(self.application)


@pytest.fixture
def dropping() -> Iterator[Dropping]:
    application = f"cronduit-drop-{uuid.uuid4().hex[:12]}"
    with fresh_schema("drop") as schema:
        store = PostgresStore(psycopg.conninfo.make_conninfo(
            in_schema(schema), application_name=application))
        reader = PostgresStore(in_schema(schema), migrate=False)
        try:
            yield Dropping(store, reader, application)
        finally:
            reader.close()
            store.close()


def tick_once_connected(engine: Engine, now: datetime) -> None:
    """Tick as the daemon's loop does after a fault, until a tick goes through: each pooled
    connection the server ended fails once, the first transaction that takes it."""
    for _ in range(POOL_SIZE + 1):
        try:
            engine.tick(now)
        except psycopg.OperationalError:
            continue
        return
    raise AssertionError("no tick went through")


def test_a_run_its_first_commit_started_is_launched_though_the_second_lost_the_server(
        dropping: Dropping) -> None:
    """A run ends; the tick's first commit records the end and starts the run of the trigger
    that waited for it; then the server ends the connections, and the tick's second
    transaction fails. The run committed as started is launched all the same (it begins
    right after the first commit, before the second transaction), once, and the first
    commit's lines are logged: before, they were dropped with the failed tick, and the run
    stayed ``running`` with no process, its trigger consumed, until the daemon restarted."""
    store, reader = dropping.store, dropping.reader
    runner, lines = FakeRunner(), list[str]()
    dropping_at: set[str] = set()

    def checkpoint(step: str) -> None:
        if step in dropping_at:
            dropping_at.discard(step)
            dropping.drop()

    config = load_config(ALLOW_ONE, "test.yaml")
    engine = Engine(config, store, runner, log=lines.append, checkpoint=checkpoint)
    engine.apply(config, T0)
    engine.start(T0)
    with store.transaction() as tx:
        for n in (1, 2):
            tx.insert_event(NewEvent(f"webhook/poke/{n}", "poke", "webhook", "webhook", T0))
    engine.tick(T0)
    [first] = runner.launched
    with store.transaction() as tx:
        second = tx.event_by_delivery("webhook/poke/2")
    assert second is not None
    assert EventState.WAITING == second.state

    runner.finish(first.run.id, 0)
    dropping_at.add("ended")  # right after the first commit: the end and the next start
    with pytest.raises(psycopg.OperationalError):
        engine.tick(T0)
    with reader.transaction() as tx:
        ended = tx.get_run(first.run.id)
        waited = tx.event_by_delivery("webhook/poke/2")
    assert ended is not None
    assert RunState.ENDED == ended.state
    assert waited is not None
    assert (EventState.CONSUMED, [first.run.id, waited.run_id]) == (
        waited.state, [run.run.id for run in runner.launched])

    tick_once_connected(engine, T0)
    assert [first.run.id, waited.run_id] == [run.run.id for run in runner.launched]
    engine.tick(T0)  # records its pid
    with reader.transaction() as tx:
        started = tx.get_run(str(waited.run_id))
    assert started is not None
    assert (RunState.RUNNING, runner.launched[1].pid) == (started.state, started.pid)
    engine.tick(T0)
    assert 2 == len(runner.launched)
    assert {f"run poke {first.run.id}: success after 0.0s",
            f"run poke {waited.run_id}: started [webhook]"} <= set(lines), lines
