"""cronduit's cron engine against two oracles, over random expressions, zones and DST nights.

cronsim implements the same Debian-cron rules and is the first oracle. It has been seen to go
wrong in zones that shift by 30 minutes, zones whose changes fall at :45 or at midnight, and
when asked from inside a repeated hour; where it disagrees there, the brute-force simulation
in ``zone_oracle`` (which shares no code with the engine) decides, because the rule wins.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from cronsim import CronSim
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cronduit import Cron, CronError, DstPolicy
from cronduit.core.enums import DstFold, DstGap
from tests.core.strategies import ODD_ZONES, ZONES, cron_texts, instants_near_transitions
from tests.core.zone_oracle import simulate

WINDOW = timedelta(days=2)
PROPERTY = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _parse_or_reject(text: str, zone: str, dst: DstPolicy = DstPolicy()) -> Cron:  # noqa: B008
    try:
        return Cron(text, zone, dst)
    except CronError:
        assume(False)
        raise


def _inside_repeated_hour(instant: datetime, zone: str) -> bool:
    tz = ZoneInfo(zone)
    wall = instant.astimezone(tz).replace(tzinfo=None)
    first, second = wall.replace(tzinfo=tz, fold=0), wall.replace(tzinfo=tz, fold=1)
    return first.utcoffset() != second.utcoffset()


class CronsimStuck(Exception):
    """cronsim stopped making progress on this input (it has been seen to repeat a slot or
    spin forever around some transitions); the simulation oracle then decides alone."""


class _BoundedCronSim(CronSim):
    """cronsim with a budget of clock ticks, so an input it loops on cannot hang the suite."""

    budget = 200_000

    def tick(self, seconds: int = 1) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise CronsimStuck
        super().tick(seconds)


def _cronsim_next(text: str, zone: str, start: datetime, end: datetime) -> list[datetime]:
    runs: list[datetime] = []
    for found in _BoundedCronSim(text, start.astimezone(ZoneInfo(zone))):
        moment = found.astimezone(UTC)
        if moment > end:
            break
        if runs and moment <= runs[-1]:
            raise CronsimStuck  # a slot repeated or went backwards: no longer an oracle
        runs.append(moment)
    return runs


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, str, datetime]:
    zone = draw(st.sampled_from(ZONES))
    return draw(cron_texts), zone, draw(instants_near_transitions(zone))


@PROPERTY
@given(cases())
def test_forward_slots_agree_with_cronsim_or_the_rule(case: tuple[str, str, datetime]) -> None:
    """Slots after an instant near a transition match cronsim, or the rule where cronsim errs."""
    text, zone, start = case
    cron = _parse_or_reject(text, zone)
    end = start + WINDOW
    mine = list(itertools.takewhile(lambda d: d <= end, cron.after(start)))
    try:
        theirs: list[datetime] | None = _cronsim_next(text, zone, start, end)
    except CronsimStuck:
        theirs = None
    if theirs is not None and mine != theirs:
        assert zone in ODD_ZONES or _inside_repeated_hour(start, zone), (text, zone, start)
    assert simulate(text, zone, start, end) == mine


@PROPERTY
@given(cases())
def test_backward_slots_are_the_forward_slots_reversed(case: tuple[str, str, datetime]) -> None:
    """before() from the end of a window yields exactly the after() slots in reverse."""
    text, zone, start = case
    cron = _parse_or_reject(text, zone)
    end = start + WINDOW
    forward = list(itertools.takewhile(lambda d: d < end, cron.after(start)))
    backward = list(itertools.takewhile(lambda d: d > start, cron.before(end)))
    assert list(reversed(forward)) == backward


@PROPERTY
@given(cases(), st.sampled_from(list(DstGap)), st.sampled_from(list(DstFold)))
def test_every_dst_policy_matches_the_simulation(
    case: tuple[str, str, datetime], gap: DstGap, fold: DstFold
) -> None:
    """The gap and fold knobs do what the minute-by-minute simulation does."""
    text, zone, start = case
    cron = _parse_or_reject(text, zone, DstPolicy(gap, fold))
    end = start + WINDOW
    mine = list(itertools.takewhile(lambda d: d <= end, cron.after(start)))
    assert simulate(text, zone, start, end, gap, fold) == mine
