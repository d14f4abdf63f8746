"""Durable multi-step executions, the rules (SPEC §8): a job's steps, the outputs a step may
save, what a step is given, which step runs next, and whether an execution may be resumed
or abandoned. Pure: the engine and the CLI ask, the store keeps what they decide.

Choices where the SPEC is silent (also in docs/steps.md):

* **The definition** a resume is checked against is a hash of each step's id, command (or
  ``run`` line), declared outputs and inputs, in order: what the steps do and what flows
  between them. A step's ``retry`` and ``timeout`` are left out, so an operator can give a
  failing step more attempts or time and resume it.
* **An output file that was not written** is an empty object: a step that declares no
  outputs need not write one; one that declares outputs fails, naming the missing keys.
* **Reasons never echo values**: a refused output file is described by its rule, the
  declared keys it lacks and how many keys it should not have, never by what it holds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from cronduit.core.config.fields import split_step_ref
from cronduit.core.config.model import Job, Step
from cronduit.core.enums import ExecutionState, StepState

MAIN_STEP = "main"
"""The one step of a single-command job that opts in with ``durable:`` alone."""
MAX_ACTIVATIONS = 100
"""Runs one execution may take, its first included: past that a resume is refused."""
MAX_OUTPUT_VALUE = 4096
"""UTF-8 bytes of one output value."""
MAX_OUTPUT_FILE = 16384
"""Bytes of the output file as written (its outputs as normalized JSON are never more)."""


def job_steps(job: Job) -> tuple[Step, ...]:
    """The steps an execution of ``job`` walks: its own, or for a single-command durable job
    the one step :data:`MAIN_STEP` that runs its command."""
    if job.steps is not None:
        return job.steps
    return (Step(id=MAIN_STEP, command=job.command, run=job.run),)


def is_durable(job: Job) -> bool:
    """Whether the job's runs are executions: it has steps, or says ``durable:``."""
    return job.steps is not None or job.durable is not None


