"""The dashboard's pages (home, job, run, audit) render the contract's elements from the
facts the API gives, on both backends, readable without a script."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.http.conftest import API_TOKEN, Api
from tests.http.dashboard.html import page, squashed

pytestmark = pytest.mark.anyio

AUTH = {"Authorization": f"Bearer {API_TOKEN}"}


async def manual_run(api: Api, job: str = "quiet", exit_status: int | None = 0) -> str:
    """Run ``job`` through the API; end it with ``exit_status`` (None: leave it going)."""
    started = await api.client.post(f"/v1/jobs/{job}/run", headers=AUTH)
    assert 201 == started.status_code, started.text
    run_id: str = started.json()["run_id"]
    if exit_status is not None:
        api.runner.finish(run_id, exit_status)
        api.tick()
    return run_id


def write_log(api: Api, run_id: str, text: bytes) -> None:
    path = api.paths.log(run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as log:
        log.write(text)


async def test_home_lists_every_job_with_schedule_next_last_and_strip(dash: Api) -> None:
    ok = await manual_run(dash, exit_status=0)
    bad = await manual_run(dash, exit_status=1)
    answer = await dash.client.get("/")
    assert 200 == answer.status_code
    assert answer.headers["content-type"].startswith("text/html")
    root = page(answer.text)
    table = root.one("table", id_="jobs")
    rows = {row.attrs["data-job"]: row for row in table.find("tr") if "data-job" in row.attrs}
    assert list(dash.engine.config.jobs) == list(rows)
    nightly = rows["nightly"]
    assert "cron 0 3 * * * (jitter 10m)" in squashed(nightly.one(cls="schedule").text)
    assert "At 03:00" in nightly.one(cls="schedule").text
    [due] = nightly.one(cls="next").find("time")
    assert due.attrs["datetime"].endswith("Z")
    assert due.attrs["datetime"] in due.text  # the absolute time shows without a script
    assert squashed(nightly.one(cls="countdown").text).startswith("in ")
    quiet = rows["quiet"]
    strip = quiet.one(cls="strip").find("a", cls="run")
    assert [f"/runs/{ok}", f"/runs/{bad}"] == [a.attrs["href"] for a in strip]  # oldest first
    assert [{"run", "success"}, {"run", "failure"}] == [a.classes for a in strip]
    assert "failure" in squashed(quiet.one(cls="last").text)
    assert "the last run failed" in squashed(quiet.one(cls="divergence").text)
    assert "diverged" in quiet.classes
    assert not rows["poke"].find(cls="strip")[0].children


async def test_the_strip_holds_the_newest_twenty_runs(lite: Api) -> None:
    ids = [await manual_run(lite, exit_status=n % 2) for n in range(23)]
    root = page((await lite.client.get("/")).text)
    [row] = [row for row in root.find("tr") if row.attrs.get("data-job") == "quiet"]
    hrefs = [a.attrs["href"] for a in row.one(cls="strip").find("a", cls="run")]
    assert [f"/runs/{run_id}" for run_id in ids[3:]] == hrefs


async def test_home_filters_by_name_and_state_in_the_url(lite: Api) -> None:
    await manual_run(lite, "quiet", exit_status=1)
    paused = await lite.client.post("/v1/jobs/often/pause", headers=AUTH,
                                    json={"reason": "maintenance"})
    assert 200 == paused.status_code

    async def shown(query: str) -> list[str]:
        answer = await lite.client.get("/" + query)
        assert 200 == answer.status_code
        root = page(answer.text)
        return [row.attrs["data-job"] for row in root.one("table", id_="jobs").find("tr")
                if "data-job" in row.attrs]

    assert ["red-main", "red-any"] == await shown("?q=red")
    assert ["often"] == await shown("?state=paused")
    assert ["quiet"] == await shown("?state=failing")
    assert "quiet" in await shown("?state=diverged")
    assert [] == await shown("?q=red&state=failing")
    form = page((await lite.client.get("/?q=red&state=paused")).text).one(
        "form", id_="filter-form")
    assert ("get", "/") == (form.attrs["method"], form.attrs["action"])
    assert "red" == form.one("input", id_="filter").attrs["value"]
    assert "q" == form.one("input", id_="filter").attrs["name"]
    [chosen] = [o for o in form.one("select").find("option") if "selected" in o.attrs]
    assert "paused" == chosen.attrs["value"]


async def test_the_state_filters_find_exactly_the_failing_and_the_diverged_jobs(
        dash: Api) -> None:
    """Failing: the last counted run failed, paused or not (``quiet``, ``strict``), not a
    failure a success followed (``poke``). Diverged: those, a timer deleted (``nightly``)
    and one overdue (``often``), the jobs whose facts in ``GET /v1/jobs`` list a
    divergence; the healthy ones are in neither."""
    await manual_run(dash, "quiet", exit_status=1)
    await manual_run(dash, "poke", exit_status=1)
    await manual_run(dash, "poke", exit_status=0)
    await manual_run(dash, "strict", exit_status=1)
    paused = await dash.client.post("/v1/jobs/strict/pause", headers=AUTH,
                                    json={"reason": "looking into it"})
    assert 200 == paused.status_code
    with dash.store.transaction() as tx:
        tx.delete_timer("nightly")
        often = tx.get_timer("often")
    assert often is not None
    dash.clock.set(often.due_at + timedelta(minutes=2))  # not fired: overdue

    async def shown(query: str) -> list[str]:
        answer = await dash.client.get("/" + query)
        assert 200 == answer.status_code
        return [row.attrs["data-job"] for row in page(answer.text).one(
            "table", id_="jobs").find("tr") if "data-job" in row.attrs]

    facts = (await dash.client.get("/v1/jobs")).json()["jobs"]
    said = {job["job"] for job in facts if job["divergences"]}
    assert ["quiet", "strict"] == await shown("?state=failing")
    assert ["quiet", "nightly", "often", "strict"] == await shown("?state=diverged")
    assert said == {"quiet", "nightly", "often", "strict"}
    assert ["often"] == await shown("?q=of&state=diverged")


async def test_home_pages_a_large_config(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A page holds :data:`PAGE` jobs; the next link goes on, the filter kept."""
    from cronduit.http.dashboard import PAGE  # noqa: PLC0415
    from tests.http.conftest import CONFIG, open_api  # noqa: PLC0415

    text = CONFIG + "".join(f"  bulk-{n:04d}: {{run: \"true\"}}\n" for n in range(PAGE + 30))
    async for api in open_api(tmp_path_factory.mktemp("big"), config_text=text):
        first = page((await api.client.get("/?q=bulk")).text)
        rows = [r for r in first.one("table", id_="jobs").find("tr") if "data-job" in r.attrs]
        assert PAGE == len(rows)
        [more] = first.find("a", rel="next")
        assert "q=bulk" in more.attrs["href"]
        assert "page=2" in more.attrs["href"]
        second = page((await api.client.get(more.attrs["href"])).text)
        rest = [r.attrs["data-job"] for r in second.one("table", id_="jobs").find("tr")
                if "data-job" in r.attrs]
        assert [f"bulk-{n:04d}" for n in range(PAGE, PAGE + 30)] == rest


