"""Two engines sharing one PostgreSQL store, as two daemons do: a run's end on one node and a
trigger routed on the other at the same moment leave nothing waiting for good."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from cronduit.core.config import load_config
from cronduit.core.enums import EventState
from cronduit.engine import CONTENDED_RETRY, Engine
from cronduit.ports import NewEvent
from cronduit.store.postgres import PostgresStore
from cronduit.testing import FakeClock, FakeRunner, Launched
from tests.helpers.postgres import fresh_schema, in_schema

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
CONFIG = "jobs:\n  j:\n    run: ./j\n"


@pytest.fixture
def two_stores() -> Iterator[tuple[PostgresStore, PostgresStore]]:
    with fresh_schema() as schema:
        here, there = PostgresStore(in_schema(schema)), PostgresStore(in_schema(schema))
        try:
            yield here, there
        finally:
            here.close()
            there.close()


def _a_run_going_on_a(here: PostgresStore) -> tuple[FakeClock, FakeRunner, Engine, Launched]:
    """Node a's engine, with the run of j's first trigger going on it."""
    clock, runner = FakeClock(T0), FakeRunner()
    config = load_config(CONFIG, "test.yaml")
    engine = Engine(config, here, runner, node="a", shared=True)
    engine.apply(config, clock.now())
    engine.start(clock.now())
    with here.transaction() as tx:
        tx.insert_event(NewEvent("manual/1", "j", "manual", "manual 1", clock.now()))
    engine.tick(clock.now())
    [first] = runner.launched
    return clock, runner, engine, first


def test_a_run_ending_while_another_node_routes_its_jobs_trigger_starts_that_trigger(
        two_stores: tuple[PostgresStore, PostgresStore]) -> None:
    """Node b routes a trigger of ``j`` while j's run goes on node a: b holds j's work, reads
    the run as going and leaves the trigger waiting. Meanwhile the run ends on a, which
    cannot take j's work to start what waits. Once b has committed, a looks again (soon, as
    for any contended work) and starts the trigger: it must not wait for a next run's end
    that will never come, since every later trigger queues behind it."""
    here, there = two_stores
    clock, runner, engine, first = _a_run_going_on_a(here)
    with here.transaction() as tx:
        waiting = tx.insert_event(NewEvent("manual/2", "j", "manual", "manual 2", clock.now()))
    assert waiting is not None

    with there.transaction() as routing:  # node b's routing, as far as its commit
        assert routing.claim_job("j")
        assert (1, 0) == routing.active_count("j")
        routing.set_event_state([waiting], EventState.WAITING, None)
        runner.finish(first.run.id, 0)
        due = engine.tick(clock.now())  # the run ends on a; j's work is b's
        assert due is not None
        assert due <= clock.now() + CONTENDED_RETRY
    assert 1 == len(runner.launched)

    engine.tick(clock.now() + CONTENDED_RETRY)
    assert ["manual/1", "manual/2"] == [launch.trigger.delivery_id
                                        for launch in runner.launched]
    with here.transaction() as tx:
        event = tx.event_by_delivery("manual/2")
    assert event is not None
    assert EventState.CONSUMED == event.state


def test_a_trigger_meets_its_jobs_work_after_the_older_one_another_router_holds(
        two_stores: tuple[PostgresStore, PostgresStore]) -> None:
    """Routers on two nodes take new triggers skipping those another holds. While node b's
    router holds j's older trigger (its row locked, j's work not claimed), node a must not
    route j's newer one: a job's triggers meet its work in the order they were accepted
    (the core refuses a trigger older than the work it joins). Once b lets go, a routes
    both, oldest first."""
    here, there = two_stores
    clock, runner, engine, first = _a_run_going_on_a(here)
    with here.transaction() as tx:
        older = tx.insert_event(NewEvent("manual/2", "j", "manual", "manual 2", clock.now()))
        tx.insert_event(NewEvent("manual/3", "j", "manual", "manual 3", clock.now()))

    with there.transaction() as routing:  # node b's router holds the older trigger
        assert [older] == [event.seq for event in routing.new_events(1)]
        due = engine.tick(clock.now())
        assert due is not None
        assert due <= clock.now() + CONTENDED_RETRY
        with here.transaction() as tx:
            assert ["manual/3"] == [event.delivery_id for event in tx.new_events(10)]

    engine.tick(clock.now() + CONTENDED_RETRY)
    runner.finish(first.run.id, 0)
    engine.tick(clock.now() + CONTENDED_RETRY)
    assert 2 == len(runner.launched)
    with here.transaction() as tx:
        assert ["manual/2", "manual/3"] == [event.delivery_id
                                            for event in tx.events_of_run(
                                                runner.launched[1].run.id)]


def test_a_node_prunes_the_files_of_its_own_runs_only(
        two_stores: tuple[PostgresStore, PostgresStore]) -> None:
    """A run's files are on the host that ran it: a node ending a run prunes only its own
    old runs. Pruning another node's would mark them pruned with their files left on that
    host for good, and two nodes pruning each other's rows in different orders deadlock."""
    here, there = two_stores
    clock = FakeClock(T0)
    config = load_config("settings:\n  kept_runs: 1\n" + CONFIG, "test.yaml")
    engines = {}
    for name, store in (("a", here), ("b", there)):
        runner = FakeRunner()
        engines[name] = (Engine(config, store, runner, node=name, shared=True), runner)
        engines[name][0].apply(config, clock.now())
        engines[name][0].start(clock.now())
    for n, name in enumerate("aab"):
        engine, runner = engines[name]
        with here.transaction() as tx:
            tx.insert_event(NewEvent(f"manual/{n}", "j", "manual", f"manual {n}", clock.now()))
        engine.tick(clock.now())
        runner.finish(runner.launched[-1].run.id, 0)
        engine.tick(clock.now())
    ran_on_a = [launch.run.id for launch in engines["a"][1].launched]
    assert ([ran_on_a[0]], []) == (engines["a"][1].pruned, engines["b"][1].pruned)
    with here.transaction() as tx:
        kept = {run.id: run.files_pruned for run in tx.history("j", 10)}
    assert {ran_on_a[0]: True, ran_on_a[1]: False} == {run: kept[run] for run in ran_on_a}
