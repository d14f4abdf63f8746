"""A run's log over HTTP: as text, or followed as Server-Sent Events until the run ends.

The log is read as ``cronduit job logs`` reads it (the gateway's
:data:`~cronduit.http.gateway.LogBytes`, the executor's reader): a durable run's step
attempts each log apart and are given one after another, or only the one asked for; a run
whose log is not on this host gives the tail the store kept with it. Following polls the
run's state and its log, reading the state first so that an ended run's last words are
sent; it sends one event per line (a line not ended yet waits for its end, or the run's),
then an ``end`` event with the outcome, and stops.
"""

from __future__ import annotations

import asyncio
import codecs
import json
from collections.abc import AsyncIterator

from fastapi import HTTPException

from cronduit.core.enums import Outcome, RunState
from cronduit.core.text import clean
from cronduit.http.gateway import Gateway
from cronduit.http.log_relay import StoredNews, going_elsewhere, relay
from cronduit.ports import Run

FOLLOW_POLL = 0.25
"""Seconds between two looks at a followed run and its log."""
KEEP_ALIVE = 15.0
"""Seconds a followed log may say nothing before a comment is sent, so that a client or a
relaying daemon can tell a quiet run from a dead stream."""


def _attempts(run: Run, attempt: int | None) -> list[int]:
    """The attempts whose logs make the run's log: one file for a run of one command."""
    if attempt is not None:
        return [attempt]
    if run.execution_id is None:
        return [1]
    return list(range(1, max(run.attempts, 1) + 1))


async def log_text(gateway: Gateway, run: Run, attempt: int | None) -> str:
    """The run's log as it is now; 404 when there is none to give, saying why."""
    parts = [await asyncio.to_thread(gateway.log, run, n, 0) for n in _attempts(run, attempt)]
    found = [part[0] for part in parts if part is not None]
    if not found:
        stored = await gateway.read(lambda tx: tx.stored_log_tail(run.id))
        if stored is None:
            raise HTTPException(404, _why_no_log(run))
        found = [stored.tail]
    return b"".join(found).decode("utf-8", "replace")


def _why_no_log(run: Run) -> str:
    if run.outcome == Outcome.SKIPPED:
        return f"run {run.id} was skipped ({run.reason}): it never ran, so it has no log"
    if run.files_pruned:
        return f"the log of run {run.id} was deleted by retention (settings.kept_runs)"
    if run.state != RunState.ENDED:
        return f"run {run.id} has written nothing here yet"
    return f"run {run.id} left no log on this host"


def _event(line: str) -> str:
    """One line as one event: a carriage return would end the field, so it splits it."""
    return "".join(f"data: {piece}\n" for piece in line.split("\r")) + "\n"


async def follow_log(gateway: Gateway, run: Run, attempt: int | None,
                     relayed: bool = False) -> AsyncIterator[str]:
    """Events of the run's log as it grows, until the run ends. A run going on another
    host is followed through that host's daemon (:func:`relay`) unless this request is
    itself a relay; should that daemon not answer, or stop answering before the end, the
    tails stored with the run as its attempts end are followed here instead."""
    if not relayed and going_elsewhere(gateway, run):
        ended = False
        async for event in relay(gateway, run, attempt):
            ended = event.startswith("event: end")
            yield event
        if ended:
            return
        yield (f": node {clean(run.node or '', 80)} did not give the log to its end: the "
               "tails stored with the run follow as its attempts end\n\n")
    async for event in _follow_here(gateway, run, attempt):
        yield event


async def _follow_here(gateway: Gateway, run: Run, attempt: int | None
                       ) -> AsyncIterator[str]:
    """:func:`follow_log` from this host's file, or, with none here, from the tails stored
    with the run (read again only when its attempts or state change: a tail is stored as an
    attempt ends)."""
    current, position, walks = attempt or 1, 0, attempt is None and run.execution_id is not None
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    stored = StoredNews(run.execution_id is not None, attempt)
    pending, run_id, looked, quiet = "", run.id, (-1, ""), 0.0
    while True:
        now: Run | None = await gateway.read(lambda tx: tx.get_run(run_id))
        run = now or run
        ended = run.state == RunState.ENDED
        got = await asyncio.to_thread(gateway.log, run, current, position)
        if got is not None:
            pending += decoder.decode(got[0])
            position = got[1]
        elif (run.attempts, str(run.state)) != looked:
            looked = (run.attempts, str(run.state))
            tail = await gateway.read(lambda tx: tx.stored_log_tail(run_id))
            pending += decoder.decode(stored.news(tail))
        *lines, pending = pending.split("\n")
        for line in lines:
            yield _event(line)
        if walks and current < run.attempts:  # that attempt is over: on to the next's
            pending += decoder.decode(b"", final=True)
            if pending:
                yield _event(pending)
            current, position, pending = current + 1, 0, ""
            ended = False  # its log is read at the next look, before the end is told
        if ended:
            break
        quiet = 0.0 if lines else quiet + FOLLOW_POLL
        if quiet >= KEEP_ALIVE:  # a comment: proxies, and a relaying daemon, see it alive
            quiet = 0.0
            yield ": the run goes on\n\n"
        await asyncio.sleep(FOLLOW_POLL)
    pending += decoder.decode(b"", final=True)
    if pending:
        yield _event(pending)
    yield ("event: end\ndata: "
           + json.dumps({"run": run.id, "outcome": run.outcome, "reason": run.reason})
           + "\n\n")