async def test_job_page_shows_slots_ledger_history_config_and_webhook(dash: Api) -> None:
    with dash.store.transaction() as tx:
        timer = tx.get_timer("nightly")
    assert timer is not None
    dash.clock.set(timer.due_at)
    dash.tick()  # nightly's slot came due: the ledger records it, a run starts
    [fired] = [run.id for run in dash.history("nightly")]
    dash.runner.finish(fired, 0)
    dash.tick()
    root = page((await dash.client.get("/jobs/nightly")).text)
    slots = root.one("ol", id_="next-slots").find("li")
    assert 10 == len(slots)
    assert all(slot.find("time") for slot in slots)
    ledger = root.one("ol", id_="ledger").find("li", cls="slot")
    assert ledger
    assert "ran" in ledger[0].classes
    assert ledger[0].one(cls="reason")
    assert [fired] == [row.attrs["data-run"] for row in
                       root.one("table", id_="history").find("tr") if "data-run" in row.attrs]
    assert "cron 0 3 * * *" in squashed(root.one(id_="config").text)
    assert "no webhook" in squashed(root.one(id_="webhook").text)
    poke = page((await dash.client.get("/jobs/poke")).text)
    assert "/hooks/poke/<token>" in squashed(poke.one(id_="webhook").text)
    assert "login-to-act" in {c for a in poke.find("a") for c in a.classes}
    assert not poke.find("form", id_="run-now")


