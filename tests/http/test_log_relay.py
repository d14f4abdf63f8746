"""Following a run's log that is on another host: through that host's daemon, or from the
tails stored with the run when that daemon cannot be asked (SPEC §9, §10). The relay through
a real second daemon is in tests/acceptance/test_scale_out.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from cronduit.core.log_tails import LogTail, tail_of
from cronduit.http.log_relay import StoredNews
from cronduit.ports import RunLogTail
from tests.http.conftest import API_TOKEN, T0, Api, open_api
from tests.http.test_reads import READS, manual_run

pytestmark = pytest.mark.anyio


@pytest.fixture
async def remote(tmp_path: Path) -> AsyncIterator[Api]:
    """The app of a daemon of node ``here``: the runs of the engine beside it are node
    ``local``'s, another host's, and no log file of theirs is on this one."""
    async for made in open_api(tmp_path, config_text=READS):
        made.gateway.node = "here"
        yield made


def store_tail(api: Api, run_id: str, attempt: int, tail: LogTail) -> None:
    """Keep a tail with the run, as the host that ran it does as an attempt ends."""
    with api.store.transaction() as tx:
        tx.store_log_tail(run_id, attempt, tail, api.clock.now())


def events(text: str) -> list[str]:
    return [event for event in text.split("\n\n") if event]


def tail(attempt: int, data: bytes, size: int | None = None) -> RunLogTail:
    return RunLogTail("r", attempt, data, len(data) if size is None else size, 0, T0)


def test_a_plain_runs_later_tail_gives_only_the_bytes_after_the_earlier_one() -> None:
    news = StoredNews(durable=False, only=None)
    assert b"one\n" == news.news(tail(1, b"one\n"))
    assert b"" == news.news(tail(1, b"one\n"))
    assert b"two\n" == news.news(tail(2, b"one\ntwo\n"))


def test_a_durable_runs_tail_of_a_new_attempt_is_a_new_log() -> None:
    news = StoredNews(durable=True, only=None)
    assert b"sync\n" == news.news(tail(1, b"sync\n"))
    assert b"index\n" == news.news(tail(2, b"index\n"))


def test_only_the_attempt_asked_for_is_given() -> None:
    news = StoredNews(durable=True, only=2)
    assert b"" == news.news(tail(1, b"sync\n"))
    assert b"index\n" == news.news(tail(2, b"index\n"))


def test_a_tail_that_lost_bytes_the_follower_never_saw_gives_all_it_holds() -> None:
    news = StoredNews(durable=False, only=None)
    assert b"one\n" == news.news(tail(1, b"one\n"))
    assert b"end\n" == news.news(tail(2, b"end\n", size=2_000_000))


async def test_following_a_run_that_ended_on_another_host_gives_its_stored_tail(
        remote: Api) -> None:
    run_id = await manual_run(remote, exit_status=None)
    store_tail(remote, run_id, 1, tail_of(b"one\ntwo\n"))
    remote.runner.finish(run_id, 0)
    remote.tick()
    answer = await remote.client.get(f"/v1/runs/{run_id}/log", params={"follow": "1"})
    found = events(answer.text)
    assert ["data: one", "data: two"] == found[:2]
    assert "success" == json.loads(found[2].split("data: ")[1])["outcome"]


async def test_a_run_going_elsewhere_whose_daemon_cannot_be_asked_is_followed_from_its_tails(
        remote: Api) -> None:
    """Its node's daemon listens nowhere that answers: each attempt's tail comes as it is
    stored, then the end, after a comment that says why."""
    asked: list[str] = []
    relaying = asyncio.Event()

    async def nowhere_answering(node: str) -> str | None:
        asked.append(node)
        relaying.set()
        return "http://127.0.0.1:9"  # the discard port: nothing listens there

    remote.gateway.peer = nowhere_answering
    run_id = await manual_run(remote, exit_status=None)
    follow = asyncio.create_task(remote.client.get(f"/v1/runs/{run_id}/log",
                                                   params={"follow": "1"}))
    await asyncio.wait_for(relaying.wait(), 10)
    store_tail(remote, run_id, 1, tail_of(b"first\n"))
    remote.runner.finish(run_id, 0)
    remote.clock.advance(timedelta(seconds=1))
    remote.tick()
    found = events((await asyncio.wait_for(follow, 30)).text)
    assert ["local"] == asked
    assert found[0].startswith(": node local did not give the log to its end")
    assert "data: first" == found[1]
    assert found[2].startswith("event: end")


async def test_a_relayed_request_is_never_relayed_again(remote: Api) -> None:
    """The daemon asked by another follows what it has itself: no loop between two."""
    asked: list[str] = []

    async def peer(node: str) -> str | None:
        asked.append(node)
        return None

    remote.gateway.peer = peer
    run_id = await manual_run(remote, exit_status=None)
    store_tail(remote, run_id, 1, tail_of(b"first\n"))
    remote.runner.finish(run_id, 0)
    remote.tick()
    answer = await remote.client.get(
        f"/v1/runs/{run_id}/log", params={"follow": "1"},
        headers={"x-cronduit-relayed": "1", "Authorization": f"Bearer {API_TOKEN}"})
    assert [] == asked
    assert "data: first" == events(answer.text)[0]
