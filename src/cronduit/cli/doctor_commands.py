"""``cronduit doctor``: what each job answers to, and what would stop it from working.

It reads the config, the secrets (names only, never values), the state store and the
machine, never the daemon, so it works while the daemon is down. Each finding is a line;
warnings say what to fix. Exit 0 when nothing needs fixing, 1 otherwise, so a deploy script
can gate on it. ``--json`` prints the same findings as one document, grouped by job.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import click

from cronduit.cli.context import State, open_state, runtime
from cronduit.cli.options import config_option
from cronduit.cli.render import cell, echo_json, echo_line, utc
from cronduit.cli.state_commands import daemon_json, daemon_line
from cronduit.core.config.model import Config, Job, Workspace
from cronduit.core.github import events_needing_confirmed_branch
from cronduit.core.nodes import live_matches
from cronduit.core.secret_names import unset_secrets
from cronduit.core.signing import webhook_token
from cronduit.core.status import next_elapse
from cronduit.daemon import DaemonInfo, running_daemon
from cronduit.executor import workspace
from cronduit.ports import Timer
from cronduit.secrets import (
    SecretsError,
    environment_secrets,
    load_secrets,
    missing_secrets_file,
)
from cronduit.store import membership_of, redacted

TOKEN = "<token>"
GITHUB_PATH = "/github"
FAILED_SHOWN = 10
"""Failed notification deliveries listed, newest first."""


@dataclass(frozen=True)
class Finding:
    """One line of doctor's report; ``job`` and ``trigger`` are what ``--json`` groups by."""

    text: str
    problem: bool = False
    job: str | None = None
    """The job the line is about, if any."""
    trigger: Mapping[str, object] | None = None
    """What the job answers to, as ``--json`` shows it (a trigger line of the job)."""


@click.command()
@click.option("--deep", is_flag=True,
              help="Print the signed webhook URLs (they are credentials) instead of paths.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON document: the daemon, the state, each job's triggers, warnings.")
@config_option
def doctor(deep: bool, as_json: bool, config_path: Path) -> None:
    """What each job answers to, and every problem found: overdue timers, missing secrets,
    an unwritable state store, a missing git, a branch filter nothing can confirm. Exit 1
    when there is something to fix."""
    with open_state(config_path) as state:
        secrets, file_findings = _read_secrets(state.config, config_path)
        now = runtime().clock.now()
        daemon = running_daemon(state.store, now)
        stored = _state(state)
        findings = [Finding(daemon_line(daemon)), stored, *_jobs(state, secrets, deep, now),
                    *_unconfirmable(state, secrets), *file_findings,
                    *_secrets(state.config, secrets),
                    *_git(state.config), *_notifications(state), *_nodes(state),
                    _api(state.config, secrets)]
    problems = sum(finding.problem for finding in findings)
    if as_json:
        echo_json(_document(state, daemon, stored, findings))
    else:
        _print(findings, problems)
    raise SystemExit(1 if problems else 0)


def _print(findings: list[Finding], problems: int) -> None:
    for finding in findings:
        echo_line(("warning: " if finding.problem else "") + finding.text,
                  "yellow" if finding.problem else None)
    echo_line(f"{problems} problem{'s' if problems != 1 else ''} found" if problems
              else "no problems found", "bold red" if problems else "green")


def _document(state: State, daemon: DaemonInfo | None, stored: Finding,
              findings: list[Finding]) -> dict[str, object]:
    """What doctor prints, as one JSON document (docs/cli.md describes its keys)."""
    warnings = [{"job": f.job, "text": f.text} for f in findings if f.problem]
    where: dict[str, object] = {"path": str(state.paths.root), "writable": not stored.problem}
    if state.config.settings.uses_postgres:
        where = {"url": redacted(state.config.settings.state), **where}
    return {"daemon": daemon_json(daemon),
            "state": where,
            "api": {"listen": state.config.settings.listen,
                    "reads": "open" if state.config.settings.reads_open else "token"},
            "jobs": _jobs_json(state.config, findings),
            "warnings": warnings,
            "problems": len(warnings)}


