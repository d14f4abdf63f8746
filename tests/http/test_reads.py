"""The read routes under /v1 (SPEC §9): jobs, slots, runs and their pages, a run's record and
log, the audit log; every filter and error, against the real engine and store."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from click.testing import CliRunner

from cronduit.cli import cli
from cronduit.cli.context import Runtime
from cronduit.core.config import load_config
from cronduit.http.cursors import encode_cursor
from cronduit.ports import Transaction
from cronduit.testing import FakeClock
from tests.helpers.postgres import fresh_schema, in_schema
from tests.http.conftest import API_TOKEN, CONFIG, HOOK_SECRET, T0, Api, open_api

pytestmark = pytest.mark.anyio

T = TypeVar("T")
AUTH = {"Authorization": f"Bearer {API_TOKEN}"}
READS = CONFIG + """\
  nightly: {run: "true", cron: "0 3 * * *", jitter: 10m}
"""


@pytest.fixture(params=["sqlite", "postgresql"])
async def reads(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    """The app on each backend, with a timed job beside the shared ones."""
    if request.param == "sqlite":
        async for made in open_api(tmp_path, config_text=READS):
            yield made
        return
    with fresh_schema() as schema:
        async for made in open_api(tmp_path, config_text=READS, postgres=in_schema(schema)):
            yield made


@pytest.fixture
async def exposed(tmp_path: Path) -> AsyncIterator[Api]:
    """The app of a daemon that listens on every address, not loopback only."""
    text = READS.replace("settings:\n", "settings:\n  listen: 0.0.0.0:8770\n", 1)
    async for made in open_api(tmp_path, config_text=text):
        yield made


async def manual_run(api: Api, job: str = "quiet", exit_status: int | None = 0) -> str:
    """Run ``job`` by hand; end it with ``exit_status`` (None: leave it going). Its id."""
    started = await api.client.post(f"/v1/jobs/{job}/run", headers=AUTH)
    assert 201 == started.status_code, started.text
    run_id: str = started.json()["run_id"]
    if exit_status is not None:
        api.runner.finish(run_id, exit_status)
        api.tick()
    return run_id


async def get(api: Api, path: str, **params: Any) -> httpx.Response:
    return await api.client.get(path, params=params)


# -- jobs ---------------------------------------------------------------------------------


async def test_jobs_lists_every_job_with_its_facts(reads: Api) -> None:
    """Timing in words, the next slots with their jitter, timer, last outcome, divergence."""
    await manual_run(reads, exit_status=1)
    answer = await get(reads, "/v1/jobs")
    assert 200 == answer.status_code
    body = answer.json()
    jobs = {job["job"]: job for job in body["jobs"]}
    assert list(jobs) == list(reads.engine.config.jobs)
    assert body["next_cursor"] is None
    nightly, quiet = jobs["nightly"], jobs["quiet"]
    assert ("cron 0 3 * * * (jitter 10m)", "At 03:00", "armed") == (
        nightly["timing"], nightly["described"], nightly["timer"])
    assert 5 == len(nightly["next_slots"])
    first = nightly["next_slots"][0]
    assert ("2026-06-02T03:00:00Z", True) == (
        first["slot"], "2026-06-02T03:00:00Z" <= first["due"] < "2026-06-02T03:10:00Z")
    assert nightly["next_elapse"] == first["due"]
    assert (["the last run failed"], "failure") == (quiet["divergences"],
                                                   quiet["last"]["outcome"])
    assert body["healthy"] is False


async def job_pages(api: Api, limit: int, cursor: str | None = None) -> list[dict[str, Any]]:
    """Every page of ``/v1/jobs`` from ``cursor`` on, ``limit`` jobs each."""
    pages = []
    while True:
        params = {"limit": limit} | ({"cursor": cursor} if cursor else {})
        answer = await get(api, "/v1/jobs", **params)
        assert 200 == answer.status_code, answer.text
        pages.append(answer.json())
        cursor = pages[-1]["next_cursor"]
        if cursor is None:
            return pages


async def test_jobs_are_paged_in_config_order_and_the_last_page_has_no_cursor(
        reads: Api) -> None:
    """Nine jobs, four a page: three pages in config order, each job once; the cursor of
    the last is null."""
    pages = await job_pages(reads, 4)
    names = [[job["job"] for job in page["jobs"]] for page in pages]
    assert [4, 4, 1] == [len(page) for page in names]
    assert list(reads.engine.config.jobs) == [name for page in names for name in page]
    assert [True, True, False] == [page["next_cursor"] is not None for page in pages]
    exact = await job_pages(reads, 9)
    assert (1, None) == (len(exact), exact[0]["next_cursor"])


async def test_healthy_speaks_of_every_job_not_only_the_page(reads: Api) -> None:
    """``quiet``'s run failed: the first page (``poke``, ``inputs``) has no divergence,
    yet the answer is not healthy; once ``quiet`` succeeds, every page is."""
    await manual_run(reads, "quiet", exit_status=1)
    first = (await get(reads, "/v1/jobs", limit=2)).json()
    assert ["poke", "inputs"] == [job["job"] for job in first["jobs"]]
    assert [[], []] == [job["divergences"] for job in first["jobs"]]
    assert first["healthy"] is False
    pages = await job_pages(reads, 2)
    assert [False] * 5 == [page["healthy"] for page in pages]
    await manual_run(reads, "quiet", exit_status=0)
    assert [True] * 5 == [page["healthy"] for page in await job_pages(reads, 2)]


async def test_a_cursor_goes_on_after_its_job_wherever_a_reload_moved_it(reads: Api) -> None:
    """An apply between two pages that adds a job before the cursor's shifts nothing: the
    next page starts after the cursor's job, found by its name."""
    first = (await get(reads, "/v1/jobs", limit=3)).json()
    assert ["poke", "inputs", "quiet"] == [job["job"] for job in first["jobs"]]
    text = READS.replace("  poke:", "  aaa-new: {run: \"true\"}\n  poke:", 1)
    reads.engine.apply(load_config(text, "cronduit.yaml"), reads.clock.now())
    rest = await job_pages(reads, 3, first["next_cursor"])
    assert ["docs", "any-push", "red-main", "red-any", "release", "nightly"] == [
        job["job"] for page in rest for job in page["jobs"]]


