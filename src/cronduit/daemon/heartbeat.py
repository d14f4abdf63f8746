"""What the CLI and the daemon tell each other through the store.

The daemon writes a heartbeat (``meta['daemon']``) every few seconds; a command that needs a
running daemon (manual runs that should start now, ``apply``) reads it to know whether one is
up and which process to signal: its pid and its start time, since a pid alone can name
another process once the daemon is gone (pids are reused). ``apply`` results come back in
``meta['last_apply']``. The text of the config the daemon applied, at start and at every
apply, is ``meta['applied_config']``: commands read it when the file on disk is not the one
in force (:mod:`cronduit.core.config.in_force`).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timedelta

from cronduit.core.config import ConfigErrors, load_config
from cronduit.core.config.in_force import Applied
from cronduit.core.timespec import format_utc
from cronduit.executor.procfs import Identity, identity
from cronduit.ports import Store, Transaction

HEARTBEAT_EVERY = timedelta(seconds=2)
STALE_AFTER = timedelta(seconds=10)


@dataclass(frozen=True)
class DaemonInfo:
    """The running daemon, as its last heartbeat described it."""

    pid: int
    host: str
    started_at: str
    heartbeat_at: str
    dry_run: bool
    stopped: bool = False
    listen: str | None = None
    """The address the HTTP server listens on (the real port when the config says 0)."""
    start_time: int | None = None
    """The daemon process's start time (``/proc/<pid>/stat`` field 22): with ``pid``, it
    names that one process, where a pid alone may by now be another's. None in a heartbeat
    an older cronduit wrote."""

    def alive(self, now: datetime) -> bool:
        """Fresh heartbeat, not stopped, and (on this host) the very process still runs."""
        if self.stopped:
            return False
        if now - datetime.fromisoformat(self.heartbeat_at) > STALE_AFTER:
            return False
        if self.host != socket.gethostname():
            return True
        try:
            return self.is_process(identity(self.pid))
        except PermissionError:  # /proc hides another user's processes: cannot tell
            return True

    def is_process(self, found: Identity | None) -> bool:
        """Whether ``found`` (what ``/proc`` says of ``pid`` now) is the daemon's process.

        A heartbeat without a start time (an older cronduit's) has nothing but its pid to
        go by, so any live process with that pid passes, as it did for that cronduit.
        """
        if found is None or found.exited:
            return False
        return self.start_time in (None, found.start_time)


def own_start_time() -> int:
    """This process's start time, for the heartbeat of a daemon it runs."""
    found = identity(os.getpid())
    assert found is not None  # a process always finds itself
    return found.start_time


def signal_daemon(info: DaemonInfo, signum: int) -> None:
    """Send ``signum`` to the daemon's process on this host, and never to any other.

    Through a pidfd opened before its identity is checked: a pidfd names one process for
    good, so a pid recycled after the check cannot be signalled either. Raises
    :class:`ProcessLookupError` when the daemon's process is gone (whatever now has its
    pid), :class:`PermissionError` when it is another user's.
    """
    pidfd = os.pidfd_open(info.pid)
    try:
        if not info.is_process(identity(info.pid)):
            raise ProcessLookupError(errno.ESRCH, "the daemon's process is gone")
        signal.pidfd_send_signal(pidfd, signum)
    finally:
        os.close(pidfd)


HEARTBEAT = "daemon"
"""The meta key of the last heartbeat written, by whichever daemon serves the state."""


def host_key(host: str) -> str:
    """The meta key of the last heartbeat of a daemon on ``host``: where many daemons share
    the state, the CLI signals the one on its own host (``apply``, a run asked for)."""
    return f"{HEARTBEAT}@{host}"


def write_heartbeat(store: Store, info: DaemonInfo, *, shared: bool = False) -> None:
    text = json.dumps(asdict(info))
    with store.transaction() as tx:
        if not (shared and info.stopped):  # one daemon stopping is not the state unserved
            tx.set_meta(HEARTBEAT, text)
        if shared:
            tx.set_meta(host_key(info.host), text)


def read_daemon(store: Store) -> DaemonInfo | None:
    """This host's daemon's heartbeat, where many share the state; else the last one."""
    with store.transaction() as tx:
        raw = tx.get_meta(host_key(socket.gethostname())) or tx.get_meta(HEARTBEAT)
    if raw is None:
        return None
    known = {field.name for field in fields(DaemonInfo)}  # a newer cronduit's extra fields
    return DaemonInfo(**{key: value for key, value in json.loads(raw).items() if key in known})


def running_daemon(store: Store, now: datetime) -> DaemonInfo | None:
    """The daemon serving this store, if one is up."""
    info = read_daemon(store)
    return info if info is not None and info.alive(now) else None


APPLIED_CONFIG = "applied_config"


def write_applied(tx: Transaction, text: str, path: str, now: datetime) -> None:
    """Keep the text of the config the daemon just applied (at start, or by an apply)."""
    tx.set_meta(APPLIED_CONFIG, json.dumps({"text": text, "path": path,
                                            "at": now.isoformat()}))


def read_applied(store: Store) -> Applied | None:
    """The config the daemon last applied, if any daemon ever did (and it still loads)."""
    with store.transaction() as tx:
        raw = tx.get_meta(APPLIED_CONFIG)
    if raw is None:
        return None
    kept = json.loads(raw)
    try:
        config = load_config(kept["text"], kept["path"])
    except ConfigErrors:  # applied by an older version whose rules were looser
        return None
    return Applied(config, format_utc(datetime.fromisoformat(kept["at"])))
