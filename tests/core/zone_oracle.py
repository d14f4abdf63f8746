"""An independent reference for the DST rule: a minute-by-minute simulation of a cron daemon.

It walks real UTC minutes and asks, at each one, what a Debian-style cron daemon would run:
wildcard jobs match the wall clock they see; fixed-time jobs run the wall minutes a forward
jump skipped (once, at the first minute after it) and do not run again in a repeated hour.
It shares no code with ``cronduit.core.cron``, so agreement between the two means something.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from cronduit.core.cron import CronExpression
from cronduit.core.enums import DstFold, DstGap

MINUTE = timedelta(minutes=1)


def _wall_matches(expr: CronExpression, wall: datetime) -> bool:
    weekday = (wall.weekday() + 1) % 7
    return (
        wall.minute in expr.minutes
        and wall.hour in expr.hours
        and wall.month in expr.months
        and expr.day_matches(wall.day, weekday)
    )


def simulate(
    text: str,
    zone: str,
    start: datetime,
    end: datetime,
    gap: DstGap = DstGap.RUN,
    fold: DstFold = DstFold.ONCE,
) -> list[datetime]:
    """Every instant in ``(start, end]`` at which the job runs, by brute force."""
    expr = CronExpression.parse(text)
    tz = ZoneInfo(zone)
    moment = start.astimezone(UTC).replace(second=0, microsecond=0)
    previous_wall = moment.astimezone(tz).replace(tzinfo=None)
    runs: list[datetime] = []
    while moment < end:
        moment += MINUTE
        local = moment.astimezone(tz)
        wall = local.replace(tzinfo=None, fold=0)
        if expr.wildcard:
            hit = _wall_matches(expr, wall)
        elif local.fold == 1:
            hit = fold is DstFold.TWICE and _wall_matches(expr, wall)
        elif wall - previous_wall > MINUTE and gap is DstGap.RUN:
            skipped = previous_wall + MINUTE
            hit = False
            while skipped <= wall:
                hit = hit or _wall_matches(expr, skipped)
                skipped += MINUTE
        else:
            hit = _wall_matches(expr, wall)
        if hit and moment > start:
            runs.append(moment)
        previous_wall = wall
    return runs
