"""What every door's acceptance shares: the refusal, the accepted trigger, the operator rule.

Every function of this package runs inside one store transaction and either writes one
accepted event (idempotent on its delivery id) or refuses without writing anything. The CLI's
``job run`` and the HTTP API call the same functions, so a refusal reads the same from both
and both go through the same durable path as a timer: accepted first, routed by the engine
after.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cronduit.core.text import TextError, check_operator
from cronduit.ports import Event, NewEvent, Transaction

KEY = re.compile(r"[\x21-\x7e]{1,200}")
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


def checked_operator(operator: str | None) -> str | None:
    """``operator`` as recorded (see :func:`cronduit.core.text.check_operator`), or a 422
    naming the rule it breaks; None (nobody said) stays None."""
    if operator is None:
        return None
    try:
        return check_operator(operator)
    except TextError as error:
        raise RequestRefused(422, str(error)) from None


def insert(tx: Transaction, event: NewEvent) -> Accepted:
    created = tx.insert_event(event) is not None
    stored = tx.event_by_delivery(event.delivery_id)
    if stored is None:  # inserted or found just now, inside this transaction
        raise RuntimeError(f"event {event.delivery_id} vanished inside its transaction")
    return Accepted(stored, created)
