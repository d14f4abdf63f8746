"""Pauses: carried out at the engine's next look, whoever committed them.

A pause is written by the CLI or the API (:mod:`cronduit.intake.pausing`); the engine reads
the paused jobs at the start of each transaction, ends the pauses whose time has come, and
turns what waits in a paused job's work into skipped runs (the core's
:func:`~cronduit.core.overlap.on_pause`).
"""

from __future__ import annotations

from datetime import datetime

from cronduit.core.overlap import SKIPPED_PAUSED, on_pause
from cronduit.core.timespec import format_utc
from cronduit.engine.ending import skip
from cronduit.engine.outbox import Outbox
from cronduit.engine.plan import Stage
from cronduit.engine.work import job_state
from cronduit.intake import pausing
from cronduit.ports import Pause, Transaction


def read_pauses(stage: Stage, tx: Transaction) -> list[Pause]:
    """The pauses in force, noted as the stage's paused jobs for the transaction under way."""
    return _noted(stage, tx.pauses())


def _noted(stage: Stage, active: list[Pause]) -> list[Pause]:
    stage.paused = frozenset(pause.job for pause in active)
    return active


def settle_pauses(stage: Stage, tx: Transaction, now: datetime, outbox: Outbox) -> None:
    """End the pauses that expired, and skip the work waiting in paused jobs. The pauses are
    read once, as this runs at every tick: again only when one expired."""
    active = tx.pauses()
    expired = pausing.expire(tx, now, active)
    for ended in expired:
        outbox.lines.append(f"resume {ended.job}: the pause expired (until "
                            f"{format_utc(ended.until or now)})")
    for pause in _noted(stage, tx.pauses() if expired else active):
        job = stage.config.jobs.get(pause.job)
        if job is None or tx.newest_waiting_event(job.name) is None:
            continue
        if not tx.claim_job(job.name):  # another daemon decides this job's work now
            stage.contended = True
            continue
        events = {event.seq: event for event in tx.waiting_events(job.name)}
        for trigger in on_pause(job_state(stage, tx, job)):
            skip(stage, tx, job, events[trigger.seq], SKIPPED_PAUSED, now, outbox)
