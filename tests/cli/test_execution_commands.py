"""``cronduit execution list | inspect | resume | abandon`` and the step parts of ``job
history`` and ``job logs``, against a real store with no daemon running (SPEC §8)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cronduit.cli import cli
from cronduit.cli.context import Runtime
from cronduit.core.config import load_config
from cronduit.core.enums import ExecutionState, RunState, StepState
from cronduit.core.steps import definition_hash
from cronduit.paths import StatePaths
from cronduit.ports import Execution, Run, StepAttempt, Store
from cronduit.store import open_store
from cronduit.testing import FakeClock

T0 = datetime(2026, 6, 1, 4, 0, tzinfo=UTC)
CONFIG = """\
settings: {state: state}
jobs:
  etl:
    steps:
      - {id: sync, run: ./sync, outputs: [SNAPSHOT]}
      - {id: index, run: ./index, inputs: {FROM: sync.SNAPSHOT}}
"""


@dataclass
class Install:
    path: Path
    store: Store
    clock: FakeClock = field(default_factory=lambda: FakeClock(T0))

    def invoke(self, *args: str) -> Result:
        runtime = Runtime(clock=self.clock, sleep=lambda _: None, nudge=lambda _: None)
        return CliRunner().invoke(cli, [*args, "-c", str(self.path)], obj=runtime)

    def failed_execution(self) -> Execution:
        """An execution whose run r1 did sync (saved SNAPSHOT) and failed index twice."""
        job = load_config(CONFIG, str(self.path)).jobs["etl"]
        execution = Execution("x1", "etl", definition_hash(job), '{"LEVEL": "high"}',
                              ExecutionState.FAILED, T0, T0 + timedelta(days=7), T0,
                              run_id="r1", failed_step="index")
        with self.store.transaction() as tx:
            tx.insert_run(Run(id="r1", job="etl", kind="manual", label="manual",
                              state=RunState.ENDED, created_at=T0, started_at=T0,
                              finished_at=T0, attempts=3, outcome="failure",
                              reason="step index: exit status 4", exclusive=False,
                              execution_id="x1"))
            tx.insert_execution(execution, ["sync", "index"])
            tx.update_step("x1", "sync", state=StepState.DONE, outputs='{"SNAPSHOT":"s-1"}',
                           attempts=1, done_at=T0, run_id="r1")
            tx.update_step("x1", "index", state=StepState.FAILED, attempts=2, run_id="r1")
            for number, step, outcome, status in ((1, "sync", "success", 0),
                                                  (2, "index", "failure", 4),
                                                  (3, "index", "failure", 4)):
                tx.insert_step_attempt(StepAttempt("x1", step, f"a{number}", "r1", number, T0))
                tx.end_step_attempt("r1", number, T0, status, outcome,
                                    "" if status == 0 else "exit status 4")
        return execution


@pytest.fixture
def install(tmp_path: Path) -> Iterator[Install]:
    path = tmp_path / "cronduit.yaml"
    path.write_text(CONFIG)
    store = open_store(load_config(CONFIG, str(path)), path)
    yield Install(path, store)
    store.close()


def test_list_shows_state_steps_done_and_the_failed_step(install: Install) -> None:
    install.failed_execution()
    table = install.invoke("execution", "list")
    assert 0 == table.exit_code, table.output
    assert "x1" in table.output
    assert "failed" in table.output
    assert "1/2" in table.output
    [line] = install.invoke("execution", "list", "--json", "--job", "etl").output.splitlines()
    assert {"execution": "x1", "state": "failed", "steps_done": 1, "steps": 2,
            "failed_step": "index", "activations": 1} == {
        key: json.loads(line)[key] for key in ("execution", "state", "steps_done", "steps",
                                               "failed_step", "activations")}
    assert "no executions recorded" in install.invoke("execution", "list", "--job",
                                                      "other").output


def test_inspect_gives_inputs_steps_attempts_outputs_and_resumability(install: Install) -> None:
    install.failed_execution()
    shown = json.loads(install.invoke("execution", "inspect", "x1", "--json").output)
    assert {"LEVEL": "high"} == shown["inputs"]
    assert (True, None) == (shown["resumable"], shown["why_not"])
    sync, index = shown["step_details"]
    assert ("done", {"SNAPSHOT": "s-1"}, ["a1"]) == (
        sync["state"], sync["outputs"], [t["attempt_id"] for t in sync["tries"]])
    assert ("failed", [("r1", 2, "runs/r1/attempt-2.log"), ("r1", 3, "runs/r1/attempt-3.log")]
            ) == (index["state"], [(t["run"], t["attempt"], t["log"]) for t in index["tries"]])
    text = install.invoke("execution", "inspect", "x1").output
    assert "resumable: yes" in text
    assert "outputs of sync: SNAPSHOT=s-1" in text
    missing = install.invoke("execution", "inspect", "nope")
    assert 1 == missing.exit_code
    assert missing.output.strip().endswith("no execution nope")


def test_resume_accepts_one_trigger_and_abandon_ends_resumability(install: Install) -> None:
    """resume: a trigger naming the execution (twice is one); abandon: then resume refused."""
    install.failed_execution()
    first = install.invoke("execution", "resume", "x1")
    again = install.invoke("execution", "resume", "x1")
    assert (0, 0) == (first.exit_code, again.exit_code), first.output
    with install.store.transaction() as tx:
        [event] = [e for e in tx.new_events(10) if e.job == "etl"]
    assert ("resume/x1/2", {"resume": "x1"}) == (event.delivery_id, dict(event.payload.fields))
    done = install.invoke("execution", "abandon", "x1")
    assert (0, "execution x1 of etl: abandoned\n") == (done.exit_code, done.output)
    refused = install.invoke("execution", "resume", "x1")
    assert 3 == refused.exit_code
    assert "cannot be resumed: it was abandoned" in refused.output
    twice = install.invoke("execution", "abandon", "x1")
    assert (3, True) == (twice.exit_code, "abandoned already" in twice.output)


def test_history_json_carries_the_execution_and_each_step_attempt(install: Install) -> None:
    install.failed_execution()
    [line] = install.invoke("job", "history", "etl", "--json").output.splitlines()
    record = json.loads(line)
    assert "x1" == record["execution"]
    assert [("sync", 1, "success"), ("index", 2, "failure"), ("index", 3, "failure")] == [
        (s["step"], s["attempt"], s["outcome"]) for s in record["steps"]]


def test_logs_print_each_step_attempt_or_the_one_asked_for(install: Install,
                                                           tmp_path: Path) -> None:
    install.failed_execution()
    paths = StatePaths(tmp_path / "state")
    paths.run("r1").mkdir(parents=True, exist_ok=True)
    for number in (1, 2, 3):
        paths.step_log("r1", number).write_text(f"log of attempt {number}\n")
    every = install.invoke("job", "logs", "etl", "--run", "r1")
    assert 0 == every.exit_code, every.output
    assert ["log of attempt 1", "log of attempt 2", "log of attempt 3"] == [
        line for line in every.stdout.splitlines() if line.startswith("log of")]
    assert "attempt 2 of run r1: step index (attempt id a2)" in every.stderr
    one = install.invoke("job", "logs", "etl", "--run", "r1", "--attempt", "2")
    assert "log of attempt 2\n" == one.stdout
    latest = install.invoke("job", "logs", "etl", "--run", "r1", "--step", "index")
    assert "log of attempt 3\n" == latest.stdout
    wrong = install.invoke("job", "logs", "etl", "--run", "r1", "--step", "nope")
    assert 2 == wrong.exit_code
