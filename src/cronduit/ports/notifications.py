"""The store's notification queue: run outcomes to deliver to notifiers.

A notification is queued in the transaction that records the outcome (so a crash loses
none) and delivered after it commits, at least once: one that was sent but whose try could
not be recorded is due again. Its state is a :class:`NotificationState`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from cronduit.core.enums import NotificationState
from cronduit.ports.records import Notification


class NotificationQueue(Protocol):
    """Notifications of run outcomes, from queued to sent or given up."""

    def insert_notification(self, run_id: str, notifier: str, body: str,
                            now: datetime) -> None:
        """Queue ``body`` for ``notifier``: ``pending``, due at ``now``, no try made yet.
        Each call queues one more (no key): the caller queues a run's outcome once, in the
        transaction that ends the run."""
        ...

    def due_notifications(self, now: datetime, limit: int) -> list[Notification]:
        """Up to ``limit`` ``pending`` notifications whose next try is at or before ``now``,
        soonest first (then in the order they were queued).

        Concurrency: claims nothing; the daemon sends one pass at a time. A backend whose
        daemons send at once may lock the rows it returns and skip locked ones; delivery
        stays at least once either way."""
        ...

    def record_notification_try(self, seq: int, state: NotificationState, next_at: datetime,
                                error: str, now: datetime) -> None:
        """One more try of notification ``seq`` was made: count it, and set its state
        (``sent``; ``failed``: given up; ``pending``: again at ``next_at``), its last error
        and its update time ``now``. Nothing for an unknown seq. The database refuses a
        state outside :class:`NotificationState`."""
        ...

    def notifications_of_run(self, run_id: str) -> list[Notification]:
        """The run's notifications, in the order they were queued."""
        ...

    def failed_notifications(self, limit: int) -> list[Notification]:
        """The ``limit`` notifications most recently given up on, newest first."""
        ...
