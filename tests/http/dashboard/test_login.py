"""Logging in with the API token: the session cookie and what it opens; reads off loopback
need it; the token never reaches the browser."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.http.conftest import API_TOKEN, Api, open_api
from tests.http.dashboard.conftest import DASH, csrf, csrf_of, log_in
from tests.http.dashboard.html import page, squashed

pytestmark = pytest.mark.anyio


async def test_the_login_form_carries_next_and_csrf(lite: Api) -> None:
    root = page((await lite.client.get("/login?next=/jobs/quiet")).text)
    form = root.one("form", id_="login")
    assert ("post", "/login") == (form.attrs["method"], form.attrs["action"])
    assert "password" == form.one("input", name="token").attrs["type"]
    assert "/jobs/quiet" == form.one("input", name="next").attrs["value"]
    assert form.one("input", name="csrf").attrs["value"]
    assert form.one(id_="login-submit")


async def test_a_login_sets_an_httponly_strict_session_cookie_and_goes_on(lite: Api) -> None:
    form = await lite.client.get("/login?next=/audit")
    answer = await lite.client.post("/login", data={
        "token": API_TOKEN, "next": "/audit", "csrf": csrf_of(form.text)})
    assert (303, "/audit") == (answer.status_code, answer.headers["location"])
    [cookie] = [c for c in answer.headers.get_list("set-cookie")
                if c.startswith("cronduit_session=")]
    attributes = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/"} <= attributes
    assert "secure" not in attributes  # plain HTTP on loopback: it would never come back
    assert API_TOKEN not in cookie
    assert API_TOKEN not in str(lite.client.cookies)
    home = page((await lite.client.get("/")).text)
    assert home.one(id_="logout-submit")


async def test_over_https_the_session_cookie_is_secure(lite: Api) -> None:
    form = await lite.client.get("https://cronduit/login")
    answer = await lite.client.post("https://cronduit/login", data={
        "token": API_TOKEN, "next": "/", "csrf": csrf_of(form.text)})
    [cookie] = [c for c in answer.headers.get_list("set-cookie")
                if c.startswith("cronduit_session=")]
    assert "secure" in {part.strip().lower() for part in cookie.split(";")[1:]}


async def test_a_wrong_token_is_a_401_page_and_no_session(lite: Api) -> None:
    answer = await log_in(lite, token="not-the-token")
    assert 401 == answer.status_code
    assert "wrong token" in squashed(page(answer.text).one(cls="error").text)
    assert "cronduit_session" not in lite.client.cookies
    assert not page((await lite.client.get("/jobs/quiet")).text).find("form", id_="run-now")


async def test_a_login_goes_on_to_a_path_of_this_site_only(lite: Api) -> None:
    form = await lite.client.get("/login")
    answer = await lite.client.post("/login", data={
        "token": API_TOKEN, "next": "//evil.example/x", "csrf": csrf_of(form.text)})
    assert (303, "/") == (answer.status_code, answer.headers["location"])


async def test_without_a_token_configured_login_is_refused_saying_so(tmp_path: Path) -> None:
    text = DASH.replace("  api_token: API_KEY\n", "", 1)
    async for api in open_api(tmp_path, config_text=text):
        form = await api.client.get("/login")
        assert "Login is closed" in squashed(page(form.text).one(cls="error").text)
        answer = await api.client.post("/login", data={
            "token": "", "next": "/", "csrf": csrf_of(form.text)})
        assert 401 == answer.status_code
        assert "login is closed: settings.api_token names no secret that is set" == squashed(
            page(answer.text).one(cls="error").text)


async def test_a_login_without_its_csrf_or_from_another_site_is_403(lite: Api) -> None:
    form = await lite.client.get("/login")
    token = csrf_of(form.text)
    bare = await lite.client.post("/login", data={"token": API_TOKEN, "next": "/"})
    forged = await lite.client.post("/login", data={"token": API_TOKEN, "csrf": "x" * 64})
    cross = await lite.client.post("/login", data={"token": API_TOKEN, "csrf": token},
                                   headers={"Origin": "https://evil.example"})
    fetch = await lite.client.post("/login", data={"token": API_TOKEN, "csrf": token},
                                   headers={"Sec-Fetch-Site": "cross-site"})
    assert [403, 403, 403, 403] == [a.status_code for a in (bare, forged, cross, fetch)]
    assert "cronduit_session" not in lite.client.cookies


async def test_logout_ends_the_session(user: Api) -> None:
    token = await csrf(user)
    old = user.client.cookies["cronduit_session"]
    answer = await user.client.post("/logout", data={"csrf": token})
    assert (303, "/") == (answer.status_code, answer.headers["location"])
    user.client.cookies.set("cronduit_session", old)  # the old cookie opens nothing now
    refused = await user.client.post("/jobs/quiet/resume", data={"csrf": token})
    assert 401 == refused.status_code


async def test_a_new_api_token_ends_the_sessions_opened_with_the_old(user: Api) -> None:
    token = await csrf(user)
    user.gateway.secret = {"API_KEY": "a-new-token-value"}.get
    refused = await user.client.post("/jobs/often/pause", data={"csrf": token, "reason": "x"})
    assert 401 == refused.status_code


async def test_off_loopback_reads_need_the_session(exposed: Api) -> None:
    for path in ("/", "/jobs/quiet", "/audit", "/runs/any"):
        answer = await exposed.client.get(path)
        assert 303 == answer.status_code, path
        assert answer.headers["location"].startswith("/login?next=")
    stream = await exposed.client.get("/runs/any/log/stream")
    assert 401 == stream.status_code
    assert 200 == (await exposed.client.get("/static/dashboard.css")).status_code
    assert 200 == (await exposed.client.get("/login")).status_code
    assert 303 == (await log_in(exposed)).status_code
    assert 200 == (await exposed.client.get("/")).status_code
    assert 200 == (await exposed.client.get("/jobs/quiet")).status_code


async def test_the_redirect_to_login_keeps_the_page_and_its_query(exposed: Api) -> None:
    answer = await exposed.client.get("/jobs/quiet?outcome=failure")
    assert "/login?next=%2Fjobs%2Fquiet%3Foutcome%3Dfailure" == answer.headers["location"]
