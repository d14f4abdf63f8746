"""Manual runs (``cronduit job run``, the API's run-now): refused while paused, running or
pending unless queued, their inputs checked against the job's declarations."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime

from cronduit.core.config.model import Job
from cronduit.core.enums import TriggerKind
from cronduit.core.inputs import resolve_inputs
from cronduit.core.overlap import REFUSED_PAUSED, JobState, Trigger, manual_refusal
from cronduit.core.payload import Payload
from cronduit.core.text import clean
from cronduit.intake.audit import describe, record
from cronduit.intake.refusals import Accepted, RequestRefused, checked_operator, insert
from cronduit.ports import Event, NewEvent, Transaction

PENDING_SCAN = 100_000
"""Unrouted events read when looking for a pending manual run (the daemon routes in batches,
so more than this many unrouted events means a daemon long down; the check stays bounded)."""


def manual_state(tx: Transaction, name: str) -> JobState:
    """The job as a manual request meets it: its runs going and its work, where manual events
    not routed yet (the daemon is down or has not looked) count as waiting."""
    waiting = tx.waiting_events(name)
    unrouted = [event for event in tx.new_events(PENDING_SCAN)
                if event.job == name and event.kind == TriggerKind.MANUAL]
    pending = sorted([*waiting, *unrouted], key=lambda event: event.seq)
    return JobState(running=len(tx.active_runs(name)),
                    waiting=tuple(_trigger(event) for event in pending),
                    paused=tx.active_pause(name) is not None)


def check_inputs(job: Job, given: object) -> dict[str, str]:
    """The run's inputs (the given values over the declared defaults, as the run record
    shows them), checked before anything is written; raises :class:`RequestRefused` (422)
    naming every bad input and its rule."""
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise RequestRefused(422, "inputs: must be an object of NAME: value")
    try:
        return resolve_inputs(job.inputs, given)
    except ValueError as error:
        raise RequestRefused(422, str(error)) from None


def accept_manual(tx: Transaction, job: Job, inputs: Mapping[str, str], *, queue: bool,
                  operator: str | None, now: datetime) -> Accepted:
    """A manual run request: refused (409) while the job is paused, runs or has a manual run
    pending, unless ``queue`` asks to wait behind the run or request. Written to the audit
    log with its inputs. ``operator`` is held to the rule of every operator field (422)."""
    operator = checked_operator(operator)
    refusal = manual_refusal(manual_state(tx, job.name), queue)
    queueable = refusal != REFUSED_PAUSED  # the one refusal that queue cannot lift
    if refusal == REFUSED_PAUSED:
        pause = tx.active_pause(job.name)
        refusal += f" ({describe(pause)})" if pause is not None else ""
    if refusal is not None:
        raise RequestRefused(409, f"job {job.name}: {refusal}", queueable=queueable)
    label = "manual" if operator is None else f"manual by {clean(operator)}"
    delivery_id = f"manual/{job.name}/{uuid.uuid4().hex}"
    accepted = insert(tx, NewEvent(delivery_id, job.name, TriggerKind.MANUAL, label, now,
                                    payload=Payload.build(inputs=inputs),
                                    operator=operator))
    record(tx, "run", operator, now, job.name, inputs=dict(inputs), queue=queue,
           delivery_id=delivery_id)
    return accepted


def _trigger(event: Event) -> Trigger:
    return Trigger(event.delivery_id, TriggerKind(event.kind), event.seq)
