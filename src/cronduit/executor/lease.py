"""The node's lease as its supervisors see it: a file saying by when this node's jobs are gone.

With the state in PostgreSQL, each daemon holds a lease on its node in the database (SPEC
§10). A daemon that cannot renew it (frozen by SIGSTOP, cut off from the database, a stalled
machine) loses its runs: once the lease has expired, another daemon records them as lost and
retries them. So by then they must be gone, or two runs of one job would go on at once on
two hosts. The daemon cannot be the one to end them, since it may be the very process that
is frozen; its supervisors (:mod:`.supervisor`, :mod:`.lease_watch`) do, from this file:

    <state>/lease       <boot id> <term at> <kill at>

one line of text: the kernel's id of the boot it was written in, then two instants in
seconds on ``CLOCK_BOOTTIME``. At the first, each job started under the lease has its
process group sent SIGTERM; at the second, SIGKILL. The daemon writes the file (a
temporary file, then ``os.replace``, so a reader never sees half of it) after each renewal
that succeeded, through :meth:`~cronduit.executor.runner.ProcessRunner.hold_lease`, and
removes it where there is no lease (the SQLite state).

Every supervisor of the node reads the same file: the current one and older ones that
still watch jobs started before a daemon's restart, so a restarted daemon that renews the
lease keeps those jobs alive too. A file that is missing, cannot be read, was written in
another boot, or says anything but that line is no deadline at all: nothing is ever
killed on a guess.

Why ``CLOCK_BOOTTIME`` rather than ``CLOCK_MONOTONIC`` (``time.monotonic()``), which the
daemon reads: both are one clock for every process of the host, immune to changes of the
wall clock, but the monotonic clock stops while the machine is suspended and the
database's does not. A lease that ran out during a suspend must end its jobs as soon as
the machine wakes, not a whole lease later. The daemon's monotonic instant is turned into
boot time when the file is written; the two clocks differ by a constant while the machine
runs. The boot id makes a file left from before a reboot (both clocks start again at zero)
say nothing.
"""

from __future__ import annotations

import contextlib
import math
import os
import stat
import threading
import time
from functools import cache
from pathlib import Path
from typing import NamedTuple

LEASE_GRACE = 3.0
"""Seconds between the SIGTERM and the SIGKILL that end a lease's jobs: time for a job to
clean up after itself (its temporary files, its own locks). Shorter than a timeout's 10 s
(:data:`~cronduit.executor.GRACE`) because it comes out of the lease: every second of grace
is a second earlier after the last renewal that the runs start being stopped, and so a
shorter outage of the database that stops them. A short lease gets less
(:func:`term_before`)."""

MAX_LEASE_MARGIN = 5.0
"""The most :func:`lease_margin` keeps back, in seconds."""

LEASE_CHECK = 0.25
"""Seconds between a supervisor's looks at the lease file while it has jobs under it; it
also wakes at the instants the file names, so a signal is late by a wake-up, not a look."""

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
_MAX_BYTES = 256
"""Far more than the one line of a lease file; reading stops there."""


class Deadline(NamedTuple):
    """When the jobs under a lease are stopped, in seconds on ``CLOCK_BOOTTIME``."""

    term_at: float
    kill_at: float


def lease_margin(lease: float) -> float:
    """Seconds of ``lease`` kept back between the supervisor's kill and the lease's expiry.

    A sixth of the lease, at most :data:`MAX_LEASE_MARGIN` (5 s of the default 30 s). It
    covers what comes between the instant of the kill and the jobs being gone: the
    supervisor's wake-up, the kernel taking the process groups down, a starved machine, and
    the host's clock running at another rate than the database's (NTP slews by at most
    0.05 %). A fraction, so a short lease (in tests, say) keeps most of itself to renew in.
    """
    return min(lease / 6, MAX_LEASE_MARGIN)


def lease_deadline(sent_at: float, lease: float) -> float:
    """The ``until`` to hold after a renewal that succeeded: ``sent_at + lease − margin``.

    ``sent_at`` is ``time.monotonic()`` read *before* the renewal was sent. The database
    sets the expiry from its own clock, read once the statement has reached it, so later in
    real time than ``sent_at``: the supervisors' kill comes at least :func:`lease_margin`
    before the expiry, and by the time any daemon can see the node's lease expired and take
    its runs over, they are gone. That holds only if the database reads its clock after the
    statement arrived: ``clock_timestamp()`` or ``statement_timestamp()``, or ``now()`` in
    a transaction begun after ``sent_at``, never the ``now()`` of a transaction opened
    before it.
    """
    return sent_at + lease - lease_margin(lease)


def term_before(left: float) -> float:
    """How long before the kill the SIGTERM comes, for a lease with ``left`` seconds to go
    when it was renewed: :data:`LEASE_GRACE`, or a quarter of ``left`` if that is less, so a
    short lease still leaves the daemon most of itself to renew before anything is stopped
    (renewals come every third of the lease)."""
    return min(LEASE_GRACE, max(0.0, left) / 4)


def lease_clock() -> float:
    """Now, on the clock the lease file's instants are on."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


@cache
def boot_id() -> str:
    """The kernel's id of this boot; the same placeholder in every process without one."""
    try:
        return BOOT_ID.read_text().strip() or "-"
    except OSError:
        return "-"


def write_lease(path: Path, until: float | None) -> None:
    """Hold the lease until ``until`` (``time.monotonic()``), or remove the file (None).

    Atomic: the line goes to a temporary file beside ``path``, then replaces it. Raises
    :class:`OSError` when it cannot be written (a full disk); the deadline before stays, so
    the jobs end too early rather than too late.
    """
    if until is None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    left = until - time.monotonic()
    kill_at = lease_clock() + left
    line = f"{boot_id()} {kill_at - term_before(left)!r} {kill_at!r}\n"
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        try:
            temporary.write_text(line)
        except FileNotFoundError:  # a state folder nothing has been written to yet
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(line)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def read_lease(path: str) -> Deadline | None:
    """The deadline ``path`` holds; None for no deadline, whatever is wrong with the file.

    Never raises and never blocks on what is not a regular file (a FIFO put there, say):
    this runs in the supervisor, which must outlive anything found on the disk.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return parse_lease(os.read(fd, _MAX_BYTES))
    except OSError:
        return None
    finally:
        os.close(fd)


def parse_lease(raw: bytes) -> Deadline | None:
    """The deadline in a lease file's bytes, if they are its one line, written in this boot."""
    fields = raw.split()
    if len(fields) != 3 or raw[-1:] != b"\n" or fields[0].decode(errors="replace") != boot_id():
        return None
    try:
        term_at, kill_at = float(fields[1]), float(fields[2])
    except ValueError:
        return None
    if not (math.isfinite(term_at) and math.isfinite(kill_at)) or term_at > kill_at:
        return None
    return Deadline(term_at, kill_at)
