"""``cronduit cron next`` and ``cronduit cron explain``: the time rules, asked directly."""

from __future__ import annotations

import itertools
import sys
from datetime import UTC, datetime

import click

from cronduit.core.cron import Cron, CronError, DstPolicy, ZoneError, load_zone
from cronduit.core.enums import DstFold, DstGap
from cronduit.core.explain import explain


def _fail(message: str) -> None:
    """One line on stderr and exit 2: the contract for a bad expression, zone or instant."""
    click.echo(f"cronduit: {message}", err=True)
    sys.exit(2)


def _parse_after(text: str, tz: str) -> datetime:
    """An ISO 8601 instant; one without an offset is read as wall-clock time in ``tz``."""
    try:
        value = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        _fail(f"--after: {text!r} is not an ISO 8601 time such as 2026-03-29T00:00:00Z")
        raise  # unreachable; keeps type checkers sure of the return
    if value.tzinfo is None:
        value = value.replace(tzinfo=load_zone(tz))
    return value.astimezone(UTC)


def format_instant(instant: datetime) -> str:
    """The one spelling of an instant on cronduit's terminal output: ``2026-03-29T01:00:00Z``."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@click.group()
def cron() -> None:
    """Ask the time rules directly: next slots of an expression, or its meaning in words."""


@cron.command("next")
@click.argument("expression")
@click.option("--tz", default="UTC", show_default=True, help="IANA time zone to read it in.")
@click.option("--after", "after_text",
              help="Start strictly after this ISO 8601 instant (default now).")
@click.option("--count", default=5, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--dst-gap", type=click.Choice([g.value for g in DstGap]), default="run",
              show_default=True, help="Fixed-time slots in a spring-forward gap.")
@click.option("--dst-fold", type=click.Choice([f.value for f in DstFold]), default="once",
              show_default=True, help="Fixed-time slots in a repeated fall-back hour.")
def next_(expression: str, tz: str, after_text: str | None, count: int, dst_gap: str,
          dst_fold: str) -> None:
    """Print the next COUNT slots of EXPRESSION, one UTC instant per line."""
    try:
        load_zone(tz)
        schedule = Cron(expression, tz, DstPolicy(DstGap(dst_gap), DstFold(dst_fold)))
        start = _parse_after(after_text, tz) if after_text else datetime.now(UTC)
    except (CronError, ZoneError) as error:
        _fail(str(error))
        return
    lines = [format_instant(slot) for slot in itertools.islice(schedule.after(start), count)]
    click.echo("\n".join(lines))


@cron.command("explain")
@click.argument("expression")
def explain_(expression: str) -> None:
    """Say EXPRESSION in words ("At 02:30, Monday through Friday")."""
    try:
        click.echo(explain(expression))
    except CronError as error:
        _fail(str(error))