async def test_a_cursor_goes_on_from_its_jobs_place_when_a_reload_removed_it(
        reads: Api) -> None:
    """The cursor's job removed by an apply between two pages: the next page starts where
    it was, so the job after it is neither lost nor shown twice."""
    first = (await get(reads, "/v1/jobs", limit=3)).json()
    assert "quiet" == first["jobs"][-1]["job"]
    text = READS.replace('  quiet:  {run: "true"}\n', "", 1)
    assert "quiet" not in load_config(text, "cronduit.yaml").jobs
    reads.engine.apply(load_config(text, "cronduit.yaml"), reads.clock.now())
    rest = await job_pages(reads, 3, first["next_cursor"])
    names = [job["job"] for page in rest for job in page["jobs"]]
    assert "docs" == names[0]
    assert "poke" not in names


async def test_jobs_refuse_a_limit_or_cursor_outside_its_rule_naming_it(reads: Api) -> None:
    """A limit from 1 to 1000; a cursor this route gave (a run's cursor is not one)."""
    runs_cursor = encode_cursor("anything")
    cases = [{"limit": "0"}, {"limit": "1001"}, {"limit": "many"}, {"cursor": "nope"},
             {"cursor": runs_cursor}, {"cursor": "j1."}, {"cursor": "j1.!!"}]
    answers = [await get(reads, "/v1/jobs", **case) for case in cases]
    assert [422] * len(cases) == [a.status_code for a in answers]
    for case, answer in zip(cases, answers, strict=True):
        assert answer.json()["detail"].startswith(f"{next(iter(case))}: "), answer.text
    assert 200 == (await get(reads, "/v1/jobs", limit=1000)).status_code


async def test_a_job_is_read_alone_and_an_unknown_one_is_404(reads: Api) -> None:
    one = await get(reads, "/v1/jobs/nightly")
    missing = await get(reads, "/v1/jobs/nope")
    assert (200, "nightly") == (one.status_code, one.json()["job"])
    assert (404, {"detail": "no job named 'nope'"}) == (missing.status_code, missing.json())


