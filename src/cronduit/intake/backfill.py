"""Backfills: one manual trigger per slot of a window, in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from cronduit.core import backfill
from cronduit.core.config.model import Job
from cronduit.core.enums import TriggerKind
from cronduit.core.overlap import REFUSED_PAUSED
from cronduit.core.payload import Payload
from cronduit.core.timespec import Slot, format_utc
from cronduit.intake.audit import describe, record
from cronduit.intake.refusals import Accepted, RequestRefused, checked_operator, insert
from cronduit.ports import NewEvent, Transaction


def accept_backfill(tx: Transaction, job: Job, slots: Sequence[Slot],
                    policy: backfill.BackfillPolicy, *, window: tuple[datetime, datetime],
                    operator: str | None, now: datetime) -> list[Accepted]:
    """A backfill: one manual trigger per slot (see :mod:`cronduit.core.backfill`), all in
    this transaction, each idempotent on its delivery id; refused (409) while the job is
    paused, naming who paused it. Written to the audit log with the window, the policy and
    how many slots were new."""
    operator = checked_operator(operator)
    pause = tx.active_pause(job.name)
    if pause is not None:
        raise RequestRefused(409, f"job {job.name}: {REFUSED_PAUSED} ({describe(pause)})")
    payload = Payload.build(backfill=policy)
    accepted = [
        insert(tx, NewEvent(backfill.delivery_id(job.name, slot), job.name, TriggerKind.MANUAL,
                             backfill.label(slot), now, slot=slot.instant,
                             payload=payload, operator=operator))
        for slot in slots
    ]
    record(tx, "backfill", operator, now, job.name, start=format_utc(window[0]),
           end=format_utc(window[1]), overlap=policy.name, slots=len(slots),
           new=sum(1 for one in accepted if one.created))
    return accepted
