"""The embedded uvicorn server: bound by the daemon, on its loop, answering promptly."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable

import httpx
import pytest
import uvloop
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from cronduit.http import server

pytestmark = pytest.mark.anyio


def test_the_listening_socket_says_it_is_tcp_so_replies_are_not_delayed() -> None:
    """asyncio sets TCP_NODELAY only on sockets created with IPPROTO_TCP; without it a reply
    written in two parts waits for the client's delayed ACK (40 ms on Linux)."""
    sock = server.bind("127.0.0.1", 0)
    try:
        assert socket.IPPROTO_TCP == sock.proto
    finally:
        sock.close()


def test_a_port_in_use_is_an_error_at_bind() -> None:
    first = server.bind("127.0.0.1", 0)
    try:
        first.listen()
        with pytest.raises(OSError, match="in use"):
            server.bind("127.0.0.1", first.getsockname()[1])
    finally:
        first.close()


def taken_after_bind() -> tuple[socket.socket, socket.socket]:
    """A socket cronduit bound, and another's socket that took its port since: bound to it
    as well (both with SO_REUSEADDR, neither listening), it listened first."""
    other = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    other.bind(("127.0.0.1", 0))
    ours = server.bind("127.0.0.1", other.getsockname()[1])
    other.listen()
    return ours, other


def test_a_port_taken_between_bind_and_listen_is_an_error_at_listen() -> None:
    """The bind went through, the listen cannot: OSError at once, and the socket is closed."""
    ours, other = taken_after_bind()
    with other, pytest.raises(OSError, match="in use"):
        server.listen(ours)
    assert -1 == ours.fileno()


@pytest.mark.parametrize(("new_loop", "why"), [(asyncio.new_event_loop, "in use"),
                                               (uvloop.new_event_loop, "did not start")],
                         ids=["asyncio", "uvloop"])
def test_a_server_that_cannot_listen_raises_rather_than_serving_nothing(
    new_loop: Callable[[], asyncio.AbstractEventLoop], why: str,
) -> None:
    """Left to listen itself, uvloop's server closes the socket and carries on as if serving
    (saying nothing of why); on every loop, start raises instead, with the socket closed."""
    ours, other = taken_after_bind()
    with other, asyncio.Runner(loop_factory=new_loop) as runner, pytest.raises(OSError,
                                                                              match=why):
        runner.run(server.start(Starlette(), ours))
    assert -1 == ours.fileno()


async def test_requests_on_one_connection_are_answered_without_a_delayed_ack() -> None:
    async def ping(_: Request) -> Response:
        return JSONResponse({"pong": "yes"})

    app = Starlette(routes=[Route("/ping", ping)])
    sock = server.bind("127.0.0.1", 0)
    server.listen(sock)
    running = await server.start(app, sock)
    host, port = running.address
    try:
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as client:
            await client.get("/ping")
            began = time.perf_counter()
            for _ in range(10):
                assert {"pong": "yes"} == (await client.get("/ping")).json()
            took = time.perf_counter() - began
        assert took < 0.3  # ten delayed ACKs alone would take 0.4 s
    finally:
        await running.stop()
    await asyncio.sleep(0)
