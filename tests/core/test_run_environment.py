"""What a run's process is given: its variables and their precedence, its inputs, its
trigger document and its folder (SPEC §5)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from cronduit.core.config.loader import load_config
from cronduit.core.config.model import Job
from cronduit.core.payload import EMPTY, Payload
from cronduit.core.run_environment import (
    UNREADABLE_INPUTS,
    UnreadableInputs,
    run_environment,
    run_inputs,
    trigger_document,
    work_dir,
    workspace_variables,
)

T0 = datetime(2026, 3, 30, 12, tzinfo=UTC)


@dataclass(frozen=True)
class FakeRun:
    id: str = "r1"
    inputs: str = "{}"


@dataclass(frozen=True)
class FakeTrigger:
    kind: str = "manual"
    label: str = "manual by ana"
    delivery_id: str = "manual/1"
    slot: datetime | None = None
    late: bool = False
    accepted_at: datetime = T0
    operator: str | None = "ana"
    payload: Payload = EMPTY


def job(text: str) -> Job:
    return load_config(f"jobs:\n  j: {text}\n", "c.yaml").jobs["j"]


WITH_INPUTS = job("{run: 'true', inputs: {LEVEL: {enum: [low, high], default: low}, "
                  "LANG: {pattern: '[a-z_.A-Z-]+', default: C}}}")


def environment(subject: Job, run: FakeRun = FakeRun(), secrets: dict[str, str] | None = None,
                environ: dict[str, str] | None = None) -> dict[str, str]:
    return run_environment(run, subject, FakeTrigger(), 2, trigger_file="/s/r1/trigger.json",
                           output_dir="/s/r1/output", secrets=secrets or {},
                           environ=environ or {})


# -- the variables ------------------------------------------------------------------------


def test_a_job_gets_cronduits_variables_with_the_attempt_number() -> None:
    assert {"CRONDUIT_JOB": "j", "CRONDUIT_RUN_ID": "r1", "CRONDUIT_TRIGGER": "manual",
            "CRONDUIT_TRIGGER_FILE": "/s/r1/trigger.json", "CRONDUIT_OUTPUT_DIR": "/s/r1/output",
            "CRONDUIT_ATTEMPT": "2"} == environment(job("{run: 'true'}"))


def test_only_the_listed_daemon_variables_reach_a_job() -> None:
    """Where secrets may live (the daemon's own environment) reaches a job only by name."""
    env = environment(job("{run: 'true'}"),
                      environ={"PATH": "/bin", "HOME": "/home/c", "AWS_SECRET": "x"})
    assert ("/bin", "/home/c", False) == (env["PATH"], env["HOME"], "AWS_SECRET" in env)


def test_env_then_secrets_then_inputs_win_over_the_daemons_variables() -> None:
    """Each source names its own variables (the config refuses a name in two of them); the
    daemon's inherited ones are the only ones they may replace."""
    subject = job("{run: 'true', env: {PATH: /opt/bin}, secrets: [TZ], "
                  "inputs: {LANG: {pattern: '[A-Za-z_.-]+', default: C}}}")
    env = environment(subject, secrets={"TZ": "Europe/Paris", "OTHER": "never"},
                      environ={"PATH": "/bin", "TZ": "UTC", "LANG": "en_GB"})
    assert ("/opt/bin", "Europe/Paris", "C", False) == (
        env["PATH"], env["TZ"], env["LANG"], "OTHER" in env)


def test_a_secret_that_is_not_set_is_left_out() -> None:
    """Doctor reports it; the job sees no variable rather than an empty one."""
    assert "TOKEN" not in environment(job("{run: 'true', secrets: [TOKEN]}"))


def test_the_workspace_is_told_where_and_how() -> None:
    assert {"CRONDUIT_WORKSPACE": "/w/x", "CRONDUIT_WORKSPACE_NOTE": "fast-forwarded"} == (
        workspace_variables("/w/x", "fast-forwarded"))


# -- the inputs ---------------------------------------------------------------------------


def test_a_run_without_inputs_gets_the_declared_defaults() -> None:
    """A timer's run carries no inputs."""
    assert [{"LEVEL": "low", "LANG": "C"}] * 2 == [run_inputs(WITH_INPUTS, "{}"),
                                                   run_inputs(WITH_INPUTS, "")]


def test_stored_inputs_win_over_the_defaults_as_they_were_accepted() -> None:
    """``max`` passed the enum of its day; the config narrowed it since. The run keeps it,
    and a name the config no longer declares is kept too: nothing accepted is replaced."""
    assert {"LEVEL": "max", "LANG": "C", "GONE": "x"} == run_inputs(
        WITH_INPUTS, json.dumps({"LEVEL": "max", "GONE": "x"}))


def test_inputs_reach_the_environment() -> None:
    env = environment(WITH_INPUTS, FakeRun(inputs='{"LEVEL": "high"}'))
    assert ("high", "C") == (env["LEVEL"], env["LANG"])


@pytest.mark.parametrize("stored", ["{", "[]", '"low"', "null", '{"LEVEL": 3}', '{"L": null}'])
def test_stored_inputs_that_are_not_an_object_of_strings_cannot_be_read(stored: str) -> None:
    with pytest.raises(UnreadableInputs) as raised:
        run_inputs(WITH_INPUTS, stored)
    assert UNREADABLE_INPUTS == str(raised.value)


# -- the trigger document and the folder --------------------------------------------------


def test_the_trigger_document_is_one_sorted_line_of_the_trigger_and_its_payload() -> None:
    """A payload's keys (the inputs, a webhook's body) sit beside the trigger's fields."""
    trigger = FakeTrigger(kind="timer", slot=T0, late=True, operator=None,
                          payload=Payload('{"inputs": {"LEVEL": "low"}}'))
    text = trigger_document(trigger, "r1")
    assert ('{"accepted_at": "2026-03-30T12:00:00Z", "delivery_id": "manual/1", "inputs": '
            '{"LEVEL": "low"}, "kind": "timer", "label": "manual by ana", "late": true, '
            '"operator": null, "run": "r1", "slot": "2026-03-30T12:00:00Z"}\n') == text


def test_a_trigger_without_a_slot_says_null() -> None:
    assert None is json.loads(trigger_document(FakeTrigger(payload=Payload("")), "r1"))["slot"]


@pytest.mark.parametrize(("job_dir", "expected"), [
    (None, "/etc/cronduit"), ("jobs/a", "/etc/cronduit/jobs/a"), ("/srv/a", "/srv/a")])
def test_a_job_runs_in_its_dir_read_from_the_config_files_folder(
    job_dir: str | None, expected: str,
) -> None:
    assert expected == work_dir(job_dir, "/etc/cronduit")


def test_a_relative_dir_under_the_root_folder_is_joined_with_one_slash() -> None:
    assert "/jobs" == work_dir("jobs", "/")