async def test_a_paused_job_shows_its_pause_and_no_slots_to_come(reads: Api) -> None:
    paused = await reads.client.post("/v1/jobs/nightly/pause", headers=AUTH,
                                     json={"reason": "maintenance", "operator": "ana"})
    assert 200 == paused.status_code
    job = (await get(reads, "/v1/jobs/nightly")).json()
    assert ("paused", [], "ana", "maintenance") == (
        job["timer"], job["next_slots"], job["paused"]["by"], job["paused"]["reason"])


async def test_the_slot_ledger_is_read_in_a_window(reads: Api) -> None:
    reads.clock.advance(timedelta(hours=15, minutes=15))  # past the jittered 03:00 slot
    reads.tick()
    answer = await get(reads, "/v1/jobs/nightly/slots", **{"from": "2026-06-02T00:00:00Z"})
    assert 200 == answer.status_code
    [slot] = answer.json()["slots"]
    assert ("2026-06-02T03:00:00Z", "ran") == (slot["slot"], slot["fate"])
    later = await get(reads, "/v1/jobs/nightly/slots", **{"from": "2026-06-03T00:00:00Z"})
    assert [] == later.json()["slots"]


async def test_the_slot_ledger_refuses_a_bad_window_and_an_unknown_job(reads: Api) -> None:
    bad = await get(reads, "/v1/jobs/nightly/slots", to="yesterday")
    far = await get(reads, "/v1/jobs/nightly/slots", to="9999-01-01T00:00:00Z")
    missing = await get(reads, "/v1/jobs/nope/slots")
    assert [422, 422, 404] == [a.status_code for a in (bad, far, missing)]
    assert bad.json()["detail"].startswith("to: ")
    assert far.json()["detail"].startswith("to: ")


# -- runs ---------------------------------------------------------------------------------


async def test_runs_are_listed_newest_first_with_each_filter(reads: Api) -> None:
    ok = await manual_run(reads, "quiet", 0)
    failed = await manual_run(reads, "quiet", 1)
    hooked = await reads.client.post(reads.hook("poke"))
    assert 202 == hooked.status_code
    reads.tick()
    [poke] = reads.history("poke")

    async def ids(**params: Any) -> list[str]:
        answer = await get(reads, "/v1/runs", **params)
        assert 200 == answer.status_code, answer.text
        return [run["run"] for run in answer.json()["runs"]]

    assert [poke.id, failed, ok] == await ids()
    assert [failed, ok] == await ids(job="quiet")
    assert [failed] == await ids(outcome="failure")
    assert [poke.id] == await ids(trigger="webhook")
    assert [poke.id, failed, ok] == await ids(since="2026-06-01T12:00:00Z")
    assert [] == await ids(until="2026-06-01T12:00:00Z")
    assert [poke.id] == await ids(limit=1)


async def test_runs_refuse_filters_outside_their_rules_naming_the_field(reads: Api) -> None:
    cases = [{"outcome": "great"}, {"trigger": "pigeon"}, {"limit": "0"}, {"limit": "501"},
             {"since": "soon"}, {"cursor": "not-a-cursor"}, {"cursor": "r1.bm9wZQ"}]
    answers = [await get(reads, "/v1/runs", **case) for case in cases]
    assert [422] * len(cases) == [a.status_code for a in answers]
    for case, answer in zip(cases, answers, strict=True):
        assert answer.json()["detail"].startswith(f"{next(iter(case))}: "), answer.text


async def test_pages_go_on_from_the_cursor_and_end_with_none(reads: Api) -> None:
    made = [await manual_run(reads) for _ in range(5)]
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await get(reads, "/v1/runs", **params)).json()
        seen += [run["run"] for run in page["runs"]]
        pages, cursor = pages + 1, page["next_cursor"]
        if cursor is None:
            break
    assert (list(reversed(made)), 3) == (seen, pages)


