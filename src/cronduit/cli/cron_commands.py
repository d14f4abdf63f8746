"""``cronduit cron next`` and ``cronduit cron explain``: the time rules, asked directly."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import click

from cronduit.cli.context import runtime
from cronduit.cli.options import bounded_instant, config_option, fail, load_config_file
from cronduit.cli.render import echo_json
from cronduit.core.cron import (
    CronError,
    CronExpression,
    DstPolicy,
    TzPrefixError,
    ZoneError,
    dst_policy_ignored,
    load_zone,
)
from cronduit.core.enums import DstFold, DstGap
from cronduit.core.explain import explain
from cronduit.core.limits import LATEST_INSTANT, MAX_SLOTS_LISTED
from cronduit.core.timespec import (
    CalendarSchedule,
    Slot,
    cron_schedule,
    format_utc,
    next_jittered,
    schedule_of,
)


def _parse_after(text: str, tz: str) -> datetime:
    """An ISO 8601 instant; one without an offset is read as wall-clock time in ``tz``."""
    try:
        value = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        fail(f"--after: {text!r} is not an ISO 8601 time such as 2026-03-29T00:00:00Z")
    if value.tzinfo is None:
        value = value.replace(tzinfo=load_zone(tz))
    return bounded_instant(value, text, "--after")


@click.group()
def cron() -> None:
    """Ask the time rules directly: next slots of an expression, or its meaning in words."""


@cron.command("next")
@click.argument("expression", required=False)
@click.option("--tz", default="UTC", show_default=True, help="IANA time zone to read it in.")
@click.option("--after", "after_text",
              help="Start strictly after this ISO 8601 instant (default now).")
@click.option("--count", default=5, show_default=True, type=click.IntRange(1, MAX_SLOTS_LISTED))
@click.option("--dst-gap", type=click.Choice([g.value for g in DstGap]),
              help="Fixed-time slots in a spring-forward gap [default: run].")
@click.option("--dst-fold", type=click.Choice([f.value for f in DstFold]),
              help="Fixed-time slots in a repeated fall-back hour [default: once].")
@click.option("--job", help="Instead of EXPRESSION, a configured cron or at job: its jittered "
              "due times, in its own zone and DST policy.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per slot, one a line: slot, name, due.")
@config_option
def next_(expression: str | None, tz: str, after_text: str | None, count: int,
          dst_gap: str | None, dst_fold: str | None, job: str | None, as_json: bool,
          config_path: Path) -> None:
    """Print the next COUNT slots of EXPRESSION (or the due times of --job), one UTC instant
    per line."""
    if (expression is None) == (job is None):
        fail("give either EXPRESSION or --job NAME")
    try:
        load_zone(tz)
        start = _parse_after(after_text, tz) if after_text else runtime().clock.now()
        if job is not None:
            due = _job_slots(config_path, job, start, count)
        else:
            assert expression is not None
            schedule = cron_schedule(expression, tz, _dst_policy(expression, dst_gap, dst_fold))
            due = [(slot, slot.instant) for slot in _slots(schedule, start, count)]
    except TzPrefixError as error:
        fail(str(error.pointing_at(f"give the zone with --tz {error.zone or 'ZONE'}")))
    except (CronError, ZoneError) as error:
        fail(str(error))
    if as_json:
        for slot, at in due:
            echo_json({"slot": format_utc(slot.instant), "name": slot.name,
                       "due": format_utc(at)})
    else:
        click.echo("\n".join(format_utc(at) for _, at in due))


def _dst_policy(expression: str, gap: str | None, fold: str | None) -> DstPolicy:
    """The DST policy the options give; either option on a wildcard expression exits 2, as
    ``dst`` on such a job is refused by the config: it would be silently ignored."""
    given = [name for name, value in (("--dst-gap", gap), ("--dst-fold", fold)) if value]
    ignored = dst_policy_ignored(CronExpression.parse(expression))
    if given and ignored:
        fail(f"{given[0]} has no effect: {ignored}")
    default = DstPolicy()
    return DstPolicy(DstGap(gap) if gap else default.gap, DstFold(fold) if fold else default.fold)


def _job_slots(config_path: Path, name: str, start: datetime,
               count: int) -> list[tuple[Slot, datetime]]:
    """A configured job's next slots, each with its due time: the slot plus its stable
    jitter."""
    config = load_config_file(config_path)
    job = config.jobs.get(name)
    if job is None:
        fail(f"no job named {name!r} in {config_path}")
    schedule = schedule_of(job)
    if not isinstance(schedule, CalendarSchedule):
        fail(f"job {name!r} has no cron or at timing (an every job counts from its last run)")
    return [(slot, next_jittered(schedule, name, slot, job.jitter))
            for slot in _slots(schedule, start, count)]


def _slots(schedule: CalendarSchedule, start: datetime, count: int) -> Iterator[Slot]:
    """The first ``count`` slots after ``start``, up to the latest instant cronduit takes."""
    slots = itertools.takewhile(lambda slot: slot.instant <= LATEST_INSTANT,
                                schedule.slots_after(start))
    return itertools.islice(slots, count)


@cron.command("explain")
@click.argument("expression")
def explain_(expression: str) -> None:
    """Say EXPRESSION in words ("At 02:30, Monday through Friday")."""
    try:
        click.echo(explain(expression))
    except TzPrefixError:
        fail("a TZ= prefix is not supported in the expression; leave it out, since the words "
             "do not depend on the zone (cron next takes a zone with --tz)")
    except CronError as error:
        fail(str(error))
