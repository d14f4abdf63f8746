"""``cronduit doctor``: what each job answers to, and what would stop it from working.

It reads the config, the secrets (names only, never values), the state store and the
machine, never the daemon, so it works while the daemon is down. Each finding is a line;
warnings say what to fix. Exit 0 when nothing needs fixing, 1 otherwise, so a deploy script
can gate on it. Findings about features that arrive later (notifications) join this list as
they land.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import click

from cronduit.cli.context import State, open_state
from cronduit.cli.options import config_option
from cronduit.cli.render import cell, echo_line
from cronduit.cli.state_commands import daemon_line, next_elapse
from cronduit.core.config.model import Config, Job
from cronduit.core.signing import webhook_token
from cronduit.daemon_state import running_daemon
from cronduit.ports import Timer
from cronduit.secrets import load_secrets

TOKEN = "<token>"
FAILED_SHOWN = 10
"""Failed notification deliveries listed, newest first."""


@dataclass(frozen=True)
class Finding:
    text: str
    problem: bool = False


@click.command()
@click.option("--deep", is_flag=True,
              help="Print the signed webhook URLs (they are credentials) instead of paths.")
@config_option
def doctor(deep: bool, config_path: Path) -> None:
    """What each job answers to, and every problem found: overdue timers, missing secrets,
    an unwritable state store, a missing git. Exit 1 when there is something to fix."""
    with open_state(config_path) as state:
        secrets = load_secrets(state.config, config_path, os.environ)
        now = datetime.now(UTC)
        findings = [*_daemon(state, now), *_state(state), *_jobs(state, secrets, deep, now),
                    *_secrets(state.config, secrets), *_git(state.config),
                    *_notifications(state)]
    for finding in findings:
        echo_line(("warning: " if finding.problem else "") + finding.text,
                  "yellow" if finding.problem else None)
    problems = sum(finding.problem for finding in findings)
    echo_line(f"{problems} problem{'s' if problems != 1 else ''} found" if problems
              else "no problems found", "bold red" if problems else "green")
    raise SystemExit(1 if problems else 0)


def _daemon(state: State, now: datetime) -> list[Finding]:
    return [Finding(daemon_line(running_daemon(state.store, now)))]


def _state(state: State) -> list[Finding]:
    root = state.paths.root
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".doctor-"):
            pass
    except OSError as error:
        return [Finding(f"state: {root} is not writable ({error.strerror or error}): the "
                        "daemon cannot record triggers or runs", problem=True)]
    return [Finding(f"state: {root} (writable)")]


def _jobs(state: State, secrets: dict[str, str], deep: bool, now: datetime) -> list[Finding]:
    config = state.config
    with state.store.transaction() as tx:
        timers = {timer.job: timer for timer in tx.timers()}
    base = f"http://{config.settings.listen}"
    hook_secret = secrets.get(config.settings.webhook_secret or "")
    findings: list[Finding] = []
    for job in config.jobs.values():
        findings += _job(job, timers, now, base, hook_secret if deep else None)
    return findings


def _job(job: Job, timers: dict[str, Timer], now: datetime, base: str,
         signing: str | None) -> list[Finding]:
    elapse = next_elapse(job, timers.get(job.name), now)
    lines: list[Finding] = []
    if elapse.due is not None:
        text = f"{job.name}: next slot {cell(elapse.slot_name or elapse.due)}"
        if elapse.overdue(now):
            lines.append(Finding(f"{text}, overdue since {cell(elapse.due)}: is the daemon "
                                 "running?", problem=True))
        else:
            lines.append(Finding(text))
    if job.webhook:
        token = webhook_token(signing, job.name) if signing else TOKEN
        lines.append(Finding(f"{job.name}: webhook POST {base if signing else ''}"
                             f"/hooks/{job.name}/{token}"))
    if job.on is not None and job.on.events:
        filters = [f"branches {', '.join(job.on.branches)}" if job.on.branches else "",
                   f"paths {', '.join(job.on.paths)}" if job.on.paths else "",
                   f"conclusions {', '.join(job.on.conclusions)}" if job.on.conclusions else ""]
        shown = "; ".join(part for part in filters if part)
        lines.append(Finding(f"{job.name}: GitHub events {', '.join(job.on.events)} via POST "
                             f"/github" + (f" ({shown})" if shown else "")))
    if job.on is not None and job.on.after is not None:
        outcomes = ", ".join(job.on.after.outcomes)
        lines.append(Finding(f"{job.name}: after {job.on.after.job} ({outcomes})"))
    if not lines:
        lines.append(Finding(f"{job.name}: manual only (cronduit job run {job.name})"))
    return lines


def _secrets(config: Config, secrets: dict[str, str]) -> list[Finding]:
    """Every secret the config names and that is not set (names only)."""
    wanted: dict[str, str] = {}
    settings = config.settings
    for field in ("webhook_secret", "github_secret", "github_token", "api_token"):
        name = getattr(settings, field)
        if name:
            wanted.setdefault(name, f"settings.{field}")
    for job in config.jobs.values():
        for name in job.secrets:
            wanted.setdefault(name, f"jobs.{job.name}.secrets")
    return [Finding(f"secret {name} ({where}) is not set: neither in the secrets file nor "
                    "in the environment", problem=True)
            for name, where in wanted.items() if name not in secrets]


def _notifications(state: State) -> list[Finding]:
    """Deliveries given up on, newest first (what they failed with, never the URL)."""
    with state.store.transaction() as tx:
        failed = tx.failed_notifications(FAILED_SHOWN)
        jobs = {n.run_id: run.job for n in failed if (run := tx.get_run(n.run_id)) is not None}
    return [Finding(f"notifier {n.notifier}: the outcome of {jobs.get(n.run_id, '?')} run "
                    f"{n.run_id} was not delivered ({n.error}; {n.attempts} tries, last "
                    f"{cell(n.updated_at)})", problem=True) for n in failed]


def _git(config: Config) -> list[Finding]:
    needs = [job.name for job in config.jobs.values()
             if job.workspace is not None or (job.on is not None and job.on.branches)]
    if needs and shutil.which("git") is None:
        return [Finding(f"git is not installed, and {', '.join(needs)} need it (workspaces, "
                        "confirming a check's branch)", problem=True)]
    return []


COMMANDS: list[click.Command] = [doctor]