def definition_hash(job: Job) -> str:
    """The stable hash of what the job's steps do (see the module's choices): the same for
    the same steps however the file spells them, different when any step's id, command,
    outputs or inputs change, or steps are added, removed or moved."""
    described = [{"id": step.id, "command": list(step.command or ()), "run": step.run,
                  "outputs": list(step.outputs), "inputs": dict(sorted(step.inputs.items()))}
                 for step in job_steps(job)]
    text = json.dumps(described, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# -- what a step is given, and which runs next ---------------------------------------------


@dataclass(frozen=True, slots=True)
class StepLaunch:
    """What one step attempt is given beyond its run's own variables: which step, under
    which ids, and its declared inputs (:func:`step_variables`)."""

    step: Step
    execution_id: str
    attempt_id: str
    """``CRONDUIT_ATTEMPT_ID``: fresh for every attempt, of a retry or a resume too."""
    variables: Mapping[str, str]


def step_variables(step: Step, saved: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The step's declared inputs as variables, each the saved output of an earlier step
    that ``check`` proved exists (``saved``: step id -> its outputs)."""
    variables = {}
    for variable, ref in step.inputs.items():
        source, output = split_step_ref(ref)
        variables[variable] = saved[source][output]
    return variables


def step_of(job: Job, step_id: str) -> Step | None:
    """The job's step with this id, if its config still has one."""
    return next((step for step in job_steps(job) if step.id == step_id), None)


def next_step(steps: Sequence[Step], states: Mapping[str, StepState]) -> Step | None:
    """The first step not done (a resume skips completed ones); None when all are."""
    return next((step for step in steps if states.get(step.id) is not StepState.DONE), None)


# -- outputs -------------------------------------------------------------------------------


class OutputProblem(ValueError):
    """Why a step's output file was refused: a rule, never the values."""


@dataclass(frozen=True, slots=True)
class Outputs:
    """A step's validated outputs, and their normalized JSON as the store keeps it."""

    values: Mapping[str, str]
    text: str


NO_OUTPUTS = Outputs({}, "{}")


def parse_outputs(declared: Sequence[str], raw: bytes | None) -> Outputs:
    """Validate what the step wrote to ``$CRONDUIT_OUTPUT_FILE`` (None: it wrote nothing)
    against its declared outputs; raises :class:`OutputProblem` naming the rule."""
    if raw is None or (not raw.strip() and not declared):
        if declared:
            raise OutputProblem(f"the step wrote no output file; it declares {_names(declared)}")
        return NO_OUTPUTS
    if len(raw) > MAX_OUTPUT_FILE:
        raise OutputProblem(f"the output file is larger than {MAX_OUTPUT_FILE} bytes")
    values = _object_of(raw)
    _check_keys(declared, values)
    checked = {key: _checked_value(key, values[key]) for key in declared}
    # Normalized JSON is never longer than the JSON file it came from (whitespace dropped,
    # escapes written as the characters), so the file's bound holds for it too.
    text = json.dumps(checked, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return Outputs(checked, text)


def _names(names: Sequence[str]) -> str:
    return ", ".join(names)


def _refuse_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found: dict[str, object] = {}
    for key, value in pairs:
        if key in found:
            raise OutputProblem("the output file repeats a key")
        found[key] = value
    return found


def _object_of(raw: bytes) -> dict[str, object]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise OutputProblem("the output file is not UTF-8 text") from None
    try:
        document = json.loads(text, object_pairs_hook=_refuse_duplicates)
    except json.JSONDecodeError:
        raise OutputProblem("the output file is not JSON") from None
    except RecursionError:
        raise OutputProblem("the output file is not a flat JSON object") from None
    if not isinstance(document, dict):
        raise OutputProblem("the output file is not a JSON object of names and strings")
    return document


def _check_keys(declared: Sequence[str], values: Mapping[str, object]) -> None:
    missing = [key for key in declared if key not in values]
    unexpected = sum(1 for key in values if key not in declared)
    if missing:
        raise OutputProblem(f"the output file lacks the declared output(s) {_names(missing)}")
    if unexpected:
        raise OutputProblem(f"the output file has {unexpected} key(s) the step does not declare"
                            f" (it declares {_names(declared) or 'none'})")


def _checked_value(key: str, value: object) -> str:
    if not isinstance(value, str):
        raise OutputProblem(f"output {key} is not a string")
    if "\0" in value:
        raise OutputProblem(f"output {key} holds a NUL character")
    try:
        size = len(value.encode())
    except UnicodeEncodeError:  # a lone surrogate escaped in the JSON (\ud800)
        raise OutputProblem(f"output {key} is not valid Unicode text") from None
    if size > MAX_OUTPUT_VALUE:
        raise OutputProblem(f"output {key} is longer than {MAX_OUTPUT_VALUE} UTF-8 bytes")
    return value


# -- resume and abandon --------------------------------------------------------------------


class ExecutionFacts(Protocol):
    """What the resume and abandon rules read of an execution (the store's record has it)."""

    @property
    def state(self) -> ExecutionState: ...
    @property
    def definition(self) -> str: ...
    @property
    def expires_at(self) -> datetime: ...
    @property
    def activations(self) -> int: ...


def resume_refusal(execution: ExecutionFacts, definition: str | None,
                   now: datetime) -> str | None:
    """Why the execution cannot be resumed now, or None when it can. ``definition``: the
    hash of the job's steps as the config now has them (None: the job is gone)."""
    if execution.state is ExecutionState.RUNNING:
        return "it is running"
    if execution.state is ExecutionState.SUCCEEDED:
        return "it succeeded: there is nothing left to run"
    if execution.state is ExecutionState.ABANDONED:
        return "it was abandoned"
    if now >= execution.expires_at:
        return "it expired: its retention, counted from its start, is over"
    if execution.activations >= MAX_ACTIVATIONS:
        return f"it reached {MAX_ACTIVATIONS} activations"
    if definition is None:
        return "its job is no longer in the config"
    if definition != execution.definition:
        return "the job's steps changed since it began (their ids, commands, outputs or inputs)"
    return None


def abandon_refusal(execution: ExecutionFacts) -> str | None:
    """Why the execution cannot be abandoned, or None when it can: only one that failed and
    is not running again is abandoned (one that succeeded has nothing left to resume)."""
    if execution.state is ExecutionState.RUNNING:
        return "it is running: stop its run first, or let it end"
    if execution.state is ExecutionState.SUCCEEDED:
        return "it succeeded: there is nothing to abandon"
    if execution.state is ExecutionState.ABANDONED:
        return "it was abandoned already"
    return None
