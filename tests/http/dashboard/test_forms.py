"""The dashboard's forms: run now, pause, resume, log out. Each passes the same checks and
writes the same audit entry as the API's route, behind a session, its CSRF token and the
cross-site guards; a refused form changes nothing."""

from __future__ import annotations

import pytest

from cronduit.ports import AuditEntry
from tests.http.conftest import Api
from tests.http.dashboard.conftest import csrf
from tests.http.dashboard.html import page, squashed

pytestmark = pytest.mark.anyio

POSTS = [("/jobs/quiet/run", {}), ("/jobs/often/pause", {"reason": "disk full"}),
         ("/jobs/often/resume", {}), ("/logout", {})]


def audit(api: Api) -> list[AuditEntry]:
    with api.store.transaction() as tx:
        return [entry for entry in tx.audit(100) if entry.action != "apply"]


def paused(api: Api, job: str) -> bool:
    with api.store.transaction() as tx:
        return tx.active_pause(job) is not None


async def test_the_job_page_has_the_forms_when_logged_in(user: Api) -> None:
    root = page((await user.client.get("/jobs/inputs")).text)
    run_now = root.one("form", id_="run-now")
    assert ("post", "/jobs/inputs/run") == (run_now.attrs["method"], run_now.attrs["action"])
    names = {field.attrs.get("name") for field in run_now.find("input") + run_now.find("select")}
    assert {"input.REGION", "input.TAG", "csrf"} <= names
    assert run_now.one(id_="run-now-submit")
    pause = root.one("form", id_="pause")
    assert "/jobs/inputs/pause" == pause.attrs["action"]
    assert "required" in pause.one("input", name="reason").attrs
    assert pause.one("input", name="until")
    assert pause.one(id_="pause-submit")
    assert all(form.one("input", name="csrf").attrs["value"] for form in root.find("form")
               if form.attrs["method"] == "post")


@pytest.mark.parametrize(("path", "fields"), POSTS)
async def test_a_post_without_the_csrf_token_is_403_and_changes_nothing(
        user: Api, path: str, fields: dict[str, str]) -> None:
    if path.endswith("resume"):
        await user.client.post("/jobs/often/pause", data={"csrf": await csrf(user),
                                                          "reason": "held"})
    before = audit(user)
    missing = await user.client.post(path, data=fields)
    wrong = await user.client.post(path, data={**fields, "csrf": "not-the-token"})
    assert (403, 403) == (missing.status_code, wrong.status_code)
    assert "CSRF" in squashed(page(missing.text).one(cls="error").text)
    assert before == audit(user)
    assert [] == user.history("quiet")
    assert paused(user, "often") is path.endswith("resume")
    assert 200 == (await user.client.get("/")).status_code  # still logged in


@pytest.mark.parametrize(("path", "fields"), POSTS)
@pytest.mark.parametrize("header", [{"Origin": "https://evil.example"},
                                    {"Origin": "null"},
                                    {"Sec-Fetch-Site": "cross-site"}])
async def test_a_cross_site_post_is_403_even_with_the_token(
        user: Api, path: str, fields: dict[str, str], header: dict[str, str]) -> None:
    token = await csrf(user)
    answer = await user.client.post(path, data={**fields, "csrf": token}, headers=header)
    assert 403 == answer.status_code
    assert "cross-site" in squashed(page(answer.text).one(cls="error").text)
    assert [] == audit(user)
    assert [] == user.history("quiet")


async def test_a_same_origin_post_passes(user: Api) -> None:
    answer = await user.client.post("/jobs/often/pause", headers={
        "Origin": "http://cronduit", "Sec-Fetch-Site": "same-origin"},
        data={"csrf": await csrf(user), "reason": "same site"})
    assert 303 == answer.status_code


@pytest.mark.parametrize(("path", "fields"), POSTS[:3])
async def test_a_post_without_a_session_is_401(lite: Api, path: str,
                                               fields: dict[str, str]) -> None:
    answer = await lite.client.post(path, data=fields)
    assert 401 == answer.status_code
    assert "log in" in squashed(page(answer.text).one(cls="error").text)
    assert [] == audit(lite)


async def test_run_now_goes_to_the_run_it_started(dash: Api) -> None:
    from tests.http.dashboard.conftest import log_in  # noqa: PLC0415

    await log_in(dash)
    answer = await dash.client.post("/jobs/inputs/run", data={
        "csrf": await csrf(dash), "input.REGION": "us", "input.TAG": "v7"})
    assert 303 == answer.status_code
    (run,) = dash.history("inputs")
    assert f"/runs/{run.id}" == answer.headers["location"]
    assert ("manual", "manual by dashboard", "dashboard") == (run.kind, run.label, run.operator)
    assert {"REGION": "us", "TAG": "v7"} == __import__("json").loads(run.inputs)
    [entry] = audit(dash)
    assert ("run", "dashboard", "inputs") == (entry.action, entry.operator, entry.job)
    shown = page((await dash.client.get(answer.headers["location"])).text)
    assert "running" == squashed(shown.one(id_="outcome").text)


