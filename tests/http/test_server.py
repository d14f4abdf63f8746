"""The embedded uvicorn server: bound by the daemon, on its loop, answering promptly."""

from __future__ import annotations

import asyncio
import socket
import time

import httpx
import pytest
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


async def test_requests_on_one_connection_are_answered_without_a_delayed_ack() -> None:
    async def ping(_: Request) -> Response:
        return JSONResponse({"pong": "yes"})

    app = Starlette(routes=[Route("/ping", ping)])
    running = await server.start(app, server.bind("127.0.0.1", 0))
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
