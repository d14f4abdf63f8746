"""The harness itself: the browser reaches the daemon the fixtures started."""

from __future__ import annotations

import json

from playwright.sync_api import Page

from tests.browser.conftest import JOBS, Dashboard


def test_the_browser_reaches_the_daemon_and_reads_its_jobs(page: Page,
                                                            dashboard: Dashboard) -> None:
    """/healthz answers the browser, and /v1/jobs lists every configured job."""
    health = page.goto("/healthz")
    assert health is not None
    assert health.ok
    answer = page.goto("/v1/jobs")
    assert answer is not None
    assert sorted(JOBS) == sorted(job["job"] for job in json.loads(answer.text())["jobs"])
    assert dashboard.job("greet")["paused"] is None