def _api(config: Config, secrets: Mapping[str, str]) -> Finding:
    """Who may use the HTTP API: reads are open on a loopback listener and need the API
    token on any other address; writes always need it. No token set off loopback closes
    the reads too."""
    settings = config.settings
    token = settings.api_token is not None and settings.api_token in secrets
    writes = "writes need the API token" if token else (
        "writes are refused (settings.api_token names no secret that is set)")
    if settings.reads_open:
        return Finding(f"api: {settings.listen} is loopback: reads are open; {writes}")
    if token:
        return Finding(f"api: {settings.listen} is not loopback: reads and writes need the "
                       "API token (Authorization: Bearer)")
    return Finding(f"api: {settings.listen} is not loopback, so reads need the API token, "
                   "and settings.api_token names no secret that is set: every API request "
                   "but webhooks, GitHub and /healthz is refused", problem=True)


def _jobs_json(config: Config, findings: list[Finding]) -> list[dict[str, object]]:
    """Each job in config order with its triggers; an empty list is a manual-only job."""
    return [{"job": name,
             "triggers": [f.trigger for f in findings if f.job == name and f.trigger]}
            for name in config.jobs]


def _nodes(state: State) -> list[Finding]:
    """With a state shared by many daemons: the live nodes, and each job whose ``nodes:``
    no live node matches (its runs would wait for one)."""
    membership = membership_of(state.store)
    if membership is None:
        return []
    now = membership.now()
    live = [node for node in membership.nodes()
            if node.retired_at is None and node.expires_at > now]
    names = [node.name for node in live]
    findings = [Finding(f"nodes: {len(live)} live" + (f" ({', '.join(names)})" if live else ""),
                        problem=not live)]
    for job in state.config.jobs.values():
        if job.nodes is not None and not live_matches(job.nodes, names):
            findings.append(Finding(
                f"job {job.name}: no live node matches nodes: [{', '.join(job.nodes)}]; its "
                "runs wait until a daemon with a matching settings.node serves",
                problem=True, job=job.name))
    return findings


def _state(state: State) -> Finding:
    """Whether the state folder can be written: with SQLite, the store's own; with a
    PostgreSQL state (reached, since the store opened), the local folder of runs' files."""
    root = state.paths.root
    settings = state.config.settings
    where, what = ((f"{redacted(settings.state)} (PostgreSQL, reached); runs' files in ",
                    "the daemon cannot start runs") if settings.uses_postgres
                   else ("", "the daemon cannot record triggers or runs"))
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".doctor-"):
            pass
    except OSError as error:
        return Finding(f"state: {where}{root} is not writable ({error.strerror or error}): "
                       f"{what}", problem=True)
    return Finding(f"state: {where}{root} (writable)")


def _jobs(state: State, secrets: dict[str, str], deep: bool, now: datetime) -> list[Finding]:
    config = state.config
    with state.store.transaction() as tx:
        timers = {timer.job: timer for timer in tx.timers()}
    base = f"http://{config.settings.listen}"
    hook_secret = secrets.get(config.settings.webhook_secret or "")
    findings: list[Finding] = []
    for job in config.jobs.values():
        findings += _job(job, timers.get(job.name), now, base, hook_secret if deep else None)
    return findings


def _job(job: Job, timer: Timer | None, now: datetime, base: str, signing: str | None
         ) -> list[Finding]:
    lines = [*_timer(job, timer, now), *_webhook(job, base, signing), *_github(job),
             *_after(job)]
    return lines or [Finding(f"{job.name}: manual only (cronduit job run {job.name})",
                             job=job.name)]


def _timer(job: Job, timer: Timer | None, now: datetime) -> list[Finding]:
    elapse = next_elapse(job, timer, now)
    if elapse.due is None:
        return []
    slot, overdue = cell(elapse.slot_name or elapse.due), elapse.overdue(now)
    trigger = {"type": "timer", "next_slot": slot, "due": utc(elapse.due), "overdue": overdue}
    text = f"{job.name}: next slot {slot}"
    if overdue:
        text += f", overdue since {cell(elapse.due)}: is the daemon running?"
    return [Finding(text, problem=overdue, job=job.name, trigger=trigger)]


