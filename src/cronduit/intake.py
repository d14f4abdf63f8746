"""Accepting triggers from outside the timer path: manual runs, job webhooks, deliveries.

Every function here runs inside one store transaction and either writes one accepted event
(idempotent on its delivery id) or refuses without writing anything. The CLI's ``job run``
and the HTTP API call the same functions, so a refusal reads the same from both and both go
through the same durable path as a timer: accepted first, routed by the engine after.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from cronduit.audit import describe, record
from cronduit.core import backfill
from cronduit.core.config.model import Job
from cronduit.core.enums import TriggerKind
from cronduit.core.github import CodeEvent
from cronduit.core.inputs import resolve_inputs
from cronduit.core.overlap import REFUSED_PAUSED, JobState, Trigger, manual_refusal
from cronduit.core.text import TextError, check_operator, clean
from cronduit.core.timespec import Slot, format_utc
from cronduit.ports import Delivery, Event, NewEvent, Transaction

PENDING_SCAN = 100_000
"""Unrouted events read when looking for a pending manual run (the daemon routes in batches,
so more than this many unrouted events means a daemon long down; the check stays bounded)."""

LABEL_BODY_CHARS = 60
"""How much of a webhook body its run label shows; the trigger file has the whole body."""

_KEY = re.compile(r"[\x21-\x7e]{1,200}")
"""An idempotency key: 1 to 200 printable ASCII characters without spaces."""


class RequestRefused(ValueError):
    """A request that cannot be accepted as given; nothing was written.

    ``status`` is the HTTP answer (the CLI maps it to its exit codes); the message names the
    field and the rule it breaks. ``queueable`` is true for a manual run that asking again
    with queue (``--queue``, ``?queue=1``) would have accepted: each edge adds its own way of
    saying so, since the core's reason cannot know which one the caller used.
    """

    def __init__(self, status: int, message: str, *, queueable: bool = False,
                 retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.queueable = queueable
        self.retry_after = retry_after
        """Seconds to wait before asking again (503: the state store is unavailable)."""


@dataclass(frozen=True)
class Accepted:
    """An accepted trigger: its event and whether this request created it (``False``: the
    same delivery was accepted before, and that earlier event is the answer)."""

    event: Event
    created: bool


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
    accepted = _insert(tx, NewEvent(delivery_id, job.name, TriggerKind.MANUAL, label, now,
                                    payload=json.dumps({"inputs": dict(inputs)}),
                                    operator=operator))
    record(tx, "run", operator, now, job.name, inputs=dict(inputs), queue=queue,
           delivery_id=delivery_id)
    return accepted


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
    payload = json.dumps(policy.payload())
    accepted = [
        _insert(tx, NewEvent(backfill.delivery_id(job.name, slot), job.name, TriggerKind.MANUAL,
                             backfill.label(slot), now, slot=slot.instant,
                             payload=payload, operator=operator))
        for slot in slots
    ]
    record(tx, "backfill", operator, now, job.name, start=format_utc(window[0]),
           end=format_utc(window[1]), overlap=policy.name, slots=len(slots),
           new=sum(1 for one in accepted if one.created))
    return accepted


def checked_operator(operator: str | None) -> str | None:
    """``operator`` as recorded (see :func:`cronduit.core.text.check_operator`), or a 422
    naming the rule it breaks; None (nobody said) stays None."""
    if operator is None:
        return None
    try:
        return check_operator(operator)
    except TextError as error:
        raise RequestRefused(422, str(error)) from None


def webhook_delivery_id(job: str, key: str | None) -> str:
    """The delivery id of a webhook: the caller's idempotency key when it sent one, so a
    retried POST is the same trigger; a fresh one otherwise."""
    if key is None:
        return f"webhook/{job}/{uuid.uuid4().hex}"
    if not _KEY.fullmatch(key):
        raise RequestRefused(400, "Idempotency-Key: 1 to 200 printable ASCII characters, "
                                  "no spaces")
    return f"webhook/{job}/key/{key}"


def github_delivery_id(header: str | None) -> str:
    """The ``X-GitHub-Delivery`` header, required: it is what makes a redelivery one."""
    if header is None or not _KEY.fullmatch(header):
        raise RequestRefused(400, "X-GitHub-Delivery: required, 1 to 200 printable ASCII "
                                  "characters")
    return header


def accept_webhook(tx: Transaction, job: Job, delivery_id: str, body: bytes,
                   inputs: Mapping[str, str], now: datetime) -> Accepted:
    """A job webhook's POST, accepted once per delivery id with its whole body."""
    text = body.decode("utf-8", errors="replace")
    payload = {"inputs": dict(inputs), "body": text}
    return _insert(tx, NewEvent(delivery_id, job.name, TriggerKind.WEBHOOK, webhook_label(text),
                                now, payload=json.dumps(payload)))


def webhook_label(body: str) -> str:
    """``webhook`` and the start of the body on one line, clipped at :data:`LABEL_BODY_CHARS`
    characters (marked ``…``), its control characters shown as escapes (``\\x1b``)."""
    flat = " ".join(body.split())
    # Only the head is cleaned: one character more than fits is enough to know it is cut.
    return f"webhook {clean(flat[:LABEL_BODY_CHARS + 1], LABEL_BODY_CHARS)}" if flat else "webhook"


@dataclass(frozen=True)
class DeliveryAccepted:
    """A code-host delivery recorded, and the triggers derived from it (none is fine: a
    ping, or an event no job listens to). ``created`` is False for a redelivery."""

    triggers: list[Event]
    created: bool


def accept_code_event(tx: Transaction, delivery_id: str, event: CodeEvent, jobs: Sequence[str],
                      now: datetime) -> DeliveryAccepted:
    """Record a GitHub delivery once per ``X-GitHub-Delivery`` and, in the same transaction,
    one trigger for each job it matches, each naming the delivery as its parent."""
    facts = {"id": delivery_id, "source": "github", **event.facts}
    text = json.dumps(facts, sort_keys=True)
    record = Delivery(delivery_id, "github", event.delivery.event, event.label, text, now,
                      len(jobs))
    if not tx.record_delivery(record):
        return DeliveryAccepted(tx.events_of_delivery(delivery_id), created=False)
    payload = json.dumps({"delivery": facts}, sort_keys=True)
    for job in jobs:
        tx.insert_event(NewEvent(f"github/{delivery_id}/{job}", job, TriggerKind.EVENT,
                                 event.label, now, payload=payload, parent=delivery_id))
    return DeliveryAccepted(tx.events_of_delivery(delivery_id), created=True)


def _insert(tx: Transaction, event: NewEvent) -> Accepted:
    created = tx.insert_event(event) is not None
    stored = tx.event_by_delivery(event.delivery_id)
    if stored is None:  # inserted or found just now, inside this transaction
        raise RuntimeError(f"event {event.delivery_id} vanished inside its transaction")
    return Accepted(stored, created)


def _trigger(event: Event) -> Trigger:
    return Trigger(event.delivery_id, TriggerKind(event.kind), event.seq)