async def test_a_blank_input_takes_its_default(user: Api) -> None:
    answer = await user.client.post("/jobs/inputs/run", data={
        "csrf": await csrf(user), "input.REGION": "", "input.TAG": ""})
    assert 303 == answer.status_code
    (run,) = user.history("inputs")
    assert {"REGION": "eu", "TAG": "v1"} == __import__("json").loads(run.inputs)


async def test_run_now_with_a_bad_input_is_422_naming_the_field(user: Api) -> None:
    answer = await user.client.post("/jobs/inputs/run", data={
        "csrf": await csrf(user), "input.REGION": "mars", "input.TAG": "latest"})
    assert 422 == answer.status_code
    error = squashed(page(answer.text).one(cls="error").text)
    assert "REGION" in error
    assert "TAG" in error
    root = page(answer.text)
    assert root.one("form", id_="run-now")  # the job page again, the values kept
    assert "latest" == root.one("input", name="input.TAG").attrs["value"]
    unknown = await user.client.post("/jobs/inputs/run", data={
        "csrf": await csrf(user), "input.NOPE": "1"})
    assert 422 == unknown.status_code
    assert "NOPE" in squashed(page(unknown.text).one(cls="error").text)
    assert [] == user.history("inputs")
    assert [] == audit(user)


async def test_run_now_while_running_is_409_unless_queued(user: Api) -> None:
    first = await user.client.post("/jobs/quiet/run", data={"csrf": await csrf(user)})
    assert 303 == first.status_code
    again = await user.client.post("/jobs/quiet/run", data={"csrf": await csrf(user)})
    assert 409 == again.status_code
    assert "has a run going" in squashed(page(again.text).one(cls="error").text)
    queued = await user.client.post("/jobs/quiet/run", data={"csrf": await csrf(user),
                                                             "queue": "1"})
    assert (303, "/jobs/quiet?notice=waiting") == (queued.status_code,
                                                   queued.headers["location"])
    assert 1 == len(user.history("quiet"))


async def test_run_now_of_an_unknown_job_is_404(user: Api) -> None:
    answer = await user.client.post("/jobs/nosuch/run", data={"csrf": await csrf(user)})
    assert 404 == answer.status_code


async def test_pause_shows_its_banner_on_home_and_job_page_and_is_audited(dash: Api) -> None:
    from tests.http.dashboard.conftest import log_in  # noqa: PLC0415

    await log_in(dash)
    answer = await dash.client.post("/jobs/often/pause", data={
        "csrf": await csrf(dash), "reason": "disk full", "until": "2h"})
    assert (303, "/jobs/often?notice=paused") == (answer.status_code,
                                                  answer.headers["location"])
    expected = ("PAUSED by dashboard since 2026-06-01T12:00:00Z: disk full "
                "until 2026-06-01T14:00:00Z")
    home = page((await dash.client.get("/")).text)
    [row] = [r for r in home.find("tr") if r.attrs.get("data-job") == "often"]
    assert "paused" in row.classes
    assert expected == squashed(row.one(cls="banner-paused").text)
    job = page((await dash.client.get("/jobs/often")).text)
    assert expected == squashed(job.one(cls="banner-paused").text)
    assert job.one("form", id_="resume")
    assert not job.find("form", id_="pause")
    [entry] = audit(dash)
    assert ("pause", "dashboard", "often") == (entry.action, entry.operator, entry.job)
    assert '"reason": "disk full"' in entry.detail
    shown = page((await dash.client.get("/audit")).text)
    assert "disk full" in squashed(shown.one("table", id_="audit").text)


async def test_pause_needs_a_reason_and_a_readable_until(user: Api) -> None:
    blank = await user.client.post("/jobs/often/pause", data={"csrf": await csrf(user),
                                                              "reason": "  "})
    bad_until = await user.client.post("/jobs/often/pause", data={
        "csrf": await csrf(user), "reason": "ok", "until": "someday"})
    assert (422, 422) == (blank.status_code, bad_until.status_code)
    assert "reason: required" in squashed(page(blank.text).one(cls="error").text)
    assert "until" in squashed(page(bad_until.text).one(cls="error").text)
    assert not paused(user, "often")
    assert [] == audit(user)


async def test_pausing_a_paused_job_is_409_and_resume_ends_it(user: Api) -> None:
    await user.client.post("/jobs/often/pause", data={"csrf": await csrf(user),
                                                      "reason": "first"})
    again = await user.client.post("/jobs/often/pause", data={"csrf": await csrf(user),
                                                              "reason": "second"})
    assert 409 == again.status_code
    assert "already paused by dashboard" in squashed(page(again.text).one(cls="error").text)
    resumed = await user.client.post("/jobs/often/resume", data={"csrf": await csrf(user)})
    assert (303, "/jobs/often?notice=resumed") == (resumed.status_code,
                                                   resumed.headers["location"])
    assert not paused(user, "often")
    assert ["resume", "pause"] == [entry.action for entry in audit(user)]
    assert "dashboard" == audit(user)[0].operator
    not_paused = await user.client.post("/jobs/often/resume", data={"csrf": await csrf(user)})
    assert 409 == not_paused.status_code
    home = page((await user.client.get("/")).text)
    [row] = [r for r in home.find("tr") if r.attrs.get("data-job") == "often"]
    assert not row.find(cls="banner-paused")
