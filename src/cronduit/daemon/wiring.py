"""The composition root: one ``cronduit serve``, wired from its parts in one place.

Here, and only here, the concrete parts meet: the store (and the second connection the HTTP
acceptor commits on), the process runner, the daemon's loop with its engine, the HTTP edge
and the notifier (:mod:`cronduit.daemon.edges`), the metrics the engine feeds and
``/metrics`` serves (:mod:`cronduit.daemon.metrics`), the system clock and the event loop.
The CLI's ``serve`` command loads the config and calls :func:`serve`; nothing else builds
a daemon.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from cronduit.clock import SourceClock, SystemClock
from cronduit.core.config.model import Config
from cronduit.core.nodes import node_name
from cronduit.daemon.heartbeat import own_start_time
from cronduit.daemon.lease import NodeLease
from cronduit.daemon.lock import hold_daemon_lock
from cronduit.daemon.loop import Daemon
from cronduit.daemon.memory import limit_malloc_arenas
from cronduit.daemon.metrics import DaemonMetrics
from cronduit.executor import lease_deadline
from cronduit.executor.procfs import identity
from cronduit.executor.runner import ProcessRunner
from cronduit.paths import StatePaths
from cronduit.ports import Clock, NodeClaim, Store
from cronduit.secrets import load_secrets, state_password
from cronduit.store import membership_of, open_store

CRASH_VARIABLE = "CRONDUIT_CRASH_AT"
"""For crash tests: the engine step (fired, routed, launching) after which the daemon
SIGKILLs itself, once, exactly as a power cut or an OOM kill would stop it."""


def serve(config_path: Path, config: Config, text: str, *, dry_run: bool) -> None:
    """Run the daemon on ``config`` (loaded from ``text`` at ``config_path``) until it is
    asked to stop. Raises :class:`AlreadyServing`,
    :class:`~cronduit.daemon.edges.ListenError` and
    :class:`~cronduit.secrets.SecretsError` for the CLI to report."""
    limit_malloc_arenas()  # before any thread starts
    paths = StatePaths.of(config, config_path)
    password = state_password(config, config_path, os.environ)
    lock = hold_daemon_lock(paths)
    store = open_store(config, config_path, daemon=True, password=password)
    try:
        daemon, runner = _daemon(config_path, config, text, paths, store, dry_run, password)
        with asyncio.Runner(loop_factory=_loop_factory()) as loop_runner:
            loop_runner.run(_serve(daemon, runner))
    finally:
        store.close()
        os.close(lock)


def _daemon(config_path: Path, config: Config, text: str, paths: StatePaths,
            store: Store, dry_run: bool, password: str | None) -> tuple[Daemon, ProcessRunner]:
    """The daemon and its runner. The runner asks the daemon, at each launch, for what an
    apply may have changed (the secrets, ``max_log``) and wakes it when a process ends; the
    two are built in turn, so the runner reads through ``daemon`` once it exists."""
    daemon: Daemon | None = None

    def wake() -> None:
        if daemon is not None:
            daemon.wake()

    def secrets() -> Mapping[str, str]:
        return daemon.secrets if daemon is not None else {}

    def max_log() -> int:
        return (daemon.engine.config if daemon is not None else config).settings.max_log

    runner = ProcessRunner(paths, config_path, secrets, wake, max_log=max_log)
    node = node_name(config.settings.node, socket.gethostname())
    membership = membership_of(store)
    clock: Clock = SystemClock()
    lease = None
    if membership is not None:
        clock = SourceClock(membership.now)  # the database's: see cronduit.clock
        claim = NodeClaim(node, socket.gethostname(), os.getpid(), own_start_time(),
                          config.settings.listen)
        lease = NodeLease(membership, claim, float(config.settings.lease), _holder_gone,
                          runner.hold_lease, lease_deadline)
    daemon = Daemon(config_path, config, store, runner, clock, dry_run=dry_run, log=_log,
                    checkpoint=_crash_point(os.environ.get(CRASH_VARIABLE)),
                    secrets=lambda current: load_secrets(current, config_path, os.environ),
                    open_store=lambda: open_store(config, config_path, daemon=True,
                                                  password=password, answering=True),
                    config_text=text, node=node, lease=lease, metrics=DaemonMetrics())
    return daemon, runner


def _holder_gone(pid: int, pid_start: int | None) -> bool:
    """Whether the daemon that held a node from this host is gone (a restart)."""
    found = identity(pid)
    return found is None or (pid_start is not None and found.start_time != pid_start)



async def _serve(daemon: Daemon, runner: ProcessRunner) -> None:
    runner.attach(asyncio.get_running_loop(), answers_here=True)
    await daemon.serve()


def _crash_point(step: str | None) -> Callable[[str], None] | None:
    if not step:
        return None

    def checkpoint(name: str) -> None:
        if name == step:
            _log(f"crash test: SIGKILL after {name}")
            os.kill(os.getpid(), signal.SIGKILL)

    return checkpoint


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop where it is installed (it comes with uvicorn's standard extras): the same
    asyncio API, with the socket and timer work done in C, which is most of a webhook's cost
    on the loop. The standard loop otherwise."""
    try:
        import uvloop  # noqa: PLC0415 - optional
    except ImportError:
        return None
    return uvloop.new_event_loop


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
