"""``cronduit doctor``: what each job answers to, each problem named, exit 1 if any."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from cronduit.cli import cli
from cronduit.core.signing import webhook_token
from cronduit.ports import Run, Timer
from cronduit.store.sqlite import SqliteStore

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
        tx.put_timer(Timer("nightly", "cron 30 2 * * * Europe/London", past, "old slot", past,
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
