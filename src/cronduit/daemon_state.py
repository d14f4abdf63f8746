"""What the CLI and the daemon tell each other through the store.

The daemon writes a heartbeat (``meta['daemon']``) every few seconds; a command that needs a
running daemon (manual runs that should start now, ``apply``) reads it to know whether one is
up and which process to signal. ``apply`` results come back in ``meta['last_apply']``. The
text of the config the daemon applied, at start and at every apply, is ``meta['applied_config']``:
commands read it when the file on disk is not the one in force
(:mod:`cronduit.core.config.in_force`).
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from cronduit.core.config import ConfigErrors, load_config
from cronduit.core.config.in_force import Applied
from cronduit.core.timespec import format_utc
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

    def alive(self, now: datetime) -> bool:
        """Fresh heartbeat, not stopped, and (on this host) the process exists."""
        if self.stopped:
            return False
        if now - datetime.fromisoformat(self.heartbeat_at) > STALE_AFTER:
            return False
        if self.host != socket.gethostname():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def write_heartbeat(store: Store, info: DaemonInfo) -> None:
    with store.transaction() as tx:
        tx.set_meta("daemon", json.dumps(asdict(info)))


def read_daemon(store: Store) -> DaemonInfo | None:
    with store.transaction() as tx:
        raw = tx.get_meta("daemon")
    if raw is None:
        return None
    return DaemonInfo(**json.loads(raw))


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
