"""Sending the queued notifications: POSTs on the daemon's loop, fail-open, bounded.

The engine queues a notification in the transaction that ends a run; this edge sends the due
ones, all at once and each within :data:`~cronduit.core.notify.TIMEOUT`, and records each try:
sent, pending again (with the next try's time) or failed for good, with the reason. Nothing
here touches a run's outcome or holds up the next run: a down notifier costs a few pending
rows and a line in the log.

A notifier's URL often carries a credential (a Slack webhook's path is one), so no message,
log line or record ever includes it: errors are named by kind and status code only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import httpx

from cronduit.core.config.model import Config
from cronduit.core.enums import NotificationState
from cronduit.core.notify import TIMEOUT, next_try
from cronduit.core.timespec import format_utc
from cronduit.faults import reason_of
from cronduit.ports import Clock, Notification, Store

BATCH = 100
"""Notifications sent in one pass; the rest wait for the next (a second later at most)."""

T = TypeVar("T")
OffLoop = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class Try:
    """One delivery attempt's result, to record."""

    seq: int
    state: NotificationState
    next_at: datetime
    error: str


class NotificationSender:
    """Sends due notifications when kicked; one pass at a time."""

    def __init__(self, config: Callable[[], Config], store: Store, clock: Clock,
                 off_loop: OffLoop, log: Callable[[str], None],
                 timeout: float = TIMEOUT) -> None:
        self._config = config
        self._store = store
        self._clock = clock
        self._off_loop = off_loop
        """Runs store work on the engine's thread, where the store's connection lives."""
        self._log = log
        self._timeout = timeout
        self._client = httpx.AsyncClient(timeout=timeout, follow_redirects=False)
        self._pass: asyncio.Task[int] | None = None

    def kick(self) -> bool:
        """Start a pass unless one is going; whether it started one (the daemon calls this
        after a tick that queued notifications, and once a second for retries come due)."""
        if self._pass is None or self._pass.done():
            self._pass = asyncio.get_running_loop().create_task(self._send_due_or_wait())
            return True
        return False

    async def _send_due_or_wait(self) -> int:
        """:meth:`send_due`, where a state store that cannot be written (a full disk) only
        means waiting for the next kick: the daemon's loop says so in the log. Notifications
        sent whose tries could not be recorded stay due, and are sent again."""
        try:
            return await self.send_due()
        except Exception as error:
            if reason_of(error) is None:
                raise
            return 0

    async def send_due(self) -> int:
        """Send what is due now; how many were tried."""
        now = self._clock.now()
        due: list[Notification] = await self._off_loop(self._due, now)
        if not due:
            return 0
        tries = await asyncio.gather(*(self._send(notification, now) for notification in due))
        await self._off_loop(self._record, tries, self._clock.now())
        return len(tries)

    async def close(self) -> None:
        if self._pass is not None and not self._pass.done():
            await asyncio.wait([self._pass], timeout=self._timeout + 1)
        await self._client.aclose()

    def _due(self, now: datetime) -> list[Notification]:
        with self._store.transaction() as tx:
            return tx.due_notifications(now, BATCH)

    def _record(self, tries: list[Try], now: datetime) -> None:
        with self._store.transaction() as tx:
            for done in tries:
                tx.record_notification_try(done.seq, done.state, done.next_at, done.error, now)

    async def _send(self, notification: Notification, now: datetime) -> Try:
        notifier = self._config().notifiers.get(notification.notifier)
        if notifier is None:
            return self._verdict(notification, now, "the notifier is no longer in the config",
                                 final=True)
        try:
            answer = await self._client.post(
                notifier.url, content=notification.body,
                headers={"content-type": "application/json", "user-agent": "cronduit"})
        except httpx.TimeoutException:
            return self._verdict(notification, now, f"no answer within {self._timeout:g}s")
        except httpx.HTTPError as error:
            return self._verdict(notification, now, _kind(error))
        if 200 <= answer.status_code < 300:
            return Try(notification.seq, NotificationState.SENT, now, "")
        return self._verdict(notification, now, f"HTTP {answer.status_code}")

    def _verdict(self, notification: Notification, now: datetime, error: str, *,
                 final: bool = False) -> Try:
        attempts = notification.attempts + 1
        retry_at = None if final else next_try(attempts, now)
        name, run = notification.notifier, notification.run_id
        if retry_at is None:
            self._log(f"notify {name} of run {run}: failed after {attempts} tries ({error}); "
                      "given up")
            return Try(notification.seq, NotificationState.FAILED, now, error)
        self._log(f"notify {name} of run {run}: try {attempts} failed ({error}); next try at "
                  f"{format_utc(retry_at)}")
        return Try(notification.seq, NotificationState.PENDING, retry_at, error)


def _kind(error: httpx.HTTPError) -> str:
    """An error named by what went wrong, never by its message (which may hold the URL)."""
    if isinstance(error, httpx.ConnectError):
        return "could not connect"
    if isinstance(error, httpx.RemoteProtocolError):
        return "the notifier broke the connection"
    return f"request failed ({type(error).__name__})"
