"""The daemon: the asyncio loop, its heartbeat, applying configs, and the composition root.

* :mod:`~cronduit.daemon.wiring`: the composition root, where store, engine, executor, HTTP
  and notifier meet (:func:`serve`);
* :mod:`~cronduit.daemon.loop`: the loop that owns time and signals around the engine;
* :mod:`~cronduit.daemon.edges`: the HTTP server and the notifier the loop starts;
* :mod:`~cronduit.daemon.metrics`: what ``/metrics`` serves, fed by the engine and the loop;
* :mod:`~cronduit.daemon.reload`: ``cronduit apply`` and SIGHUP, all or nothing;
* :mod:`~cronduit.daemon.heartbeat`: who serves a state, as the CLI finds it;
* :mod:`~cronduit.daemon.lock`: one daemon per state directory;
* :mod:`~cronduit.daemon.memory`: giving freed memory back to the system.

The CLI uses this package's public face only. :func:`serve` is imported when first asked
for: the commands that only read the state should not pay for the engine, the HTTP edge
and the runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cronduit.daemon.errors import AlreadyServing, ListenError
from cronduit.daemon.heartbeat import (
    DaemonInfo,
    read_applied,
    read_daemon,
    running_daemon,
    signal_daemon,
)
from cronduit.daemon.lock import daemon_lock
from cronduit.daemon.reload import NO_CHANGES, apply_answer, ask_apply

if TYPE_CHECKING:
    from cronduit.daemon.wiring import serve

__all__ = [
    "NO_CHANGES", "AlreadyServing", "DaemonInfo", "ListenError", "apply_answer", "ask_apply",
    "daemon_lock", "read_applied", "read_daemon", "running_daemon", "serve", "signal_daemon",
]


def __getattr__(name: str) -> object:
    if name == "serve":
        from cronduit.daemon.wiring import serve  # noqa: PLC0415 - heavy, see above

        return serve
    raise AttributeError(name)
