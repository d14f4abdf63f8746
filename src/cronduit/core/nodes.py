"""Nodes: which daemon is which, and which jobs' runs each may start (SPEC §10).

With a PostgreSQL state many daemons share one state; each is a node, named by
``settings.node`` or, by default, by its host's name. A job's ``nodes:`` globs narrow the
nodes its runs may start on (a backup that needs the host with the disk); timers fire and
triggers are accepted on any node whatever the job says, only the run waits for an eligible
one. Pure: the host's name comes in as a value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import lru_cache

from cronduit.core.config.fields import NODE_NAME
from cronduit.core.config.model import Job
from cronduit.core.limits import MAX_NODE_NAME
from cronduit.core.timespec import format_utc

_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9._-]+")
FALLBACK_NODE = "node"
"""The name of a node whose host's name has nothing a node name may hold."""


def node_name(configured: str | None, hostname: str) -> str:
    """``settings.node``, else the host's name made a valid node name (characters a name
    may not hold become ``-``, cut to 63)."""
    if configured is not None:
        return configured
    name = _NOT_IN_A_NAME.sub("-", hostname).lstrip("-._")[:MAX_NODE_NAME]
    return name if NODE_NAME.fullmatch(name) else FALLBACK_NODE


@lru_cache(maxsize=1024)
def _pattern(glob: str) -> re.Pattern[str]:
    # Node globs hold only ``*`` and ``?`` besides name characters (the config checks), so
    # this is the whole of their syntax; fnmatch would bring ``[...]`` and the file system.
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c)
                              for c in glob))


def runs_on(globs: Sequence[str] | None, node: str) -> bool:
    """Whether a job with these ``nodes:`` globs may start runs on ``node`` (case counts:
    node names are compared as written)."""
    return globs is None or any(_pattern(glob).fullmatch(node) for glob in globs)


def excluded_jobs(jobs: Iterable[Job], node: str) -> tuple[str, ...]:
    """The jobs whose runs may not start on ``node``, sorted: what this node's routing and
    retries leave to the others."""
    return tuple(sorted(job.name for job in jobs if not runs_on(job.nodes, node)))


def live_matches(globs: Sequence[str], live: Iterable[str]) -> bool:
    """Whether any live node matches a job's ``nodes:`` (``doctor`` warns when none does)."""
    return any(runs_on(globs, node) for node in live)


def taken_by(held_host: str, held_pid: int, expires_at: datetime, retired: bool, now: datetime,
             my_host: str, holder_gone: bool) -> str | None:
    """Why a node held as described may not be taken now, or None when it may: its lease
    expired (by the store's clock ``now``), it was retired, or its holder was a daemon on
    this host whose process is gone (a restart within the lease)."""
    if retired or expires_at <= now or (held_host == my_host and holder_gone):
        return None
    return (f"a live daemon holds it (host {held_host}, pid {held_pid}; its lease runs until "
            f"{format_utc(expires_at)}): give each daemon its own settings.node")


_ANY_ADDRESS = ("0.0.0.0", "[::]", "::", "")


def daemon_url(listen: str | None, host: str) -> str | None:
    """Where a node's daemon can be asked over HTTP, from the address it listens on
    (``HOST:PORT``, as its node's row records it) and its host's name: a daemon listening on
    every address is asked at its host's name. None when it records no address."""
    if not listen or ":" not in listen:
        return None
    address, _, port = listen.rpartition(":")
    if not port.isdigit() or port == "0":
        return None
    return f"http://{host if address in _ANY_ADDRESS else address}:{port}"
