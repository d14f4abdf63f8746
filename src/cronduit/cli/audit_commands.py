"""``cronduit audit``: the audit log, newest first, read from the store (the daemon may be
down). Pauses, resumes (an expiry and a removed job's pause are resumes by ``cronduit``),
manual runs with their inputs, backfills with their window, and applies with what they
changed."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cronduit.cli.context import open_state
from cronduit.cli.options import config_option
from cronduit.cli.render import cell, echo_json, echo_table
from cronduit.core.limits import MAX_LISTED
from cronduit.intake.reports import audit_facts
from cronduit.ports import AuditEntry


def summary(entry: AuditEntry) -> str:
    """The entry's particulars on one line."""
    detail = json.loads(entry.detail)
    if entry.action == "pause":
        until = detail.get("until")
        return str(detail.get("reason", "")) + (f" (until {until})" if until else "")
    if entry.action == "resume":
        return (f"{detail.get('why', 'resumed')}; paused by {detail.get('paused_by')} since "
                f"{detail.get('paused_at')}: {detail.get('reason')}")
    if entry.action == "run":
        inputs = detail.get("inputs") or {}
        shown = " ".join(f"{key}={value}" for key, value in sorted(inputs.items()))
        return ("inputs: " + shown if shown else "no inputs") + (
            " (queued)" if detail.get("queue") else "")
    if entry.action == "apply":
        lines = detail.get("changes") or []
        head = "refused: " if detail.get("ok") is False else ""
        start = "start-up: " if detail.get("start") else ""
        return start + head + ("; ".join(lines) if lines else "no changes")
    if entry.action == "backfill":
        return (f"{detail.get('start')} to {detail.get('end')}: {detail.get('slots')} slots, "
                f"{detail.get('new')} new (overlap {detail.get('overlap')})")
    return entry.detail


@click.command("audit")
@click.option("-n", "limit", default=50, show_default=True, type=click.IntRange(1, MAX_LISTED),
              help="How many entries, newest first.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per entry, one a line.")
@config_option
def audit(limit: int, as_json: bool, config_path: Path) -> None:
    """Who paused, resumed, ran by hand or applied what, and when; newest first."""
    with open_state(config_path) as state, state.store.transaction() as tx:
        entries = tx.audit(limit)
    if as_json:
        for entry in entries:
            echo_json(audit_facts(entry))
        return
    if not entries:
        click.echo("the audit log is empty")
        return
    echo_table(["AT", "OPERATOR", "ACTION", "JOB", "DETAIL"],
               [[cell(entry.at), entry.operator, entry.action, cell(entry.job),
                 summary(entry)] for entry in entries], wrap=["DETAIL"])


COMMANDS: list[click.Command] = [audit]
