"""Job webhooks: one trigger per delivery id, with the whole body."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime

from cronduit.core.config.model import Job
from cronduit.core.enums import TriggerKind
from cronduit.core.payload import Payload
from cronduit.core.text import clean
from cronduit.intake.refusals import KEY, Accepted, RequestRefused, insert
from cronduit.ports import NewEvent, Transaction

LABEL_BODY_CHARS = 60
"""How much of a webhook body its run label shows; the trigger file has the whole body."""


def webhook_delivery_id(job: str, key: str | None) -> str:
    """The delivery id of a webhook: the caller's idempotency key when it sent one, so a
    retried POST is the same trigger; a fresh one otherwise."""
    if key is None:
        return f"webhook/{job}/{uuid.uuid4().hex}"
    if not KEY.fullmatch(key):
        raise RequestRefused(400, "Idempotency-Key: 1 to 200 printable ASCII characters, "
                                  "no spaces")
    return f"webhook/{job}/key/{key}"


def accept_webhook(tx: Transaction, job: Job, delivery_id: str, body: bytes,
                   inputs: Mapping[str, str], now: datetime) -> Accepted:
    """A job webhook's POST, accepted once per delivery id with its whole body."""
    text = body.decode("utf-8", errors="replace")
    payload = Payload.build(inputs=inputs, body=text)
    return insert(tx, NewEvent(delivery_id, job.name, TriggerKind.WEBHOOK, webhook_label(text),
                               now, payload=payload))


def webhook_label(body: str) -> str:
    """``webhook`` and the start of the body on one line, clipped at :data:`LABEL_BODY_CHARS`
    characters (marked ``…``), its control characters shown as escapes (``\\x1b``)."""
    flat = " ".join(body.split())
    # Only the head is cleaned: one character more than fits is enough to know it is cut.
    return f"webhook {clean(flat[:LABEL_BODY_CHARS + 1], LABEL_BODY_CHARS)}" if flat else "webhook"
