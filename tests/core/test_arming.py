"""When a job's slots are due (its jitter) and the key its timer is stored with."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronduit.core.arming import due_of, timing_key
from cronduit.core.catchup import slot_instant
from cronduit.core.config.loader import load_config
from cronduit.core.config.model import Job
from cronduit.core.timespec import schedule_of

NOW = datetime(2026, 3, 30, 12, tzinfo=UTC)


def job(text: str) -> Job:
    return load_config(f"jobs:\n  a: {text}\n", "c.yaml").jobs["a"]


def test_a_job_without_jitter_is_due_at_its_slots_instant() -> None:
    subject = job("{run: 'true', cron: '0 * * * *'}")
    schedule = schedule_of(subject)
    assert schedule is not None
    assert slot_instant is due_of(subject, schedule)


def test_jitter_does_not_move_an_interval_jobs_slots() -> None:
    """An interval job's slots are its own elapsed time: nothing to spread."""
    subject = job("{run: 'true', every: 1h, jitter: 10m}")
    schedule = schedule_of(subject)
    assert schedule is not None
    assert slot_instant is due_of(subject, schedule)


def test_jitter_moves_a_calendar_slot_by_the_same_offset_each_time() -> None:
    """The offset is stable per job and slot: asking twice gives the same due time."""
    subject = job("{run: 'true', cron: '0 * * * *', jitter: 30m}")
    schedule = schedule_of(subject)
    assert schedule is not None
    slot = schedule.next_after(NOW)
    assert slot is not None
    due = due_of(subject, schedule)
    assert (True, due(slot)) == (slot.instant <= due(slot) < slot.instant + timedelta(minutes=30),
                                 due_of(subject, schedule)(slot))


def test_a_job_without_timing_has_the_empty_timing_key() -> None:
    assert ("", True) == (timing_key(job("{run: 'true'}")),
                          timing_key(job("{run: 'true', every: 1h}")).startswith("every "))
