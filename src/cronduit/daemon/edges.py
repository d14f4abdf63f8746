"""The edges the daemon's loop starts around the engine: the HTTP server and the notifier.

This is the HTTP half of the composition root: the listening socket is bound before anything
else starts (a port in use, not this host's, or taken between the bind and the listen stops
the daemon with nothing applied, adopted or launched), and the server, its acceptor (a second
store connection, group-committing what requests accept) and its gateway (the daemon's
answers the routes need) are wired here, so the loop knows none of them.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cronduit.core.config.model import Config
from cronduit.daemon.errors import ListenError
from cronduit.executor import workspace
from cronduit.intake.acceptor import Acceptor
from cronduit.notifier import NotificationSender
from cronduit.paths import StatePaths
from cronduit.ports import Clock, Store

if TYPE_CHECKING:
    from cronduit.http.server import HttpServer

__all__ = ["Acceptor", "HttpWiring", "ListenError", "NotificationSender", "listen",
           "start_http"]


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

    def workspace_clone(self, name: str) -> Path | None:
        """The job's workspace clone, where a GitHub check's branch can be confirmed."""
        config = self.config()
        job = config.jobs.get(name)
        if job is None or job.workspace is None:
            return None
        state = StatePaths.of(config, self.config_path).root
        return workspace.existing_clone(job.workspace, state, self.config_path.resolve().parent)


async def start_http(wiring: HttpWiring, sock: socket.socket) -> tuple[HttpServer, Acceptor]:
    """Serve on the listening socket; webhooks and run-now requests enter there. Any failure
    to come up ends in the one :class:`ListenError` line, with nothing left open."""
    from cronduit.http import Gateway, create_app, server  # noqa: PLC0415 - heavy

    acceptor = Acceptor(wiring.open_store, wiring.wake, wiring.log)
    gateway = Gateway(config=wiring.config, secret=wiring.secret, acceptor=acceptor,
                      clock=wiring.clock, dispatching=wiring.dispatching,
                      run_of=wiring.run_of, workspace=wiring.workspace_clone,
                      metrics=wiring.metrics)
    try:
        return await server.start(create_app(gateway), sock), acceptor
    except Exception as error:
        sock.close()
        acceptor.close()
        raise cannot_listen(wiring.config(), error) from None


def url_host(host: str) -> str:
    """A host as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host
