"""``cronduit doctor``: what each job answers to, each problem named, exit 1 if any."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from cronduit.cli import cli
from cronduit.core.signing import webhook_token
from cronduit.executor.workspace import repository_root
from cronduit.ports import Run, Timer
from cronduit.store.sqlite import SqliteStore
from tests.helpers.store import put_timer

CONFIG = """\
settings:
  listen: 127.0.0.1:9200
  webhook_secret: HOOK_KEY
  github_secret: GH_KEY
  secrets_file: secrets.env
jobs:
  nightly: {run: "true", cron: "30 2 * * *", time_zone: Europe/London}
  poke:    {run: "true", webhook: true}
  docs:    {run: "true", on: {events: [push], branches: [main], paths: ["docs/**"]}}
  deploy:  {run: "true", on: {after: {job: docs, outcomes: [success]}}}
  by-hand: {run: "true", secrets: [DEPLOY_KEY]}
"""
SECRETS = "HOOK_KEY=hook-value\nGH_KEY=gh-value\nDEPLOY_KEY=deploy-value\n"


def doctor(folder: Path, *args: str, env: dict[str, str] | None = None,
           secrets: str = SECRETS) -> tuple[int, str]:
    (folder / "cronduit.yaml").write_text(CONFIG)
    (folder / "secrets.env").write_text(secrets)
    result = CliRunner().invoke(cli, ["doctor", *args, "-c", str(folder / "cronduit.yaml")],
                                env=env)
    return result.exit_code, result.output


def test_a_healthy_install_lists_each_jobs_triggers_and_exits_0(tmp_path: Path) -> None:
    code, out = doctor(tmp_path)
    assert 0 == code, out
    assert "nightly: next slot 20" in out
    assert "Europe/London" in out
    assert "poke: webhook POST /hooks/poke/<token>" in out
    assert "docs: GitHub events push via POST /github (branches main; paths docs/**)" in out
    assert "deploy: after docs (success)" in out
    assert "by-hand: manual only" in out
    assert "no problems found" in out
    assert "hook-value" not in out
    assert "deploy-value" not in out


def test_deep_prints_the_signed_urls(tmp_path: Path) -> None:
    code, out = doctor(tmp_path, "--deep")
    assert 0 == code
    token = webhook_token("hook-value", "poke")
    assert f"poke: webhook POST http://127.0.0.1:9200/hooks/poke/{token}" in out


def test_missing_secrets_are_named_never_shown(tmp_path: Path) -> None:
    code, out = doctor(tmp_path, secrets="HOOK_KEY=hook-value\n",
                       env={"GH_KEY": "", "DEPLOY_KEY": ""})
    assert 1 == code
    assert "secret GH_KEY (settings.github_secret) is not set" in out
    assert "secret DEPLOY_KEY (jobs.by-hand.secrets) is not set" in out
    assert "2 problems found" in out
    assert "hook-value" not in out


def test_an_overdue_timer_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "cronduit.yaml").write_text(CONFIG)
    store = SqliteStore(tmp_path / ".cronduit" / "cronduit.db")
    past = datetime.now(UTC) - timedelta(hours=2)
    with store.transaction() as tx:
        put_timer(tx, Timer("nightly", "cron 30 2 * * * Europe/London", past, "old slot", past,
                            None))
    store.close()
    code, out = doctor(tmp_path)
    assert 1 == code
    assert "nightly: next slot old slot, overdue since" in out


def test_a_missing_git_is_named_with_the_jobs_that_need_it(tmp_path: Path) -> None:
    code, out = doctor(tmp_path, env={"PATH": str(tmp_path)})
    assert 1 == code
    assert "git is not installed, and docs need it" in out


def test_an_unusable_state_store_exits_1_naming_it(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a file where the state folder should be")
    (tmp_path / "cronduit.yaml").write_text(CONFIG.replace("settings:\n",
                                                           "settings:\n  state: blocker/s\n"))
    (tmp_path / "secrets.env").write_text(SECRETS)
    result = CliRunner().invoke(cli, ["doctor", "-c", str(tmp_path / "cronduit.yaml")])
    assert 1 == result.exit_code
    assert "blocker" in result.output


def test_a_notification_given_up_on_is_a_problem_named_without_its_url(tmp_path: Path) -> None:
    (tmp_path / "cronduit.yaml").write_text(CONFIG)
    store = SqliteStore(tmp_path / ".cronduit" / "cronduit.db")
    now = datetime.now(UTC)
    with store.transaction() as tx:
        tx.insert_run(Run("r1", "nightly", "timer", "cron", "ended", now, outcome="failure"))
        tx.insert_notification("r1", "ops", "{}", now)
        (sent,) = tx.notifications_of_run("r1")
        tx.record_notification_try(sent.seq, "failed", now, "HTTP 500", now)
    store.close()
    code, out = doctor(tmp_path)
    assert 1 == code
    assert "notifier ops: the outcome of nightly run r1 was not delivered (HTTP 500; 1 tries" in out


CHECKS = """\
settings:
  github_secret: GH_KEY
  secrets_file: secrets.env