async def test_job_history_filters_by_outcome_and_trigger_in_the_url(lite: Api) -> None:
    good = await manual_run(lite, exit_status=0)
    bad = await manual_run(lite, exit_status=1)

    async def listed(query: str) -> list[str]:
        root = page((await lite.client.get("/jobs/quiet" + query)).text)
        return [row.attrs["data-run"] for row in root.one("table", id_="history").find("tr")
                if "data-run" in row.attrs]

    assert [bad, good] == await listed("")
    assert [bad] == await listed("?outcome=failure")
    assert [good] == await listed("?outcome=success&trigger=manual")
    assert [] == await listed("?trigger=webhook")


async def test_an_unknown_job_or_run_is_a_404_page(lite: Api) -> None:
    job = await lite.client.get("/jobs/nosuch")
    run = await lite.client.get("/runs/nosuch")
    assert (404, 404) == (job.status_code, run.status_code)
    assert "no job named 'nosuch'" == squashed(page(job.text).one(cls="error").text)
    assert job.headers["content-type"].startswith("text/html")


async def test_run_page_shows_record_triggers_attempts_and_log(dash: Api) -> None:
    run_id = await manual_run(dash, exit_status=None)
    write_log(dash, run_id, b"first line\n")
    going = page((await dash.client.get(f"/runs/{run_id}")).text)
    assert "running" == squashed(going.one(id_="outcome").text)
    log = going.one("pre", id_="log")
    assert "first line\n" == log.text
    assert f"/runs/{run_id}/log/stream" == log.attrs["data-follow"]
    dash.runner.finish(run_id, 3)
    dash.tick()
    ended = page((await dash.client.get(f"/runs/{run_id}")).text)
    assert "failure" == squashed(ended.one(id_="outcome").text)
    assert "3" == squashed(ended.one(id_="exit-status").text)
    assert "1 attempt(s)" in squashed(ended.one(id_="attempts").text)
    assert "manual" in squashed(ended.one(id_="record").text)
    assert "manual/quiet/" in squashed(ended.one(id_="triggers").text)
    assert "data-follow" not in ended.one("pre", id_="log").attrs


async def test_the_run_pages_stream_gives_the_log_then_the_end(lite: Api) -> None:
    run_id = await manual_run(lite, exit_status=None)
    write_log(lite, run_id, b"one\ntwo\n")
    lite.runner.finish(run_id, 0)
    lite.tick()
    answer = await lite.client.get(f"/runs/{run_id}/log/stream")
    assert answer.headers["content-type"].startswith("text/event-stream")
    events = answer.text.split("\n\n")
    assert ["data: one", "data: two"] == events[:2]
    assert events[2].startswith("event: end")


async def test_audit_page_lists_entries_newest_first(lite: Api) -> None:
    await lite.client.post("/v1/jobs/often/pause", headers=AUTH, json={"reason": "first"})
    await lite.client.post("/v1/jobs/often/resume", headers=AUTH)
    root = page((await lite.client.get("/audit")).text)
    rows = [row for row in root.one("table", id_="audit").find("tr") if "data-seq" in row.attrs]
    seqs = [int(row.attrs["data-seq"]) for row in rows]
    assert seqs == sorted(seqs, reverse=True)
    assert ["resume", "pause"] == [
        squashed(row.find("td")[3].text) for row in rows if "often" in row.text][:2]


async def test_the_theme_follows_its_cookie_and_the_toggle_sets_it(lite: Api) -> None:
    assert 'data-theme="auto"' in (await lite.client.get("/")).text
    toggled = await lite.client.get("/theme?next=/audit")
    assert (303, "/audit") == (toggled.status_code, toggled.headers["location"])
    assert "cronduit_theme=light" in toggled.headers["set-cookie"]
    assert 'data-theme="light"' in (await lite.client.get("/")).text
    await lite.client.get("/theme?set=dark")
    root = page((await lite.client.get("/")).text)
    assert "dark" == root.one("html").attrs["data-theme"]
    assert root.one("a", id_="theme-toggle")
    away = await lite.client.get("/theme?next=//evil.example/")
    assert "/" == away.headers["location"]


async def test_static_files_are_served_from_the_package(lite: Api) -> None:
    for path in ("/static/htmx.min.js", "/static/dashboard.js", "/static/dashboard.css"):
        answer = await lite.client.get(path)
        assert 200 == answer.status_code, path
    root = page((await lite.client.get("/")).text)
    sources = [s.attrs["src"] for s in root.find("script")]
    assert ["/static/htmx.min.js", "/static/dashboard.js"] == sources
    assert all(link.attrs["href"].startswith("/static/") for link in root.find("link"))