async def test_a_page_stays_stable_when_runs_are_created_between_reads(reads: Api) -> None:
    """Keyset pagination: runs created after the first page are newer than it; the next
    page goes on where it stopped, no run seen twice or skipped."""
    older = [await manual_run(reads) for _ in range(4)]
    first = (await get(reads, "/v1/runs", limit=2)).json()
    newer = [await manual_run(reads) for _ in range(3)]
    second = (await get(reads, "/v1/runs", limit=2, cursor=first["next_cursor"])).json()
    assert [older[3], older[2]] == [run["run"] for run in first["runs"]]
    assert [older[1], older[0]] == [run["run"] for run in second["runs"]]
    assert second["next_cursor"] is None
    assert newer[-1] == (await get(reads, "/v1/runs", limit=1)).json()["runs"][0]["run"]


async def test_pages_read_while_runs_are_inserted_at_once_see_each_run_once(
        reads: Api) -> None:
    """Runs inserted concurrently with the page reads never shift a page."""
    before = [await manual_run(reads) for _ in range(6)]
    pages: list[list[str]] = []

    async def read_pages() -> None:
        cursor = None
        while True:
            params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
            page = (await get(reads, "/v1/runs", **params)).json()
            pages.append([run["run"] for run in page["runs"]])
            cursor = page["next_cursor"]
            if cursor is None:
                return

    async def insert() -> list[str]:
        return [await manual_run(reads) for _ in range(4)]

    _, during = await asyncio.gather(read_pages(), insert())
    seen = [run for page in pages for run in page]
    assert len(seen) == len(set(seen))
    assert [run for run in seen if run in before] == list(reversed(before))
    assert set(seen) - set(before) <= set(during)


async def test_a_run_record_and_an_unknown_run(reads: Api) -> None:
    run_id = await manual_run(reads, "quiet", 0)
    record = (await get(reads, f"/v1/runs/{run_id}")).json()
    assert (run_id, "quiet", "manual", "success", "api") == (
        record["run"], record["job"], record["trigger"], record["outcome"], record["operator"])
    assert [f"manual/quiet/{record['triggers'][0].split('/')[-1]}"] == record["triggers"]
    missing = await get(reads, "/v1/runs/nope")
    assert (404, {"detail": "no run nope"}) == (missing.status_code, missing.json())


# -- logs ---------------------------------------------------------------------------------


