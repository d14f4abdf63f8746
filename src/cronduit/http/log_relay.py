"""Following a run that goes on another host: its daemon is asked for the log, and what it
streams is passed on; failing that, the tails stored with the run as its attempts end.

Where daemons on many hosts share a PostgreSQL state, a run's log is a file on the host
that runs it (SPEC §10), and any daemon's API may be asked to follow it. The run's record
names its node and the nodes' table says where each node's daemon listens, so the daemon
asked opens the same follow on that daemon (with the API token, marked as a relay so that
it is never relayed again) and passes each whole event on as it comes. Should that daemon
not answer, answer with an error, or go quiet for longer than its keep-alive comments
allow, the follow goes on here from the tail the store keeps of the run's log
(:mod:`cronduit.core.log_tails`), which is written as each attempt ends: the lines then
come an attempt at a time, and the lines already passed on may come again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import quote

import httpx

from cronduit.core.enums import RunState
from cronduit.http.auth import api_token
from cronduit.http.gateway import Gateway
from cronduit.ports import Run, RunLogTail

RELAYED = "x-cronduit-relayed"
"""The header a relaying daemon sends: the daemon asked follows its own file or the stored
tails, and never relays the request on."""
RELAY_CONNECT = 3.0
"""Seconds to wait for the other daemon to accept the connection."""
RELAY_SILENCE = 45.0
"""Seconds the other daemon may send nothing before it is given up on: three of its
keep-alive comments' intervals (:data:`cronduit.http.log_follow.KEEP_ALIVE`)."""


def going_elsewhere(gateway: Gateway, run: Run) -> bool:
    """Whether the run is going on another node's host: its log is there."""
    return (run.state != RunState.ENDED and gateway.node is not None
            and run.node is not None and run.node != gateway.node)


async def relay(gateway: Gateway, run: Run, attempt: int | None) -> AsyncIterator[str]:
    """The events of the run's log as the daemon of its node streams them, each whole;
    nothing when that daemon cannot be asked. The caller tells from the last event whether
    the stream reached the run's end."""
    assert run.node is not None
    base = await gateway.peer(run.node)
    if base is None:
        return
    params = {"follow": "1", **({"attempt": str(attempt)} if attempt is not None else {})}
    timeout = httpx.Timeout(RELAY_SILENCE, connect=RELAY_CONNECT)
    try:
        async with httpx.AsyncClient(timeout=timeout) as client, client.stream(
                "GET", f"{base}/v1/runs/{quote(run.id, safe='')}/log", params=params,
                headers=_headers(gateway)) as answer:
            if answer.status_code != 200:
                return
            block: list[str] = []
            async for line in answer.aiter_lines():
                if line:
                    block.append(line)
                elif block:
                    yield "\n".join(block) + "\n\n"
                    block = []
    except httpx.HTTPError:
        return


def _headers(gateway: Gateway) -> dict[str, str]:
    """The relay's mark, and the API token where one is set (the other daemon needs it for
    reads when it does not listen on loopback)."""
    token = api_token(gateway)
    return {RELAYED: "1", **({"Authorization": f"Bearer {token}"} if token else {})}


@dataclass
class StoredNews:
    """What a stored tail adds to the log followed so far. A run of one command logs all its
    attempts to one file, so a later tail holds the earlier one's bytes; a durable run logs
    each step attempt to a file of its own, so a tail of a new attempt is a new log."""

    durable: bool
    only: int | None
    """The attempt asked for; None: every one."""
    attempt: int = 0
    size: int = 0
    """How many bytes of the attempt's log were given."""

    def news(self, tail: RunLogTail | None) -> bytes:
        """The bytes of ``tail`` not given yet (all it holds, when more came than it
        keeps); nothing for a tail of an attempt not asked for."""
        if tail is None or (self.durable and self.only not in (None, tail.attempt)):
            return b""
        if self.durable and tail.attempt != self.attempt:
            self.attempt, self.size = tail.attempt, 0
        new = tail.size - self.size
        if new <= 0:
            return b""
        self.size = tail.size
        return tail.tail[-new:] if new <= len(tail.tail) else tail.tail
