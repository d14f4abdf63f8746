"""uvicorn inside the daemon: on the daemon's own event loop, on a socket the daemon binds.

The daemon owns the process's signals (SIGTERM stops firing, SIGHUP applies), so uvicorn's
own signal capture is turned off; and the daemon binds the socket and listens on it itself,
before anything else starts, so a port in use (or taken between the bind and the listen) is a
clear start-up error rather than uvicorn exiting the process from inside a task, or the
event loop serving nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
from collections.abc import Callable, Iterator, Sequence

import uvicorn
from starlette.types import ASGIApp

SHUTDOWN_GRACE = 5.0
"""Seconds open requests get to finish when the daemon stops."""


class _Embedded(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.stopping = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def main_loop(self) -> None:
        # uvicorn's own loop wakes ten times a second to refresh its Date header and look for
        # a stop; an idle daemon should not: once a second, and at once when stopped.
        while not await self.on_tick(0):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), 1.0)


class HttpServer:
    """A started server; :meth:`stop` closes it."""

    def __init__(self, server: _Embedded, task: asyncio.Task[None],
                 sock: socket.socket, on_stop: Sequence[Callable[[], None]] = ()) -> None:
        self._server = server
        self._task = task
        self._socket = sock
        self._on_stop = on_stop
        """What the app held open (the reader's store), closed once requests are over."""

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._socket.getsockname()[:2]
        return str(host), int(port)

    async def stop(self) -> None:
        self._server.should_exit = True
        self._server.stopping.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._task), SHUTDOWN_GRACE)
        if not self._task.done():
            self._server.force_exit = True
            await self._task
        self._socket.close()
        for close in self._on_stop:
            close()


BACKLOG = 2048
"""Connections the kernel queues before the daemon accepts them."""


def bind(host: str, port: int) -> socket.socket:
    """The socket bound to the address; raises OSError (port in use, no such address) at once.

    Bound only: :func:`listen` follows, and another process may take the port in between
    (two sockets with ``SO_REUSEADDR`` may both be bound to it until one listens).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named explicitly: asyncio sets TCP_NODELAY only on sockets that say so,
    # and without it a response's body waits for the client's delayed ACK (40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.set_inheritable(False)
    except OSError:
        sock.close()
        raise
    return sock


def listen(sock: socket.socket) -> None:
    """Listen on the bound ``sock``, or close it and raise OSError (the port was taken since
    the bind). Done here, not left to the event loop, whose listen may fail in ways that do
    not surface (uvloop closes the socket and carries on as if serving)."""
    try:
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise


async def start(app: ASGIApp, sock: socket.socket,
                on_stop: Sequence[Callable[[], None]] = ()) -> HttpServer:
    """Serve ``app`` on the listening ``sock`` from the running loop; returns once it accepts
    connections, and calls ``on_stop`` when it stops. Raises OSError when it does not,
    having stopped what it started and closed ``sock``."""
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            server_header=False, backlog=BACKLOG)
    server = _Embedded(config)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    while not server.started and not task.done():
        await asyncio.sleep(0.005)
    if not task.done() and _accepting(sock):
        return HttpServer(server, task, sock, on_stop)
    server.should_exit = True
    server.stopping.set()
    failure = await _ended(task)
    sock.close()
    if isinstance(failure, OSError):
        raise failure
    why = f": {failure}" if failure is not None else ""
    raise OSError(errno.EIO, f"the HTTP server did not start{why}")


def _accepting(sock: socket.socket) -> bool:
    """Whether ``sock`` is still open and listening."""
    if sock.fileno() == -1:
        return False
    try:
        return bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN))
    except OSError:
        return False


async def _ended(task: asyncio.Task[None]) -> BaseException | None:
    """Wait for the server's task to end; what ended it, if anything did."""
    with contextlib.suppress(Exception):
        await task
    return None if task.cancelled() else task.exception()
