"""The dashboard over the ASGI transport, bound to a real engine and store, with a logged-in
browser when a test asks for one."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.helpers.postgres import fresh_schema, in_schema
from tests.http.conftest import API_TOKEN, CONFIG, Api, open_api

DASH = CONFIG + """\
  nightly: {run: "true", cron: "0 3 * * *", jitter: 10m}
  often:   {run: "true", every: 5m}
  strict:  {run: "true", inputs: {COUNT: {pattern: "[0-9]+", default: "1"}}}
"""
"""The shared jobs, with timed ones (a ledger, next slots) and one with a required input."""


def csrf_of(page: str) -> str:
    """The value of the first hidden ``csrf`` field of a page."""
    found = re.search(r'name="csrf" value="([^"]*)"', page)
    assert found is not None, "no csrf field on the page"
    return found.group(1)


async def log_in(api: Api, token: str = API_TOKEN) -> httpx.Response:
    """Log the client in through the login form; the answer to the POST."""
    form = await api.client.get("/login?next=/")
    assert 200 == form.status_code
    return await api.client.post("/login", data={
        "token": token, "next": "/", "csrf": csrf_of(form.text)})


async def csrf(api: Api, path: str = "/") -> str:
    """The CSRF token a logged-in page gives its forms."""
    return csrf_of((await api.client.get(path)).text)


@pytest.fixture(params=["sqlite", "postgresql"])
async def dash(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    """The app on each backend, on loopback (reads open), nobody logged in."""
    if request.param == "sqlite":
        async for made in open_api(tmp_path, config_text=DASH):
            yield made
        return
    with fresh_schema() as schema:
        async for made in open_api(tmp_path, config_text=DASH, postgres=in_schema(schema)):
            yield made


@pytest.fixture
async def lite(tmp_path: Path) -> AsyncIterator[Api]:
    """The app on SQLite only: for what does not depend on the backend."""
    async for made in open_api(tmp_path, config_text=DASH):
        yield made


@pytest.fixture
async def user(lite: Api) -> Api:
    """:func:`lite` with the client logged in."""
    answer = await log_in(lite)
    assert 303 == answer.status_code, answer.text
    return lite


@pytest.fixture
async def exposed(tmp_path: Path) -> AsyncIterator[Api]:
    """The app of a daemon that listens on every address: reads need a session."""
    text = DASH.replace("settings:\n", "settings:\n  listen: 0.0.0.0:8770\n", 1)
    async for made in open_api(tmp_path, config_text=text):
        yield made
