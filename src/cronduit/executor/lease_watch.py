"""The supervisor's watch on the node's lease: the jobs under it end when it does.

A thread of the supervisor (:mod:`.supervisor`), not its serving loop, because the loop
can be held up by the very daemon whose lease is lapsing: a daemon frozen halfway through
sending a request leaves the loop waiting for the rest of it. The thread only reads the
lease file (:mod:`.lease`) and signals process groups.

While any job started under a lease is running, the thread reads that lease's file every
:data:`~cronduit.executor.lease.LEASE_CHECK` seconds (and at the instants it names). Past
its ``term_at`` each such job's process group gets SIGTERM, past its ``kill_at`` SIGKILL,
each once, with a line in the job's log saying why; the supervisor then records the exit
as for any other (128 + N) and, since the job's pid still names its group until it is
reaped, sends SIGKILL to what is left of the group. A deadline renewed before it passed
stops nothing. A job is signalled only while it is held here, and the supervisor lets go of
it (:meth:`LeaseWatch.release`) before reaping it: a signal never reaches a pid the kernel
may have given to another process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from dataclasses import dataclass

from cronduit.executor.lease import LEASE_CHECK, Deadline, lease_clock, read_lease

TERM_NOTE = (b"cronduit: stopping the run (SIGTERM): this node's lease could not be renewed, "
             b"and another daemon may take the run over\n")
KILL_NOTE = (b"cronduit: killing the run (SIGKILL): this node's lease could not be renewed "
             b"and is about to expire\n")


@dataclass
class _Held:
    """One job under a lease: its pid (and process group), its log, what it was sent."""

    pid: int
    log: int | None
    """A descriptor of the watch's own on the job's log, for the line saying why."""
    lease: str
    termed: bool = False
    killed: bool = False


class LeaseWatch:
    """The jobs under a lease, and the thread that stops them when it ends."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._held: dict[int, _Held] = {}
        self._thread: threading.Thread | None = None

    def hold(self, key: int, pid: int, log: int | None, lease: str) -> None:
        """Watch job ``pid`` under the lease file ``lease`` until :meth:`release` of ``key``.

        ``log`` is a descriptor the watch closes at the release, or None for no line.
        """
        with self._changed:
            self._held[key] = _Held(pid, log, lease)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cronduit-lease",
                                                daemon=True)
                self._thread.start()
            if len(self._held) == 1:
                self._changed.notify()

    def release(self, key: int) -> bool:
        """Stop watching; whether the lease's end signalled the job. Once this returns, the
        watch sends the job nothing more."""
        with self._changed:
            held = self._held.pop(key, None)
        if held is None:
            return False
        if held.log is not None:
            os.close(held.log)
        return held.termed or held.killed

    def check(self) -> float:
        """One look at every lease with jobs under it; seconds until the next look is due."""
        with self._changed:
            leases = {held.lease for held in self._held.values()}
        deadlines = {lease: read_lease(lease) for lease in leases}
        now = lease_clock()
        with self._changed:
            for held in self._held.values():
                deadline = deadlines.get(held.lease)
                if deadline is not None:
                    self._enforce(held, deadline, now)
        upcoming = [at - now for deadline in deadlines.values() if deadline is not None
                    for at in deadline if at > now]
        return min([LEASE_CHECK, *upcoming])

    def _enforce(self, held: _Held, deadline: Deadline, now: float) -> None:
        if now >= deadline.kill_at and not held.killed:
            held.killed = True
            self._stop(held, signal.SIGKILL, KILL_NOTE)
        elif now >= deadline.term_at and not (held.termed or held.killed):
            held.termed = True
            self._stop(held, signal.SIGTERM, TERM_NOTE)

    def _stop(self, held: _Held, signum: int, note: bytes) -> None:
        if held.log is not None:  # before the signal: the line comes before what the job says
            with contextlib.suppress(OSError):
                os.write(held.log, note)
        with contextlib.suppress(OSError):  # a group already gone is no error
            os.killpg(held.pid, signum)

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._held:
                    self._changed.wait()
            try:
                pause = self.check()
            except Exception:  # never the end of the watch: the next look tries again
                pause = LEASE_CHECK
            with self._changed:
                self._changed.wait(pause)