def _webhook(job: Job, base: str, signing: str | None) -> list[Finding]:
    if not job.webhook:
        return []
    path = f"/hooks/{job.name}/{webhook_token(signing, job.name) if signing else TOKEN}"
    shown = base + path if signing else path
    trigger: dict[str, object] = {"type": "webhook", "method": "POST", "path": path}
    if signing:
        trigger["url"] = shown
    return [Finding(f"{job.name}: webhook POST {shown}", job=job.name, trigger=trigger)]


def _github(job: Job) -> list[Finding]:
    on = job.on
    if on is None or not on.events:
        return []
    filters = [f"branches {', '.join(on.branches)}" if on.branches else "",
               f"paths {', '.join(on.paths)}" if on.paths else "",
               f"conclusions {', '.join(on.conclusions)}" if on.conclusions else ""]
    shown = "; ".join(part for part in filters if part)
    trigger = {"type": "github", "method": "POST", "path": GITHUB_PATH,
               "events": list(on.events), "branches": list(on.branches),
               "paths": list(on.paths), "conclusions": list(on.conclusions)}
    return [Finding(f"{job.name}: GitHub events {', '.join(on.events)} via POST {GITHUB_PATH}"
                    + (f" ({shown})" if shown else ""), job=job.name, trigger=trigger)]


def _after(job: Job) -> list[Finding]:
    if job.on is None or job.on.after is None:
        return []
    after = job.on.after
    trigger = {"type": "after", "job": after.job, "outcomes": list(after.outcomes)}
    return [Finding(f"{job.name}: after {after.job} ({', '.join(after.outcomes)})",
                    job=job.name, trigger=trigger)]


def _unconfirmable(state: State, secrets: dict[str, str]) -> list[Finding]:
    """Every job filtered on branches for check events whose branch nothing can confirm: no
    GitHub token is set and the job has no workspace clone (SPEC §4: a check's head branch
    counts only once confirmed), so the job does not run on those events."""
    token = state.config.settings.github_token
    if token and secrets.get(token):
        return []
    set_token = (f"set the secret {token} that settings.github_token names" if token else
                 "set settings.github_token (the name of a secret holding a GitHub token)")
    findings = []
    for job in state.config.jobs.values():
        rule = job.on.rule if job.on is not None else None
        if rule is None or not (events := events_needing_confirmed_branch(rule)):
            continue
        branches, on = ", ".join(rule.branches), ", ".join(events)
        unconfirmed = f"{job.name}: its branch filter ({branches}) cannot be confirmed"
        if job.workspace is None:
            text = (f"{unconfirmed}, so it will never run on {on}: {set_token}, or give the "
                    "job a workspace (a git clone of the repository)")
        elif not _has_clone(state, job.workspace):
            text = (f"{unconfirmed} until its workspace clone exists, so it will not run on "
                    f"{on} before then: {set_token}, or run it once to make the clone "
                    f"(cronduit job run {job.name})")
        else:
            continue
        findings.append(Finding(text, problem=True, job=job.name))
    return findings


def _has_clone(state: State, spec: Workspace) -> bool:
    """Whether a run has made the workspace's clone, where git can confirm a branch."""
    source_dir = state.config_path.resolve().parent
    return workspace.existing_clone(spec, state.paths.root, source_dir) is not None


def _read_secrets(config: Config, config_path: Path) -> tuple[dict[str, str], list[Finding]]:
    """The secret values, as the daemon reads them, and what is wrong with the secrets file:
    one that cannot be read is reported (``FILE:LINE: problem``) and the environment's
    secrets alone are checked; one that does not exist is reported too."""
    try:
        secrets = load_secrets(config, config_path, os.environ)
    except SecretsError as error:
        return environment_secrets(os.environ), [Finding(str(error), problem=True)]
    missing = missing_secrets_file(config, config_path)
    return secrets, [] if missing is None else [Finding(missing, problem=True)]


def _secrets(config: Config, secrets: dict[str, str]) -> list[Finding]:
    """Every secret the config names and that is not set (names only)."""
    return [Finding(f"secret {unset.name} ({unset.where}) is not set: neither in the secrets "
                    "file nor in the environment", problem=True)
            for unset in unset_secrets(config, secrets)]


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
