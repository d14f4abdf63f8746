"""Many engines on one PostgreSQL store, as many daemons on many hosts run them (SPEC §10):
each slot fires once, a job's work is decided by one node at a time, runs stay with the node
that started them, and a lost node's runs are recorded and retried elsewhere.

Each node is an engine with its own store (its own connections, fenced by its own lease),
its own fake runner (its host's processes) and the test's fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from cronduit.core.config import load_config
from cronduit.core.enums import Outcome, RunState
from cronduit.engine import Engine
from cronduit.ports import LeaseLost, NewEvent, NodeClaim, Run
from cronduit.store.postgres import PostgresStore
from cronduit.testing import FakeClock, FakeRunner
from tests.helpers.postgres import fresh_schema, in_schema

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


@dataclass
class Node:
    name: str
    store: PostgresStore
    runner: FakeRunner
    engine: Engine
    epoch: int
    lines: list[str] = field(default_factory=list)


@dataclass
class Cluster:
    url: str
    clock: FakeClock
    reader: PostgresStore
    """Unfenced: the CLI's and the HTTP acceptor's view."""
    nodes: dict[str, Node] = field(default_factory=dict)

    def join(self, name: str, text: str) -> Node:
        store = PostgresStore(self.url)
        epoch = store.membership.register(NodeClaim(name, f"host-{name}", 1, 1), 30,
                                          lambda _, __: False)
        store.membership.fence(name, epoch)
        config = load_config(text, "test.yaml")
        runner = FakeRunner()
        node = Node(name, store, runner, Engine(config, store, runner, node=name, shared=True),
                    epoch)
        node.engine.stage.log = node.lines.append
        node.engine.apply(config, self.clock.now())
        node.engine.start(self.clock.now())
        self.nodes[name] = node
        return node

    def tick(self, *names: str) -> None:
        for name in names or tuple(self.nodes):
            self.nodes[name].engine.tick(self.clock.now())

    def accept(self, delivery: str, job: str, kind: str = "webhook") -> None:
        with self.reader.transaction() as tx:
            tx.insert_event(NewEvent(delivery, job, kind, f"{kind} {delivery}",
                                     self.clock.now()))

    def runs(self, job: str) -> list[Run]:
        with self.reader.transaction() as tx:
            return list(reversed(tx.history(job, 1000)))

    def expire(self, name: str) -> None:
        with psycopg.connect(self.url, autocommit=True) as db:
            db.execute("UPDATE nodes SET expires_at = clock_timestamp() - interval '1 second' "
                       "WHERE name = %s", (name,))


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with fresh_schema() as schema:
        made = Cluster(in_schema(schema), FakeClock(T0), PostgresStore(in_schema(schema)))
        try:
            yield made
        finally:
            for node in made.nodes.values():
                node.store.close()
            made.reader.close()


EVERY_MINUTE = "jobs:\n  tick: {every: 1m, run: x}\n"


def test_each_slot_fires_once_whichever_nodes_tick(cluster: Cluster) -> None:
    for name in ("n1", "n2", "n3"):
        cluster.join(name, EVERY_MINUTE)
    for minute in range(5):
        cluster.clock.set(T0 + timedelta(minutes=minute))
        cluster.tick("n3", "n1", "n2")
        for node in cluster.nodes.values():
            for run_id in node.runner.running():
                node.runner.finish(run_id, 0)
        cluster.tick()
    runs = cluster.runs("tick")
    assert 5 == len(runs)
    assert all(run.outcome == Outcome.SUCCESS for run in runs)
    launched = sum(len(node.runner.launched) for node in cluster.nodes.values())
    assert 5 == launched


def test_a_job_runs_only_on_the_nodes_it_names(cluster: Cluster) -> None:
    text = "jobs:\n  backup: {run: x, nodes: [disk-*]}\n"
    web = cluster.join("web-1", text)
    disk = cluster.join("disk-1", text)
    cluster.accept("manual/1", "backup")
    cluster.tick("web-1")
    assert [] == cluster.runs("backup")  # left for a node the job names
    cluster.tick("disk-1")
    assert [("disk-1", RunState.RUNNING)] == [(r.node, r.state) for r in cluster.runs("backup")]
    assert (0, 1) == (len(web.runner.launched), len(disk.runner.launched))


def test_one_run_at_a_time_holds_across_nodes(cluster: Cluster) -> None:
    text = "jobs:\n  report: {run: x, overlap: queue}\n"
    first = cluster.join("n1", text)
    cluster.join("n2", text)
    cluster.accept("manual/1", "report")
    cluster.tick("n1")
    cluster.accept("manual/2", "report")
    cluster.tick("n2")  # the second waits for the run going on n1
    assert [RunState.RUNNING] == [run.state for run in cluster.runs("report")]
    first.runner.finish(first.runner.running()[0], 0)
    cluster.tick("n1")
    assert [(Outcome.SUCCESS, "n1"), (None, "n1")] == [(r.outcome, r.node)
                                                       for r in cluster.runs("report")]


def test_a_replace_on_one_node_stops_the_run_where_it_goes(cluster: Cluster) -> None:
    text = "jobs:\n  sync: {run: x, overlap: replace}\n"
    owner = cluster.join("n1", text)
    other = cluster.join("n2", text)
    cluster.accept("manual/1", "sync")
    cluster.tick("n1")
    run_id = owner.runner.running()[0]
    cluster.accept("manual/2", "sync")
    cluster.tick("n2")
    assert [] == other.runner.stopped  # not its process to stop
    cluster.tick("n1")
    assert [(run_id, "cancelled")] == owner.runner.stopped
    cluster.tick("n1")  # the stopped attempt's end is recorded; the replacement starts
    assert [Outcome.CANCELLED, None] == [run.outcome for run in cluster.runs("sync")]


def test_a_lost_nodes_runs_are_recorded_and_retried_on_another(cluster: Cluster) -> None:
    text = "jobs:\n  etl: {run: x, retry: {attempts: 2, backoff: 1s}}\n"
    lost = cluster.join("n1", text)
    survivor = cluster.join("n2", text)
    cluster.accept("manual/1", "etl")
    cluster.tick("n1")
    assert ["n1"] == [run.node for run in cluster.runs("etl")]
    cluster.expire("n1")
    survivor.engine.sweep_due = True
    cluster.tick("n2")
    (run,) = cluster.runs("etl")
    assert (RunState.BACKOFF, "node lost (node n1)", None) == (run.state, run.reason, run.node)
    assert any("node n1 lost" in line for line in survivor.lines)
    cluster.clock.advance(timedelta(seconds=1))
    cluster.tick("n2")
    (run,) = cluster.runs("etl")
    assert (RunState.RUNNING, 2, "n2") == (run.state, run.attempts, run.node)
    assert [2] == [launch.attempt for launch in survivor.runner.launched]
    survivor.runner.finish(run.id, 0)
    cluster.tick("n2")
    assert [Outcome.SUCCESS] == [r.outcome for r in cluster.runs("etl")]
    with pytest.raises(LeaseLost):  # the lost node, come back, writes nothing
        lost.engine.tick(cluster.clock.now())
    assert [] == lost.runner.stopped


def test_a_lost_node_without_retry_ends_its_runs_failed_and_the_work_goes_on(
        cluster: Cluster) -> None:
    text = "jobs:\n  report: {run: x, overlap: queue}\n"
    cluster.join("n1", text)
    survivor = cluster.join("n2", text)
    cluster.accept("manual/1", "report")
    cluster.tick("n1")
    cluster.accept("manual/2", "report")
    cluster.tick("n2")  # waits behind the run on n1
    cluster.expire("n1")
    survivor.engine.sweep_due = True
    cluster.tick("n2")
    assert [(Outcome.FAILURE, "node lost (node n1)", "n1"), (None, "", "n2")] == [
        (r.outcome, r.reason, r.node) for r in cluster.runs("report")]


def test_a_restarted_node_adopts_its_own_runs_only(cluster: Cluster) -> None:
    text = "jobs:\n  a: {run: x}\n  b: {run: x}\n"
    one = cluster.join("n1", text)
    two = cluster.join("n2", text)
    cluster.accept("manual/1", "a")
    cluster.tick("n1")
    cluster.accept("manual/2", "b")
    cluster.tick("n2")
    restarted = FakeRunner()
    engine = Engine(one.engine.config, one.store, restarted, node="n1", shared=True)
    engine.start(cluster.clock.now())  # adopts: the fake runner marks what it recovered live
    assert [cluster.runs("a")[0].id] == restarted.running()
    assert [cluster.runs("b")[0].id] == two.runner.running()


def test_work_a_lost_node_left_waiting_starts_on_an_eligible_node_at_its_next_sweep(
        cluster: Cluster) -> None:
    """The sweeper may not run the job (``nodes:``): the trigger that waited behind the lost
    run waits on, and the next node the job may run on starts it at its next sweep."""
    text = "jobs:\n  backup: {run: x, overlap: queue, nodes: [db-*]}\n"
    cluster.join("db-1", text)
    web = cluster.join("web-1", text)
    spare = cluster.join("db-2", text)
    cluster.accept("webhook/1", "backup")
    cluster.tick("db-1")
    cluster.accept("webhook/2", "backup")
    cluster.tick("db-1")  # waits behind the run going
    cluster.expire("db-1")
    web.engine.sweep_due = True
    cluster.tick("web-1")
    assert [(Outcome.FAILURE, "db-1")] == [(r.outcome, r.node) for r in cluster.runs("backup")]
    cluster.tick("db-2")  # an ordinary tick reads new triggers only
    assert [] == spare.runner.launched
    spare.engine.sweep_due = True
    cluster.tick("db-2")
    assert [(Outcome.FAILURE, "db-1"), (None, "db-2")] == [
        (r.outcome, r.node) for r in cluster.runs("backup")]
    assert 1 == len(spare.runner.launched)
