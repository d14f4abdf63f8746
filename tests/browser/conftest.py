"""The dashboard in a real browser: Debian's chromium, driven by Playwright, against a real
``cronduit serve``.

One daemon and one browser serve the whole folder (starting them is most of the suite's
time); each test gets a fresh browser context, so no cookie or theme leaks from one to the
next. Tests that change a job's state put it back, or use a job no other test reads.

Playwright's own browser builds cannot be downloaded here: it launches the system's
``/usr/bin/chromium``, in a fresh temporary profile of its own. Without that binary the tests
skip, and fail under ``CI=true``, as the other tests needing a tool do.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Page,
    StorageState,
    ViewportSize,
    expect,
    sync_playwright,
)

from tests.acceptance.conftest import Deployment

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
API_TOKEN = "dashboard-token-5b7e-never-shown"
HOOK_SECRET = "dashboard-hook-secret-c4d2-never-shown"
TIMEOUT_MS = 10_000
"""How long a browser wait lasts before it fails: far above what any step takes here."""
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
MOBILE: ViewportSize = {"width": 360, "height": 740}
REPO = Path(__file__).resolve().parents[2]

CONFIG = """\
settings:
  listen: 127.0.0.1:0
  api_token: API_KEY
  webhook_secret: HOOK_KEY
jobs:
  nightly: {run: 'echo nightly report', cron: "0 3 * * *"}
  tick: {run: 'echo tick', every: 30m, webhook: true}
  greet:
    run: 'echo "hello, $NAME from $REGION"'
    inputs:
      NAME: {pattern: "[a-z]+", default: world, description: who to greet}
      REGION: {enum: [eu, us], default: eu}
  drip:
    # Prints a line every 0.4 s, then holds its last line back until the test drops the
    # file release-TAG (at most 30 s): the run is surely still going while the test looks.
    run: |
      for i in 1 2 3 4 5; do echo "drip $i of 6"; sleep 0.4; done
      n=0
      while [ ! -e "release-$TAG" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); done
      echo "drip 6 of 6: done"
    inputs: {TAG: {pattern: "[a-z0-9]+", default: one}}
  flaky: {run: 'echo about to fail; exit 3'}
"""
JOBS = ["nightly", "tick", "greet", "drip", "flaky"]


def require_chromium() -> None:
    """Skip without Debian's chromium; under CI=true fail instead."""
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is missing (apt-get install chromium)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


@dataclass
class Dashboard:
    """The serving daemon: its address, its folder and the API beside the pages."""

    deployment: Deployment

    @functools.cached_property
    def url(self) -> str:
        """The listener's address, once the daemon logs it (the first call waits for it)."""
        return listening_url(self.deployment)

    @property
    def folder(self) -> Path:
        return self.deployment.folder

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """An API call with the bearer token, as a script beside the browser would make."""
        headers = {"Authorization": f"Bearer {API_TOKEN}"}
        return httpx.request(method, f"{self.url}{path}", headers=headers, timeout=10,
                             **kwargs)

    def job(self, name: str) -> dict[str, Any]:
        answer = self.api("GET", f"/v1/jobs/{name}")
        answer.raise_for_status()
        found: dict[str, Any] = answer.json()
        return found

    def runs(self, job: str) -> list[dict[str, Any]]:
        """The job's runs, newest first."""
        answer = self.api("GET", "/v1/runs", params={"job": job, "limit": 100})
        answer.raise_for_status()
        found: list[dict[str, Any]] = answer.json()["runs"]
        return found

    def run_now(self, job: str, **inputs: str) -> str:
        """Start a run through the API (to give the pages something to show); its id."""
        answer = self.api("POST", f"/v1/jobs/{job}/run", json={"inputs": inputs})
        assert 201 == answer.status_code, answer.text
        run_id: str = answer.json()["run_id"]
        self.deployment.wait_for(lambda: self.run(run_id)["outcome"] is not None)
        return run_id

    def run(self, run_id: str) -> dict[str, Any]:
        answer = self.api("GET", f"/v1/runs/{run_id}")
        answer.raise_for_status()
        found: dict[str, Any] = answer.json()
        return found

    def release(self, tag: str) -> None:
        """Let the drip run started with TAG print its last line and end."""
        (self.folder / f"release-{tag}").touch()


