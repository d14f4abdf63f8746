"""Wake-ups between daemons: LISTEN/NOTIFY, taken as a hint only.

A transaction that accepts triggers, or asks another node to stop a run, sends a
notification on :data:`CHANNEL`; PostgreSQL delivers it when (and only if) the transaction
commits, to every daemon listening on the database. A listening daemon then looks at once
instead of at its next turn. Nothing rests on it: a notification is lost whenever the
listening connection is (a restart of the server, a cut link), so each daemon also looks at
least every second on its own, and the listener wakes it once more after each reconnection,
in case something was committed while nobody listened.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg

CHANNEL = "cronduit"
"""One channel for the database: daemons of other states in it only cause a spare look."""
WAIT = 1.0
"""Seconds between checks of whether the listener should stop."""
RECONNECT_FIRST, RECONNECT_LONGEST = 0.5, 5.0
"""Seconds before the first reconnection, doubling up to the longest."""


class Listener:
    """A thread that calls ``wake`` on each notification and after each (re)connection."""

    def __init__(self, conninfo: str, wake: Callable[[], None],
                 password: str | None = None) -> None:
        self._conninfo = conninfo
        self._password: dict[str, Any] = {} if password is None else {"password": password}
        self._wake = wake
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen, name="cronduit-listen",
                                        daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        pause = RECONNECT_FIRST
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True, **self._password) as db:
                    db.execute(f"LISTEN {CHANNEL}")
                    pause = RECONNECT_FIRST
                    self._wake()  # anything committed while nobody listened
                    while not self._stop.is_set():
                        for _ in db.notifies(timeout=WAIT):
                            self._wake()
            except psycopg.Error:
                # The connection is gone (the server restarted, the link was cut): the
                # daemon's own turns and its outage lines say so; here, only try again.
                self._stop.wait(pause)
                pause = min(RECONNECT_LONGEST, pause * 2)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=WAIT + 1)
