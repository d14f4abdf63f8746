"""The supervisor's word that an attempt's record is complete, handed to whoever waits on it.

Once a job exits, its record is complete only when the supervisor has appended the exit
status and closed the attempt file (its lock goes with it). The daemon sees the exit on its
pidfd at the same instant the supervisor does, so it used to find the lock still held and
poll: the event loop's timers have a millisecond's grain, so that poll cost a whole
millisecond between two steps of a durable execution, a quarter of the gap. The supervisor
now says ``recorded`` over its channel as it closes the file, and :func:`~.exits.wait` takes
that word instead of sleeping.

The word ends the wait: the supervisor sends it only once it has reaped the job and closed
the record, so the job has exited and its record will not change; the record is then read
from the attempt file. In the daemon the word is read on the event loop itself
(:func:`~.spawn.answer_on`), so it reaches the wait in one wake-up. Without a word (an
attempt adopted from an earlier supervisor, a channel that broke) the exit is seen on the
pidfd and the record polled, as before. A job is named by its pid and start time, so a word
never counts for a later process that reused the pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections import OrderedDict

Identity = tuple[int, int]
"""A job as the supervisor names it: its pid and its start time (``/proc``'s clock ticks)."""

EARLY_KEPT = 256
"""Words kept for jobs nobody waits on yet (a job that ended before its watch began)."""


class RecordedWords:
    """Waiters on one event loop for the supervisor's ``recorded`` words."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._waiting: dict[Identity, asyncio.Future[None]] = {}
        self._early: OrderedDict[Identity, None] = OrderedDict()
        with _LISTENING:
            _LISTENERS.add(self)

    def expect(self, job: Identity) -> asyncio.Future[None]:
        """The future done once the supervisor says ``job``'s record is complete (on the
        loop); :meth:`forget` it after the wait."""
        word = self._waiting[job] = self._loop.create_future()
        if job in self._early:
            del self._early[job]
            word.set_result(None)
        return word

    def forget(self, job: Identity) -> None:
        self._waiting.pop(job, None)

    def heard(self, job: Identity) -> None:
        """From whoever reads the channel: the word, on the loop (at once when read there)."""
        if running_loop() is self._loop:
            self._set(job)
            return
        with contextlib.suppress(RuntimeError):  # its loop is closed: nobody waits there
            self._loop.call_soon_threadsafe(self._set, job)

    def _set(self, job: Identity) -> None:
        word = self._waiting.get(job)
        if word is not None:
            if not word.done():
                word.set_result(None)
            return
        self._early[job] = None
        while len(self._early) > EARLY_KEPT:
            self._early.popitem(last=False)


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running on this thread, if any."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


_LISTENERS: weakref.WeakSet[RecordedWords] = weakref.WeakSet()
_LISTENING = threading.Lock()


def hear(job: Identity) -> None:
    """Tell every loop waiting on records (one in a daemon; several in a test process)."""
    with _LISTENING:
        listeners = list(_LISTENERS)
    for listener in listeners:
        listener.heard(job)
