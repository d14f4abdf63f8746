"""The rules of durable multi-step executions (SPEC §8): steps, outputs, resume, abandon."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from cronduit.core.config.model import Job, Retry, Step
from cronduit.core.enums import ExecutionState, StepState
from cronduit.core.steps import (
    MAIN_STEP,
    MAX_ACTIVATIONS,
    ExecutionFacts,
    OutputProblem,
    abandon_refusal,
    definition_hash,
    is_durable,
    job_steps,
    next_step,
    parse_outputs,
    resume_refusal,
    step_variables,
)

T0 = datetime(2026, 6, 1, 4, tzinfo=UTC)
SYNC = Step(id="sync", run="./sync", outputs=("SNAPSHOT",))
INDEX = Step(id="index", command=("./index", "--fast"), outputs=("COUNT", "PATH"),
             inputs={"FROM": "sync.SNAPSHOT"})
PUBLISH = Step(id="publish", run="./publish", inputs={"WHERE": "index.PATH", "N": "index.COUNT"})
STEPS = (SYNC, INDEX, PUBLISH)


def steps_job(*steps: Step, **fields: object) -> Job:
    return Job.model_validate({"name": "etl", "steps": steps or STEPS, **fields})


def test_a_durable_single_command_job_is_one_step_named_main() -> None:
    """``durable:`` alone makes the job's command its one step; steps are the job's own."""
    single = Job.model_validate({"name": "backup", "run": "./backup", "durable": {}})
    [main] = job_steps(single)
    assert (MAIN_STEP, "./backup", None) == (main.id, main.run, main.command)
    assert STEPS == job_steps(steps_job())
    assert is_durable(single)
    assert is_durable(steps_job())
    assert not is_durable(Job(name="plain", run="./x"))


def test_the_definition_hash_changes_with_what_the_steps_do_and_not_with_tuning() -> None:
    """Same steps: same hash; an id, a command, an output, an input or the order changed:
    another; a retry or timeout changed: the same (an operator may give a step more)."""
    base = definition_hash(steps_job())
    assert base == definition_hash(steps_job(*STEPS))
    retried = steps_job(SYNC.model_copy(update={"retry": Retry(attempts=5)}), INDEX, PUBLISH,
                        retry=Retry(attempts=2))
    assert base == definition_hash(retried)
    changed = [
        steps_job(SYNC.model_copy(update={"id": "fetch"}), INDEX.model_copy(
            update={"inputs": {"FROM": "fetch.SNAPSHOT"}}), PUBLISH),
        steps_job(SYNC.model_copy(update={"run": "./sync --all"}), INDEX, PUBLISH),
        steps_job(SYNC, INDEX.model_copy(update={"command": ("./index",)}), PUBLISH),
        steps_job(SYNC.model_copy(update={"outputs": ("SNAPSHOT", "AT")}), INDEX, PUBLISH),
        steps_job(SYNC, INDEX, PUBLISH.model_copy(update={"inputs": {"WHERE": "index.PATH"}})),
        steps_job(SYNC, INDEX),
    ]
    hashes = {definition_hash(job) for job in changed}
    assert len(changed) == len(hashes)
    assert base not in hashes


def test_a_step_gets_its_inputs_from_the_saved_outputs_of_earlier_steps() -> None:
    saved = {"sync": {"SNAPSHOT": "s-1"}, "index": {"COUNT": "12", "PATH": "/srv/i"}}
    assert {"FROM": "s-1"} == step_variables(INDEX, saved)
    assert {"WHERE": "/srv/i", "N": "12"} == step_variables(PUBLISH, saved)
    assert {} == step_variables(SYNC, saved)


def test_the_next_step_is_the_first_not_done_keyed_by_id() -> None:
    assert SYNC == next_step(STEPS, {})
    assert PUBLISH == next_step(STEPS, {"sync": StepState.DONE, "index": StepState.DONE,
                                        "publish": StepState.FAILED})
    assert INDEX == next_step(STEPS, {"sync": StepState.DONE, "index": StepState.RUNNING})
    assert next_step(STEPS, dict.fromkeys(("sync", "index", "publish"), StepState.DONE)) is None


def test_valid_outputs_are_saved_as_normalized_json() -> None:
    raw = b'{ "PATH": "/srv/i", "COUNT": "12" }\n'
    outputs = parse_outputs(("COUNT", "PATH"), raw)
    assert {"COUNT": "12", "PATH": "/srv/i"} == outputs.values
    assert '{"COUNT":"12","PATH":"/srv/i"}' == outputs.text
    assert {} == parse_outputs((), None).values
    assert {} == parse_outputs((), b"").values
    assert {"V": "é" * 2048} == parse_outputs(("V",), json.dumps({"V": "é" * 2048}).encode()
                                              ).values


SECRET = "hunter2-do-not-echo"


@pytest.mark.parametrize(("declared", "raw", "reason"), [
    (("COUNT",), None, "the step wrote no output file; it declares COUNT"),
    (("COUNT",), b"", "the output file is not JSON"),
    (("COUNT",), b"\xff\xfe" + SECRET.encode(), "the output file is not UTF-8 text"),
    (("COUNT",), f"COUNT={SECRET}".encode(), "the output file is not JSON"),
    (("COUNT",), json.dumps([SECRET]).encode(),
     "the output file is not a JSON object of names and strings"),
    (("COUNT", "PATH"), json.dumps({"COUNT": SECRET}).encode(),
     "the output file lacks the declared output(s) PATH"),
    (("COUNT",), json.dumps({"COUNT": "1", SECRET: SECRET}).encode(),
     "the output file has 1 key(s) the step does not declare (it declares COUNT)"),
    ((), json.dumps({SECRET: "x"}).encode(),
     "the output file has 1 key(s) the step does not declare (it declares none)"),
    (("COUNT",), b'{"COUNT": "1", "COUNT": "2"}', "the output file repeats a key"),
    (("COUNT",), json.dumps({"COUNT": 12}).encode(), "output COUNT is not a string"),
    (("COUNT",), json.dumps({"COUNT": f"{SECRET}\0"}).encode(),
     "output COUNT holds a NUL character"),
    (("COUNT",), json.dumps({"COUNT": "x" * 4097}).encode(),
     "output COUNT is longer than 4096 UTF-8 bytes"),
    (("COUNT",), json.dumps({"COUNT": "é" * 2049}, ensure_ascii=False).encode(),
     "output COUNT is longer than 4096 UTF-8 bytes"),
    (("COUNT",), b" " * 16385, "the output file is larger than 16384 bytes"),
    (tuple(f"K{i}" for i in range(5)),
     json.dumps({f"K{i}": "x" * 4000 for i in range(5)}).encode()[:16384],
     "the output file is not JSON"),
    (("COUNT",), b'{"COUNT": "\\ud800"}', "output COUNT is not valid Unicode text"),
    (("COUNT",), b"[" * 100_000, "the output file is larger than 16384 bytes"),
    (("COUNT",), b"[" * 16000, "the output file is not a flat JSON object"),
])
def test_an_invalid_output_file_is_refused_by_its_rule_without_its_values(
        declared: tuple[str, ...], raw: bytes | None, reason: str) -> None:
    with pytest.raises(OutputProblem) as refused:
        parse_outputs(declared, raw)
    assert reason == str(refused.value)
    assert SECRET not in str(refused.value)


@dataclass(frozen=True)
class Facts:
    """An execution as the rules read it (the store's record has these four too)."""

    state: ExecutionState
    definition: str
    expires_at: datetime
    activations: int


def facts(state: ExecutionState = ExecutionState.FAILED, definition: str = "d1",
          expires: datetime = T0 + timedelta(days=7), activations: int = 1) -> ExecutionFacts:
    return Facts(state, definition, expires, activations)


@pytest.mark.parametrize(("execution", "definition", "reason"), [
    (facts(), "d1", None),
    (facts(activations=MAX_ACTIVATIONS - 1), "d1", None),
    (facts(ExecutionState.RUNNING), "d1", "it is running"),
    (facts(ExecutionState.SUCCEEDED), "d1", "it succeeded: there is nothing left to run"),
    (facts(ExecutionState.ABANDONED), "d1", "it was abandoned"),
    (facts(expires=T0), "d1", "it expired: its retention, counted from its start, is over"),
    (facts(expires=T0 - timedelta(seconds=1)), "d1",
     "it expired: its retention, counted from its start, is over"),
    (facts(activations=MAX_ACTIVATIONS), "d1", "it reached 100 activations"),
    (facts(), None, "its job is no longer in the config"),
    (facts(), "d2",
     "the job's steps changed since it began (their ids, commands, outputs or inputs)"),
])
def test_resume_is_refused_with_its_reason(execution: ExecutionFacts, definition: str | None,
                                           reason: str | None) -> None:
    assert reason == resume_refusal(execution, definition, T0)


@pytest.mark.parametrize(("state", "reason"), [
    (ExecutionState.FAILED, None),
    (ExecutionState.RUNNING, "it is running: stop its run first, or let it end"),
    (ExecutionState.SUCCEEDED, "it succeeded: there is nothing to abandon"),
    (ExecutionState.ABANDONED, "it was abandoned already"),
])
def test_abandon_is_refused_while_running_and_when_nothing_is_left(
        state: ExecutionState, reason: str | None) -> None:
    assert reason == abandon_refusal(facts(state))
