"""The rules a job's timer is armed by that come from the job rather than its schedule.

What must live here: when a job's slot is due (its instant, plus the job's jitter offset on a
calendar timing) and the key a stored timer is compared with to tell whether the config's
timing is still the one it was armed for. The daemon arms timers by these rules and
``cronduit status``, ``schedule list`` and ``doctor`` predict its arming by them, so the two
can never disagree about when a job runs next.
"""

from __future__ import annotations

from datetime import datetime

from cronduit.core.catchup import DueOf, slot_instant
from cronduit.core.config.model import Job
from cronduit.core.timespec import CalendarSchedule, Schedule, Slot, next_jittered

__all__ = ["due_of", "timing_key"]


def due_of(job: Job, schedule: Schedule) -> DueOf:
    """When each slot of ``job`` is due: jitter spreads calendar slots only (an interval job's
    slots are already its own elapsed time), and no jitter leaves a slot due at its instant."""
    if not job.jitter or not isinstance(schedule, CalendarSchedule):
        return slot_instant

    def jittered(slot: Slot) -> datetime:
        return next_jittered(schedule, job.name, slot, job.jitter)

    return jittered


def timing_key(job: Job) -> str:
    """The key a timer armed for ``job``'s current timing is stored with (``""``: no timing)."""
    return job.timing_key or ""