jobs:
  red-main:  {run: "true", on: {events: [check_suite.completed], branches: [main],
                                conclusions: [failure]}}
  red-runs:  {run: "true", on: {events: [push, check_run.completed], branches: ["release/**"]}}
  red-any:   {run: "true", on: {events: [check_suite.completed], conclusions: [failure]}}
  docs:      {run: "true", on: {events: [push], branches: [main]}}
  cloned:    {run: "true", workspace: {git: "https://git.example/acme/reels.git"},
              on: {events: [check_suite.completed], branches: [main]}}
"""
REPOSITORY = "https://git.example/acme/reels.git"


def doctor_on(folder: Path, config: str, *args: str, secrets: str = SECRETS) -> tuple[int, str]:
    """``cronduit doctor`` on ``config`` with ``secrets`` in its secrets file."""
    (folder / "cronduit.yaml").write_text(config)
    (folder / "secrets.env").write_text(secrets)
    result = CliRunner().invoke(cli, ["doctor", *args, "-c", str(folder / "cronduit.yaml")],
                                env={"GH_TOKEN": ""})
    return result.exit_code, result.output


def test_every_branch_filtered_check_job_nothing_can_confirm_is_a_problem(
        tmp_path: Path) -> None:
    """No token and no workspace clone: each such job is named with what to set."""
    code, out = doctor_on(tmp_path, CHECKS)
    assert 1 == code
    assert ("warning: red-main: its branch filter (main) cannot be confirmed, so it will never "
            "run on check_suite.completed: set settings.github_token (the name of a secret "
            "holding a GitHub token), or give the job a workspace (a git clone of the "
            "repository)") in out
    assert ("warning: red-runs: its branch filter (release/**) cannot be confirmed, so it will "
            "never run on check_run.completed: ") in out
    assert ("warning: cloned: its branch filter (main) cannot be confirmed until its workspace "
            "clone exists, so it will not run on check_suite.completed before then: set "
            "settings.github_token (the name of a secret holding a GitHub token), or run it "
            "once to make the clone (cronduit job run cloned)") in out
    assert "red-any: its branch filter" not in out
    assert "docs: its branch filter" not in out
    assert "3 problems found" in out


def test_a_workspace_clone_on_disk_confirms_its_jobs_branch(tmp_path: Path) -> None:
    """Once a run has made the clone, git can answer and the job is not warned about."""
    (repository_root(tmp_path / ".cronduit", REPOSITORY) / "main" / ".git").mkdir(parents=True)
    code, out = doctor_on(tmp_path, CHECKS)
    assert 1 == code
    assert "cloned: its branch filter" not in out
    assert "2 problems found" in out


def test_a_github_token_that_is_set_confirms_every_branch(tmp_path: Path) -> None:
    """settings.github_token naming a secret that is set: nothing to warn about."""
    config = CHECKS.replace("settings:\n", "settings:\n  github_token: GH_TOKEN\n")
    code, out = doctor_on(tmp_path, config, secrets=SECRETS + "GH_TOKEN=ghp-value\n")
    assert 0 == code, out
    assert "cannot be confirmed" not in out
    assert "ghp-value" not in out


def test_a_github_token_whose_secret_is_missing_says_which_secret_to_set(
        tmp_path: Path) -> None:
    """The token is configured but not set: the fix names the secret, not the setting."""
    config = CHECKS.replace("settings:\n", "settings:\n  github_token: GH_TOKEN\n")
    code, out = doctor_on(tmp_path, config)
    assert 1 == code
    assert ("red-main: its branch filter (main) cannot be confirmed, so it will never run on "
            "check_suite.completed: set the secret GH_TOKEN that settings.github_token names, "
            "or give the job a workspace") in out
    assert "secret GH_TOKEN (settings.github_token) is not set" in out


def test_json_is_one_document_of_what_doctor_prints(tmp_path: Path) -> None:
    """Jobs in config order with their triggers and webhook paths; no warnings; exit 0."""
    code, out = doctor(tmp_path, "--json")
    assert 0 == code, out
    assert 1 == len(out.splitlines())
    document = json.loads(out)
    assert (None, True, [], 0) == (document["daemon"], document["state"]["writable"],
                                   document["warnings"], document["problems"])
    jobs = {job["job"]: job["triggers"] for job in document["jobs"]}
    assert ["nightly", "poke", "docs", "deploy", "by-hand"] == list(jobs)
    (timer,) = jobs["nightly"]
    assert ("timer", False) == (timer["type"], timer["overdue"])
    assert timer["due"].endswith("Z")
    assert timer["next_slot"].endswith("02:30 Europe/London")
    assert [{"type": "webhook", "method": "POST", "path": "/hooks/poke/<token>"}] == jobs["poke"]
    assert [{"type": "github", "method": "POST", "path": "/github", "events": ["push"],
             "branches": ["main"], "paths": ["docs/**"], "conclusions": []}] == jobs["docs"]
    assert [{"type": "after", "job": "docs", "outcomes": ["success"]}] == jobs["deploy"]
    assert [] == jobs["by-hand"]
    assert "hook-value" not in out


def test_json_lists_the_warnings_and_exits_as_the_text_does(tmp_path: Path) -> None:
    """Each problem is a warning naming its job when it has one; the exit code is 1."""
    code, out = doctor_on(tmp_path, CHECKS, "--json", secrets="")
    assert 1 == code
    document = json.loads(out)
    assert 4 == document["problems"]
    warnings = {(w["job"], w["text"].split(":")[0]) for w in document["warnings"]}
    assert {("red-main", "red-main"), ("red-runs", "red-runs"), ("cloned", "cloned"),
            (None, "secret GH_KEY (settings.github_secret) is not set")} == warnings


def test_json_with_deep_gives_the_signed_url(tmp_path: Path) -> None:
    """--deep puts the credential in the webhook trigger, as the text output does."""
    code, out = doctor(tmp_path, "--json", "--deep")
    assert 0 == code
    token = webhook_token("hook-value", "poke")
    (webhook,) = next(job["triggers"] for job in json.loads(out)["jobs"] if job["job"] == "poke")
    assert (f"/hooks/poke/{token}", f"http://127.0.0.1:9200/hooks/poke/{token}") == (
        webhook["path"], webhook["url"])


def _doctor_on(folder: Path, listen: str, secrets: str, *args: str) -> tuple[int, str]:
    """Doctor over CONFIG listening on ``listen``, with the API token ``API_KEY`` named."""
    config = CONFIG.replace("listen: 127.0.0.1:9200", f"listen: {listen}\n  api_token: API_KEY")
    (folder / "cronduit.yaml").write_text(config)
    (folder / "secrets.env").write_text(secrets)
    result = CliRunner().invoke(cli, ["doctor", *args, "-c", str(folder / "cronduit.yaml")])
    return result.exit_code, result.output


def test_on_loopback_doctor_says_the_reads_are_open(tmp_path: Path) -> None:
    code, out = _doctor_on(tmp_path, "127.0.0.1:9200", SECRETS + "API_KEY=api-value\n")
    assert (0, True) == (code, "api: 127.0.0.1:9200 is loopback: reads are open; writes need "
                               "the API token" in out)
    code, out = _doctor_on(tmp_path, "127.0.0.1:9200", SECRETS + "API_KEY=api-value\n",
                           "--json")
    assert {"listen": "127.0.0.1:9200", "reads": "open"} == json.loads(out)["api"]


def test_off_loopback_doctor_says_reads_need_the_token(tmp_path: Path) -> None:
    code, out = _doctor_on(tmp_path, "0.0.0.0:9200", SECRETS + "API_KEY=api-value\n")
    assert (0, True) == (code, "api: 0.0.0.0:9200 is not loopback: reads and writes need the "
                               "API token (Authorization: Bearer)" in out)
    assert "api-value" not in out


def test_off_loopback_without_a_token_the_reads_are_closed_and_it_is_a_problem(
        tmp_path: Path) -> None:
    code, out = _doctor_on(tmp_path, "0.0.0.0:9200", SECRETS, "--json")
    document = json.loads(out)
    assert (1, {"listen": "0.0.0.0:9200", "reads": "token"}) == (code, document["api"])
    assert any(w["text"].startswith("api: 0.0.0.0:9200 is not loopback")
               for w in document["warnings"])