def write_log(api: Api, run_id: str, text: bytes) -> None:
    path = api.paths.log(run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as log:
        log.write(text)


async def test_a_runs_log_is_its_text(reads: Api) -> None:
    run_id = await manual_run(reads, exit_status=None)
    write_log(reads, run_id, b"hello\nworld\n")
    answer = await get(reads, f"/v1/runs/{run_id}/log")
    assert (200, "hello\nworld\n") == (answer.status_code, answer.text)
    assert answer.headers["content-type"].startswith("text/plain")


async def test_a_log_that_is_not_there_is_404_saying_why(reads: Api) -> None:
    run_id = await manual_run(reads)
    none = await get(reads, f"/v1/runs/{run_id}/log")
    attempt = await get(reads, f"/v1/runs/{run_id}/log", attempt=2)
    missing = await get(reads, "/v1/runs/nope/log")
    assert [404, 404, 404] == [a.status_code for a in (none, attempt, missing)]
    assert f"run {run_id} left no log on this host" == none.json()["detail"]
    assert f"run {run_id} has 1 attempt(s), not 2" == attempt.json()["detail"]


def counting(api: Api) -> asyncio.Event:
    """An event set once the app has read the store twice more (the follower has looked)."""
    looked, reads = asyncio.Event(), [0]
    read = api.gateway.read

    def counted(work: Callable[[Transaction], T]) -> Any:
        reads[0] += 1
        if reads[0] >= 2:
            looked.set()
        return read(work)

    api.gateway.read = counted
    return looked


async def test_following_a_log_streams_its_lines_and_ends_with_the_run(reads: Api) -> None:
    run_id = await manual_run(reads, exit_status=None)
    write_log(reads, run_id, b"one\n")
    looked = counting(reads)
    follow = asyncio.create_task(reads.client.get(f"/v1/runs/{run_id}/log",
                                                  params={"follow": "1"}))
    await asyncio.wait_for(looked.wait(), 10)
    write_log(reads, run_id, b"two\nthree")
    reads.runner.finish(run_id, 0)
    reads.tick()
    answer = await asyncio.wait_for(follow, 30)
    assert answer.headers["content-type"].startswith("text/event-stream")
    events = answer.text.split("\n\n")
    assert ["data: one", "data: two", "data: three"] == events[:3]
    end = events[3].split("\n")
    assert "event: end" == end[0]
    assert {"run": run_id, "outcome": "success", "reason": ""} == json.loads(
        end[1].removeprefix("data: "))


# -- the audit log, errors, the token ----------------------------------------------------


async def test_the_audit_log_reads_newest_first(reads: Api) -> None:
    await manual_run(reads)
    await reads.client.post("/v1/jobs/quiet/pause", headers=AUTH, json={"reason": "why"})
    entries = (await get(reads, "/v1/audit")).json()["entries"]
    assert ["pause", "run"] == [entry["action"] for entry in entries]
    assert "why" == entries[0]["detail"]["reason"]
    assert 1 == len((await get(reads, "/v1/audit", limit=1)).json()["entries"])


async def test_an_unknown_path_or_method_answers_in_the_one_error_shape(reads: Api) -> None:
    """A path nobody serves is a 404; a write route asked with GET still a 405."""
    unknown = await get(reads, "/v1/nothing-here")
    wrong = await get(reads, "/v1/jobs/quiet/run")
    assert [(404, ["detail"]), (405, ["detail"])] == [
        (answer.status_code, list(answer.json())) for answer in (unknown, wrong)]


async def test_reads_on_loopback_need_no_token(reads: Api) -> None:
    assert 200 == (await get(reads, "/v1/jobs")).status_code


async def test_reads_off_loopback_need_the_token(exposed: Api) -> None:
    routes = ["/v1/jobs", "/v1/jobs/quiet", "/v1/jobs/nightly/slots", "/v1/runs",
              "/v1/audit", "/v1/executions"]
    without = [(await exposed.client.get(path)).status_code for path in routes]
    wrong = [(await exposed.client.get(path, headers={"Authorization": "Bearer no"}))
             .status_code for path in routes]
    given = [(await exposed.client.get(path, headers=AUTH)).status_code for path in routes]
    assert ([401] * 6, [401] * 6, [200] * 6) == (without, wrong, given)
    assert 200 == (await exposed.client.get("/healthz")).status_code


async def test_no_answer_holds_a_secret(reads: Api) -> None:
    await manual_run(reads)
    paths = ["/v1/jobs", "/v1/runs", "/v1/audit", "/openapi.json"]
    texts = [(await get(reads, path)).text for path in paths]
    assert not any(secret in text for text in texts for secret in (API_TOKEN, HOOK_SECRET))



async def test_the_cli_says_of_each_job_what_the_api_says(tmp_path: Path) -> None:
    """Parity: ``status --json`` and ``schedule list --json`` over the same state give the
    jobs of ``GET /v1/jobs``, fact for fact."""
    text = READS.replace("settings:\n", "settings:\n  state: .\n", 1)
    config = tmp_path / "cronduit.yaml"
    config.write_text(text)
    runtime = Runtime(clock=FakeClock(T0), nudge=lambda _: None)
    async for api in open_api(tmp_path, config_text=text):
        await manual_run(api, exit_status=1)
        await manual_run(api, "poke", exit_status=None)
        answer = (await get(api, "/v1/jobs")).json()
        served = answer["jobs"]
        status = CliRunner().invoke(cli, ["status", "--json", "-c", str(config)], obj=runtime)
        listed = CliRunner().invoke(cli, ["schedule", "list", "--json", "-c", str(config)],
                                    obj=runtime)
    said = json.loads(status.stdout)
    assert (False, served) == (answer["healthy"], said["jobs"])
    assert said["healthy"] is answer["healthy"]
    assert served == [json.loads(line) for line in listed.stdout.splitlines()]