def listening_url(deployment: Deployment) -> str:
    deployment.wait_for(lambda: "listening on http://" in deployment.daemon_log(), 30)
    found = re.search(r"listening on (http://\S+)", deployment.daemon_log())
    assert found is not None
    return found.group(1)


@pytest.fixture(scope="package")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    """A real ``cronduit serve`` on a port the system picks, with the API token set.

    Started, not waited for: the daemon boots while the browser launches, and the first
    use of its address waits until it listens.
    """
    deployment = Deployment(tmp_path_factory.mktemp("dashboard"))
    deployment.write(CONFIG)
    daemon = deployment.serve(extra_env={"API_KEY": API_TOKEN, "HOOK_KEY": HOOK_SECRET})
    try:
        yield Dashboard(deployment)
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=15)
        except subprocess.TimeoutExpired:  # a daemon that will not stop is killed
            daemon.kill()
            daemon.wait(timeout=10)


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """One headless chromium for the folder; contexts are cheap, a browser is not."""
    require_chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                              args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def open_context(browser: Browser, dashboard: Dashboard, **options: Any) -> BrowserContext:
    """A fresh profile aimed at the dashboard: no cookie unless OPTIONS give a storage
    state, the light scheme and a desktop size unless they say otherwise."""
    made = browser.new_context(**{"base_url": dashboard.url, "viewport": VIEWPORT,
                                  "color_scheme": "light", **options})
    made.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    return made


@pytest.fixture
def context(dashboard: Dashboard, browser: Browser) -> Iterator[BrowserContext]:
    made = open_context(browser, dashboard)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


@pytest.fixture(scope="package")
def session(dashboard: Dashboard, browser: Browser) -> StorageState:
    """Cookies of one login through the form, for the tests that act as a logged-in user
    (logging in once saves each of them a round of the login page)."""
    made = open_context(browser, dashboard)
    try:
        log_in(made.new_page())
        return made.storage_state()
    finally:
        made.close()


@pytest.fixture
def logged_in(dashboard: Dashboard, browser: Browser, session: StorageState) -> Iterator[Page]:
    """A page in a fresh profile that holds the login's session cookie."""
    made = open_context(browser, dashboard, storage_state=session)
    try:
        yield made.new_page()
    finally:
        made.close()


def log_in(page: Page, next_path: str = "/") -> None:
    """Log in through the form with the API token; back on NEXT_PATH."""
    page.goto(f"/login?next={next_path}")
    page.fill("#login input[name=token]", API_TOKEN)
    page.click("#login-submit")
    page.wait_for_url(at_path(next_path))


def at_path(path: str) -> re.Pattern[str]:
    """A URL on the dashboard at PATH, whatever its query (a notice, say)."""
    return re.compile(rf"^http://[^/]+{re.escape(path)}(\?.*)?$")


def artifacts() -> Path:
    """Where screenshots go: ``$CRONDUIT_ARTIFACTS/browser``, else ``.artifacts/browser``."""
    root = os.environ.get("CRONDUIT_ARTIFACTS")
    folder = (Path(root) if root else REPO / ".artifacts") / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


DOCS_IMG = REPO / "docs" / "img"
REFRESH_DOCS = os.environ.get("CRONDUIT_DOCS_SCREENSHOTS") == "1"
"""Set by scripts/dashboard-screenshots: the screenshots are also docs/img's pictures."""


def screenshots(page: Page, name: str) -> list[Path]:
    """The page as it is now, once in the light scheme and once in the dark (the page's
    theme is ``auto``, so it follows the scheme); the files written."""
    written = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        path = artifacts() / f"dashboard-{name}-{scheme}.png"
        page.screenshot(path=path)
        written.append(path)
        if REFRESH_DOCS:
            DOCS_IMG.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=DOCS_IMG / path.name)
    page.emulate_media(color_scheme="light")
    return written
