"""What a run's process is given (SPEC §5): its variables, its trigger file, its folder.

What must live here, and nowhere else: which variables a job's process sees, and which value
wins when two sources name the same one. From the lowest to the highest:

1. the few variables of the daemon's own environment a job inherits (:data:`PASSED_THROUGH`;
   the rest, where secrets may live, reaches a job only by name, through ``env`` and
   ``secrets``);
2. the job's ``env``;
3. the job's ``secrets``, by name, from the secrets the daemon read (one that is not set is
   left out: ``doctor`` reports it);
4. the run's inputs (:func:`run_inputs`), and a step's declared inputs;
5. cronduit's own ``CRONDUIT_*`` variables (a step attempt's ids and output file among
   them), then the workspace's
   (:func:`workspace_variables`), which nothing else can replace.

Also here: the trigger document the job reads from ``$CRONDUIT_TRIGGER_FILE``
(:func:`trigger_document`) and the folder it runs in when it has no workspace
(:func:`work_dir`). Values in, values out: the runner passes the run, the job, the trigger,
the attempt number, the paths it made as strings, the secrets and its own environment, and
writes what comes back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Final, Protocol

from cronduit.core.config.model import Job
from cronduit.core.payload import Payload
from cronduit.core.steps import StepLaunch
from cronduit.core.timespec import format_utc

__all__ = [
    "PASSED_THROUGH",
    "UNREADABLE_INPUTS",
    "UnreadableInputs",
    "run_environment",
    "run_inputs",
    "trigger_document",
    "work_dir",
    "workspace_variables",
]

PASSED_THROUGH: Final = ("PATH", "HOME", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME", "SHELL",
                         "TMPDIR")
"""Variables of the daemon's own environment a job inherits."""
UNREADABLE_INPUTS: Final = ("the run's stored inputs cannot be read (not a JSON object of "
                            "names and string values)")


class UnreadableInputs(ValueError):
    """A run's stored inputs are not what intake stores: the attempt cannot start with them,
    and starting it with other values (the defaults) would run something nobody asked for."""

    def __init__(self) -> None:
        super().__init__(UNREADABLE_INPUTS)


class RunFacts(Protocol):
    """What the environment reads of a run."""

    @property
    def id(self) -> str: ...
    @property
    def inputs(self) -> str: ...


class TriggerFacts(Protocol):
    """What the environment and the trigger document read of the trigger a run reports."""

    @property
    def kind(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def delivery_id(self) -> str: ...
    @property
    def slot(self) -> datetime | None: ...
    @property
    def late(self) -> bool: ...
    @property
    def accepted_at(self) -> datetime: ...
    @property
    def operator(self) -> str | None: ...
    @property
    def payload(self) -> Payload: ...


def run_inputs(job: Job, stored: str) -> dict[str, str]:
    """The inputs a run's process gets: the values stored with the run, as they were
    accepted, over the defaults the job declares for the names the run does not carry (a
    timer's run carries none). The values were checked when the trigger was accepted and
    are not checked again: a config edited since cannot put other values in their place.
    Raises :class:`UnreadableInputs` when ``stored`` is not a JSON object of strings."""
    try:
        given = json.loads(stored or "{}")
    except ValueError:
        raise UnreadableInputs() from None
    if not isinstance(given, dict) or not all(
            isinstance(name, str) and isinstance(value, str) for name, value in given.items()):
        raise UnreadableInputs()
    resolved = {name: spec.default for name, spec in job.inputs.items()}
    resolved.update(given)
    return resolved


def run_environment(run: RunFacts, job: Job, trigger: TriggerFacts, attempt: int, *,
                    trigger_file: str, output_dir: str, secrets: Mapping[str, str],
                    environ: Mapping[str, str], step: StepLaunch | None = None,
                    output_file: str = "") -> dict[str, str]:
    """The variables of attempt number ``attempt`` of ``run``, in the order of precedence
    the module names; for a step attempt (``step``) also its declared inputs, beside the
    run's (``check`` keeps their names apart), and the ids and output file of SPEC §8.
    Raises :class:`UnreadableInputs` (see :func:`run_inputs`)."""
    env = {name: environ[name] for name in PASSED_THROUGH if name in environ}
    env.update(job.env)
    env.update({name: secrets[name] for name in job.secrets if name in secrets})
    env.update(run_inputs(job, run.inputs))
    if step is not None:
        env.update(step.variables)
    env.update({
        "CRONDUIT_JOB": job.name,
        "CRONDUIT_RUN_ID": run.id,
        "CRONDUIT_TRIGGER": trigger.kind,
        "CRONDUIT_TRIGGER_FILE": trigger_file,
        "CRONDUIT_OUTPUT_DIR": output_dir,
        "CRONDUIT_ATTEMPT": str(attempt),
    })
    if step is not None:
        env.update({
            "CRONDUIT_EXECUTION_ID": step.execution_id,
            "CRONDUIT_STEP_ID": step.step.id,
            "CRONDUIT_ATTEMPT_ID": step.attempt_id,
            "CRONDUIT_OUTPUT_FILE": output_file,
        })
    return env


def workspace_variables(path: str, note: str) -> dict[str, str]:
    """What a run in a workspace is told: where its checkout is, and how it was prepared
    (for a shared checkout another run held, how far behind it is and why)."""
    return {"CRONDUIT_WORKSPACE": path, "CRONDUIT_WORKSPACE_NOTE": note}


def trigger_document(trigger: TriggerFacts, run_id: str) -> str:
    """``$CRONDUIT_TRIGGER_FILE``'s text: the trigger's own fields, then its payload's (the
    inputs, a webhook's body, a code-host delivery's facts), one JSON object on one line."""
    document = {
        "kind": trigger.kind,
        "label": trigger.label,
        "delivery_id": trigger.delivery_id,
        "slot": None if trigger.slot is None else format_utc(trigger.slot),
        "late": trigger.late,
        "accepted_at": format_utc(trigger.accepted_at),
        "operator": trigger.operator,
        "run": run_id,
        **trigger.payload.fields,
    }
    return json.dumps(document, sort_keys=True) + "\n"  # the C encoder: no indent


def work_dir(job_dir: str | None, config_dir: str) -> str:
    """The folder a job without a workspace runs in: its ``dir``, read from the config
    file's folder when relative, and that folder itself when it has none (SPEC §5). POSIX
    paths, joined as text: the runner makes a path of the answer."""
    if job_dir is None:
        return config_dir
    return job_dir if job_dir.startswith("/") else f"{config_dir.rstrip('/')}/{job_dir}"
