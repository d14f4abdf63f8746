"""A small HTTP/1.1 load generator for ``bench/webhooks.py``, run as its own process.

It speaks just enough HTTP over keep-alive asyncio streams (a POST with a body, a response
with ``Content-Length``) that one Python process can offer a few thousand requests a second
without becoming the bottleneck, as httpx's full client would on this 2-core machine.

Two modes, both printing one JSON object on stdout:

- ``closed``: C connections, each sending its next request as soon as the previous one is
  answered: the most the server sustains;
- ``open``: requests sent at a fixed rate whatever the answers, each timed from the moment
  it was due, not from when a connection came free, so a server that falls behind shows it
  in the latencies (no coordinated omission).

Usage: ``python bench/_load.py MODE HOST PORTS PATHS SECONDS (CONNECTIONS | RATE)``, where
PORTS is one port or several separated by commas (servers sharing one state: connections,
and in the open loop requests, are spread over them in turn) and PATHS one path or several,
taken in turn.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import Counter

BODY = b'{"inputs": {}, "source": "bench"}'


def request(host: str, paths: list[str], number: int) -> bytes:
    path = paths[number % len(paths)]
    return (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Idempotency-Key: bench-{number}\r\nContent-Length: {len(BODY)}\r\n\r\n"
            ).encode() + BODY


async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   message: bytes) -> int:
    """Send one request, read its whole response; its status code."""
    writer.write(message)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    if length:
        await reader.readexactly(length)
    return status


async def closed(host: str, ports: list[int], paths: list[str], seconds: float,
                 connections: int) -> dict[str, object]:
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    end = time.perf_counter() + seconds
    counter = iter(range(10**9))

    async def worker(port: int) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        while time.perf_counter() < end:
            message = request(host, paths, next(counter))
            began = time.perf_counter()
            statuses[await exchange(reader, writer, message)] += 1
            latencies.append(time.perf_counter() - began)
        writer.close()

    began = time.perf_counter()
    await asyncio.gather(*(worker(ports[i % len(ports)]) for i in range(connections)))
    took = time.perf_counter() - began
    return summary(latencies, statuses, took)


async def open_loop(host: str, ports: list[int], paths: list[str], seconds: float,
                    rate: float) -> dict[str, object]:
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    idle: dict[int, asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]]] = {
        port: asyncio.Queue() for port in ports}
    opened = Counter[int]()
    max_connections = 512 // len(ports)

    async def one(number: int, due: float) -> None:
        port = ports[number % len(ports)]
        if idle[port].empty() and opened[port] < max_connections:
            opened[port] += 1
            idle[port].put_nowait(await asyncio.open_connection(host, port))
        reader, writer = await idle[port].get()
        statuses[await exchange(reader, writer, request(host, paths, number))] += 1
        latencies.append(time.perf_counter() - due)
        idle[port].put_nowait((reader, writer))

    tasks: list[asyncio.Task[None]] = []
    start = time.perf_counter() + 0.05
    total = int(seconds * rate)
    for number in range(total):
        due = start + number / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(number, due)))
    await asyncio.gather(*tasks)
    took = time.perf_counter() - start
    result = summary(latencies, statuses, took)
    result["offered_per_s"] = rate
    result["connections"] = sum(opened.values())
    return result


def summary(latencies: list[float], statuses: Counter[int], took: float) -> dict[str, object]:
    ordered = sorted(latencies)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0

    return {"requests": len(ordered), "per_s": len(ordered) / took,
            "statuses": {str(code): count for code, count in statuses.items()},
            "p50_ms": at(0.50), "p99_ms": at(0.99), "max_ms": ordered[-1] * 1000 if ordered
            else 0.0}


def main() -> None:
    mode, host, port_list, paths, seconds, amount = sys.argv[1:7]
    ports = [int(port) for port in port_list.split(",")]
    targets = paths.split(",")
    if mode == "closed":
        result = asyncio.run(closed(host, ports, targets, float(seconds), int(amount)))
    else:
        result = asyncio.run(open_loop(host, ports, targets, float(seconds), float(amount)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
