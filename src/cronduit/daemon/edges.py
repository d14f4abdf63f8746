"""The edges the daemon's loop starts around the engine: the HTTP server and the notifier.

This is the HTTP half of the composition root: the listening socket is bound before anything
else starts (a port in use, not this host's, or taken between the bind and the listen stops
the daemon with nothing applied, adopted or launched), and the server, its acceptor (a second
store connection, group-committing what requests accept) and its gateway (the daemon's
answers the routes need) are wired here, so the loop knows none of them.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cronduit.core.config.model import Config
from cronduit.core.nodes import daemon_url
from cronduit.daemon.errors import ListenError
from cronduit.executor import workspace
from cronduit.executor.logs import LogReader
from cronduit.intake.acceptor import Acceptor
from cronduit.notifier import NotificationSender
from cronduit.paths import StatePaths
from cronduit.ports import Clock, NodeRecord, Run, Store

if TYPE_CHECKING:
    from cronduit.http.server import HttpServer

__all__ = ["Acceptor", "HttpWiring", "ListenError", "NotificationSender", "bound_address",
           "listen", "read_log", "start_http"]


Bind = Callable[[str, int], socket.socket]


def listen(config: Config, bind: Bind | None) -> socket.socket:
    """Bind and listen on ``settings.listen`` (:func:`cronduit.http.server.bind` unless a test
    passes another ``bind``)."""
    from cronduit.http import server  # noqa: PLC0415 - heavy

    try:
        sock = (bind or server.bind)(*config.settings.listen_address)
    except OSError as error:
        raise cannot_listen(config, error) from None
    try:
        server.listen(sock)
    except OSError as error:
        raise cannot_listen(config, error) from None
    return sock


def cannot_listen(config: Config, error: Exception) -> ListenError:
    """The one line a daemon that cannot listen stops with, whatever the reason."""
    why = error.strerror if isinstance(error, OSError) and error.strerror else error
    return ListenError(f"cannot listen on {config.settings.listen} (settings.listen): {why}")


@dataclass(frozen=True)
class HttpWiring:
    """What the HTTP edge is given of the daemon: each read at request time, since an apply
    replaces the config and the secrets."""

    config_path: Path
    open_store: Callable[[], Store]
    config: Callable[[], Config]
    secret: Callable[[str], str | None]
    dispatching: Callable[[], bool]
    run_of: Callable[[str, float], Awaitable[str | None]]
    wake: Callable[[], None]
    clock: Clock
    log: Callable[[str], None]
    metrics: Callable[[], bytes]
    """The daemon's metrics, rendered in the Prometheus text format."""
    node: str | None = None
    """This daemon's node where daemons share the state; None: alone."""
    nodes: Callable[[], Sequence[NodeRecord]] | None = None
    """Every node as the shared state records it (blocking); None: alone."""

    async def peer(self, name: str) -> str | None:
        """Where the live daemon of node ``name`` listens (``http://HOST:PORT``), as the
        nodes' table says; None when no daemon of it is live there, or it records none."""
        if self.nodes is None:
            return None
        found = await asyncio.to_thread(self.nodes)
        record = next((one for one in found if one.name == name and one.retired_at is None),
                      None)
        return None if record is None else daemon_url(record.listen, record.host)

    def workspace_clone(self, name: str) -> Path | None:
        """The job's workspace clone, where a GitHub check's branch can be confirmed."""
        config = self.config()
        job = config.jobs.get(name)
        if job is None or job.workspace is None:
            return None
        state = StatePaths.of(config, self.config_path).root
        return workspace.existing_clone(job.workspace, state, self.config_path.resolve().parent)

    def run_folder(self, run_id: str) -> Path:
        """Where a run's files are on this host."""
        return StatePaths.of(self.config(), self.config_path).run(run_id)

    def log_of(self, run: Run, attempt: int, position: int) -> tuple[bytes, int] | None:
        """The run's log on this host from ``position`` on, as ``job logs`` reads it."""
        config = self.config()
        return read_log(StatePaths.of(config, self.config_path), config.settings.max_log,
                        run, attempt, position)


def read_log(paths: StatePaths, cap: int | None, run: Run, attempt: int,
             position: int) -> tuple[bytes, int] | None:
    """Attempt ``attempt``'s log of ``run`` from ``position`` (in the job's bytes) on, holes
    skipped and cuts marked, and the position after it; None when there is no such file."""
    path = paths.log_of(run.id, attempt, run.execution_id is not None)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        reader = LogReader(fd, cap, position)
        return b"".join(reader.chunks()), reader.position
    finally:
        os.close(fd)


async def start_http(wiring: HttpWiring, sock: socket.socket) -> tuple[HttpServer, Acceptor]:
    """Serve on the listening socket; webhooks and run-now requests enter there. Any failure
    to come up ends in the one :class:`ListenError` line, with nothing left open."""
    from cronduit.http import Gateway, Reader, create_app, server  # noqa: PLC0415 - heavy

    acceptor = Acceptor(wiring.open_store, wiring.wake, wiring.log)
    reader = Reader(wiring.open_store)
    gateway = Gateway(config=wiring.config, secret=wiring.secret, acceptor=acceptor,
                      clock=wiring.clock, dispatching=wiring.dispatching,
                      run_of=wiring.run_of, read=reader.read,
                      workspace=wiring.workspace_clone, run_folder=wiring.run_folder,
                      log=wiring.log_of, metrics=wiring.metrics, node=wiring.node,
                      peer=wiring.peer)
    try:
        return await server.start(create_app(gateway), sock, on_stop=[reader.close]), acceptor
    except Exception as error:
        sock.close()
        acceptor.close()
        reader.close()
        raise cannot_listen(wiring.config(), error) from None


def url_host(host: str) -> str:
    """A host as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


def bound_address(sock: socket.socket) -> str:
    """``HOST:PORT`` the socket is bound to: the port taken where the config said ``:0``."""
    host, port = sock.getsockname()[:2]
    return f"{url_host(host)}:{port}"
