"""GitHub deliveries: recorded once per delivery id, with one trigger per job matched."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cronduit.core.enums import TriggerKind
from cronduit.core.github import CodeEvent
from cronduit.core.payload import Payload
from cronduit.intake.refusals import KEY, RequestRefused
from cronduit.ports import Delivery, Event, NewEvent, Transaction


def github_delivery_id(header: str | None) -> str:
    """The ``X-GitHub-Delivery`` header, required: it is what makes a redelivery one."""
    if header is None or not KEY.fullmatch(header):
        raise RequestRefused(400, "X-GitHub-Delivery: required, 1 to 200 printable ASCII "
                                  "characters")
    return header


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
    payload = Payload.build(delivery=facts)
    for job in jobs:
        tx.insert_event(NewEvent(f"github/{delivery_id}/{job}", job, TriggerKind.EVENT,
                                 event.label, now, payload=payload, parent=delivery_id))
    return DeliveryAccepted(tx.events_of_delivery(delivery_id), created=True)
