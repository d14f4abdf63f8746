"""The dashboard as its users meet it: a real chromium on the pages of a real daemon.

Every step waits for what proves it (a selector, a text, a URL) with a bounded timeout;
nothing sleeps and then looks.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect
from playwright.sync_api import Error as PlaywrightError

from cronduit.core.signing import webhook_token
from tests.browser.conftest import (
    API_TOKEN,
    HOOK_SECRET,
    JOBS,
    MOBILE,
    TIMEOUT_MS,
    Dashboard,
    at_path,
    log_in,
    open_context,
    screenshots,
)

RUN_URL = re.compile(r".*/runs/[0-9A-Za-z_-]+$")


def job_rows(page: Page) -> list[str]:
    """The jobs of the home page's rows, read in one go (the table may be swapped while
    the filter is applied as it is typed)."""
    rows: list[str] = page.eval_on_selector_all("#jobs tr[data-job]",
                                                "rows => rows.map(r => r.dataset.job)")
    return rows


def expect_rows(page: Page, jobs: list[str]) -> None:
    """Until the home page's rows are JOBS, in any order."""
    with contextlib.suppress(AssertionError):
        until(page, lambda: sorted(jobs) == sorted(_rows_now(page) or []))
    page.wait_for_load_state()
    assert sorted(jobs) == sorted(job_rows(page))


def _rows_now(page: Page) -> list[str] | None:
    """The rows as they stand; None while a navigation (a filter's submit) replaces the
    page under the read."""
    try:
        return job_rows(page)
    except PlaywrightError:
        return None


def until(page: Page, what: Callable[[], bool], timeout: float = TIMEOUT_MS / 1000) -> None:
    """Until WHAT holds, looking every 50 ms while the browser goes on; fail after TIMEOUT."""
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out waiting"
        page.wait_for_timeout(50)


def set_input(page: Page, name: str, value: str) -> None:
    """Fill the run-now field of input NAME, a text field or a choice."""
    field = page.locator(f'#run-now [name="input.{name}"]')
    if field.evaluate("e => e.tagName") == "SELECT":
        field.select_option(value)
    else:
        field.fill(value)


def test_the_home_page_lists_every_job_with_its_schedule_in_words(page: Page) -> None:
    """One row per configured job; a calendar timing and an interval said in words."""
    page.goto("/")
    expect(page.locator("#jobs tr[data-job]")).to_have_count(len(JOBS))
    expect_rows(page, JOBS)
    expect(page.locator('tr[data-job="nightly"] .schedule')).to_contain_text("03:00")
    expect(page.locator('tr[data-job="tick"] .schedule')).to_contain_text("30")
    expect(page.locator('tr[data-job="nightly"] .next time')).to_have_attribute(
        "datetime", re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d"))


def test_the_strip_shows_recent_runs_by_outcome_and_links_each(page: Page,
                                                                 dashboard: Dashboard) -> None:
    """A failed run is in its job's strip as a failure, coloured apart from a success, and
    its link opens that run; the row's last outcome says so too."""
    failed = dashboard.run_now("flaky")
    dashboard.run_now("greet", NAME="strip", REGION="eu")
    page.goto("/")
    failure = page.locator(f'tr[data-job="flaky"] .strip a.run.failure[href="/runs/{failed}"]')
    expect(failure).to_have_count(1)
    expect(page.locator('tr[data-job="flaky"] .last')).to_contain_text("failure")
    success = page.locator('tr[data-job="greet"] .strip a.run.success').first
    colour = "e => getComputedStyle(e).backgroundColor"
    assert failure.evaluate(colour) != success.evaluate(colour)
    failure.click()
    page.wait_for_url(at_path(f"/runs/{failed}"))
    expect(page.locator("#outcome")).to_have_text("failure")
    expect(page.locator("#exit-status")).to_contain_text("3")
    expect(page.locator("#log")).to_contain_text("about to fail")


def test_slash_focuses_the_filter_and_a_filter_is_kept_in_the_url(page: Page) -> None:
    """`/` from anywhere on the page focuses the filter; a submitted filter is in the URL,
    the rows match it, and the same URL opened afresh shows the same filter."""
    page.goto("/")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("/")
    expect(page.locator("#filter")).to_be_focused()
    expect(page.locator("#filter")).to_have_value("")  # the slash was not typed into it
    page.keyboard.type("gre")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*[?&]q=gre(&|$)"))
    expect_rows(page, ["greet"])
    page.goto(page.url)
    expect(page.locator("#filter")).to_have_value("gre")
    expect_rows(page, ["greet"])


def test_the_job_page_shows_next_slots_the_ledger_and_the_webhook_without_its_token(
        page: Page) -> None:
    """A calendar job lists its next 10 slots; an interval job that ran at start shows
    that slot as ran in its ledger, linked to the run; the webhook path hides the token."""
    page.goto("/jobs/nightly")
    expect(page.locator("#next-slots li time")).to_have_count(10)
    expect(page.locator("#config")).to_contain_text("0 3 * * *")
    page.goto("/jobs/tick")
    history_filter = page.locator("#history-filter")
    history_filter.locator('select[name="trigger"]').select_option("timer")
    history_filter.locator('[type="submit"]').click()
    page.wait_for_url(re.compile(r".*/jobs/tick\?(.*&)?trigger=timer(&|$)"))
    expect(page.locator("#history tr[data-run]").first).to_be_visible()  # the run at start
    history_filter.locator('select[name="outcome"]').select_option("failure")
    history_filter.locator('[type="submit"]').click()
    page.wait_for_url(re.compile(r".*/jobs/tick\?(.*&)?outcome=failure(&|$)"))
    expect(page.locator("#history tr[data-run]")).to_have_count(0)  # tick never failed
    expect(history_filter.locator('select[name="trigger"]')).to_have_value("timer")
    page.goto("/jobs/tick")
    expect(page.locator("#webhook")).to_contain_text("/hooks/tick/<token>")
    assert webhook_token(HOOK_SECRET, "tick") not in page.content()
    ran = page.locator("#ledger li.slot.ran").first
    expect(ran.locator(".reason")).to_have_count(1)
    expect(page.locator("#history tr[data-run]").first).to_be_visible()
    ran.locator('a[href^="/runs/"]').click()
    page.wait_for_url(RUN_URL)
    expect(page.locator("#log")).to_contain_text("tick")
    expect(page.locator("#outcome")).to_have_text("success")


def test_logging_in_sets_a_strict_http_only_session_cookie(page: Page,
                                                           context: BrowserContext) -> None:
    """The token logs in; the session cookie is out of scripts' and other sites' reach; the
    job page then shows the forms instead of the link to log in."""
    page.goto("/jobs/greet")
    expect(page.locator("#run-now")).to_have_count(0)
    expect(page.locator('a[href^="/login"]').first).to_be_visible()
    log_in(page, "/jobs/greet")
    expect(page.locator("#run-now")).to_be_visible()
    expect(page.locator("#pause")).to_be_visible()
    (session,) = [c for c in context.cookies() if c["name"] == "cronduit_session"]
    assert (True, "Strict", "/") == (session["httpOnly"], session["sameSite"], session["path"])
    assert API_TOKEN not in session["value"]
    assert "" == page.evaluate("document.cookie.includes('cronduit_session') ? 'seen' : ''")


def test_logging_out_ends_the_session_even_for_a_copy_of_its_cookie(
        page: Page, context: BrowserContext) -> None:
    """After the logout, the job page offers the login again, and the old cookie put back
    in the browser does not bring the forms back: the session is gone on the server too."""
    log_in(page, "/jobs/greet")
    (session,) = [c for c in context.cookies() if c["name"] == "cronduit_session"]
    page.click('form[action="/logout"] [type="submit"]')
    page.wait_for_url(at_path("/"))
    assert [] == [c for c in context.cookies() if c["name"] == "cronduit_session"]
    context.add_cookies([session])
    page.goto("/jobs/greet")
    expect(page.locator('a[href^="/login"]').first).to_be_visible()
    expect(page.locator("#run-now")).to_have_count(0)


def test_a_wrong_token_is_refused_with_a_401_page(page: Page,
                                                  context: BrowserContext) -> None:
    page.goto("/login?next=/")
    page.fill("#login input[name=token]", "not-the-token")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.click("#login-submit")
    assert 401 == answer.value.status
    expect(page.locator(".error")).to_be_visible()
    assert [] == [c for c in context.cookies() if c["name"] == "cronduit_session"]


def test_run_now_with_inputs_lands_on_the_run_page_with_its_log(logged_in: Page) -> None:
    """The inputs typed in the form reach the job's environment."""
    page = logged_in
    page.goto("/jobs/greet")
    set_input(page, "NAME", "ana")
    set_input(page, "REGION", "us")
    page.click("#run-now-submit")
    page.wait_for_url(RUN_URL)
    expect(page.locator("#log")).to_contain_text("hello, ana from us")
    expect(page.locator("#outcome")).to_have_text("success")


def test_an_input_breaking_its_rule_re_renders_the_form_with_a_422(logged_in: Page,
                                                                   dashboard: Dashboard
                                                                   ) -> None:
    """The CLI's rules: the error names the field, and no run starts."""
    page = logged_in
    before = len(dashboard.runs("greet"))
    page.goto("/jobs/greet")
    set_input(page, "NAME", "Ana Smith")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.click("#run-now-submit")
    assert 422 == answer.value.status
    expect(page.locator(".error")).to_contain_text("NAME")
    expect(page.locator("#run-now")).to_be_visible()
    assert before == len(dashboard.runs("greet"))


def test_the_log_of_a_running_run_appears_live(logged_in: Page, dashboard: Dashboard) -> None:
    """An early line shows while the run is still going, then the last line and the
    outcome arrive in the same page, never reloaded."""
    page = logged_in
    page.goto("/jobs/drip")
    set_input(page, "TAG", "live")
    page.click("#run-now-submit")
    page.wait_for_url(RUN_URL)
    page.evaluate("window.cronduitTestMark = 'same page'")
    expect(page.locator("#outcome")).to_have_text("running")
    expect(page.locator("#log")).to_contain_text("drip 1 of 6")
    expect(page.locator("#log")).to_contain_text("drip 5 of 6")  # printed 1.6 s after the 1st
    expect(page.locator("#outcome")).to_have_text("running")  # held until released
    expect(page.locator("#log")).not_to_contain_text("drip 6 of 6")
    dashboard.release("live")
    expect(page.locator("#log")).to_contain_text("drip 6 of 6: done")
    expect(page.locator("#outcome")).to_have_text("success")
    assert "same page" == page.evaluate("window.cronduitTestMark")
    assert 1 == page.locator("#log").inner_text().count("drip 1 of 6")  # no line twice


def test_pause_with_a_reason_shows_the_banner_and_the_audit_entry_and_resume_clears_it(
        logged_in: Page, dashboard: Dashboard) -> None:
    """The banner on the job page and on home, where the paused filter keeps that row;
    the audit log's newest entry for the job; then the resume, which clears all of it."""
    page = logged_in
    page.goto("/jobs/tick")
    page.fill('#pause [name="reason"]', "db migration")
    page.fill('#pause [name="until"]', "2h")
    page.click("#pause-submit")
    page.wait_for_url(at_path("/jobs/tick"))
    banner = re.compile(r"PAUSED by \S+ since .+: db migration until .+")
    expect(page.locator(".banner-paused")).to_have_text(banner)
    assert "db migration" == dashboard.job("tick")["paused"]["reason"]
    page.goto("/")
    expect(page.locator('tr[data-job="tick"]')).to_have_class(re.compile(r"\bpaused\b"))
    expect(page.locator('tr[data-job="tick"] .banner-paused')).to_have_text(banner)
    expect(page.locator('tr[data-job="greet"] .banner-paused')).to_have_count(0)
    page.select_option('#filter-form select[name="state"]', "paused")
    page.locator("#filter").press("Enter")
    page.wait_for_url(re.compile(r".*[?&]state=paused(&|$)"))
    expect_rows(page, ["tick"])
    page.goto("/audit")
    newest = page.locator("#audit tr").filter(has_text="tick").first
    expect(newest).to_contain_text("pause")
    expect(newest).to_contain_text("db migration")

    page.goto("/jobs/tick")
    page.click("#resume-submit")
    page.wait_for_url(at_path("/jobs/tick"))
    expect(page.locator(".banner-paused")).to_have_count(0)
    assert dashboard.job("tick")["paused"] is None
    page.goto("/")
    expect(page.locator('tr[data-job="tick"]')).not_to_have_class(re.compile(r"\bpaused\b"))
    expect(page.locator('tr[data-job="tick"] .banner-paused')).to_have_count(0)
    page.goto("/audit")
    expect(page.locator("#audit tr").filter(has_text="tick").first).to_contain_text("resume")


class _Attacker(BaseHTTPRequestHandler):
    """Serves one page that POSTs a pause to the dashboard as soon as it loads."""

    target = ""

    def do_GET(self) -> None:
        body = (f'<!doctype html><form id="f" method="post" action="{self.target}">'
                '<input name="reason" value="pwned"></form>'
                '<script>document.getElementById("f").submit()</script>').encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def attacker(dashboard: Dashboard) -> Iterator[int]:
    """Another origin on loopback, serving the forged form; its port."""
    handler = type("Attacker", (_Attacker,), {"target": f"{dashboard.url}/jobs/nightly/pause"})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"],
                         ids=["same-site-other-origin", "cross-site"])
def test_a_forged_form_post_from_another_origin_changes_nothing(
        logged_in: Page, dashboard: Dashboard, attacker: int, host: str) -> None:
    """A logged-in browser opens another origin's page, which posts a pause to the
    dashboard at once: refused, and the job is not paused.

    From 127.0.0.1 on another port (same site, other origin) chromium sends the session
    cookie along, but the form has no CSRF token and its Origin is not the dashboard's; from
    localhost (another site) the strict cookie stays home and Sec-Fetch-Site says
    cross-site."""
    page = logged_in
    with page.expect_response(lambda r: r.url.endswith("/jobs/nightly/pause")) as answer:
        page.goto(f"http://{host}:{attacker}/")
    assert answer.value.status in {401, 403}
    assert dashboard.job("nightly")["paused"] is None


def is_png(path: Path) -> bool:
    return path.stat().st_size > 1000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_every_page_is_captured_in_light_and_dark(logged_in: Page, dashboard: Dashboard,
                                                  browser: Browser) -> None:
    """Screenshots of home, a job, a run and the audit log, each in both schemes, and of
    home on a phone, written as the suite's artifacts."""
    page = logged_in
    dashboard.run_now("flaky")
    run_id = dashboard.run_now("greet", NAME="docs", REGION="eu")
    written: list[Path] = []
    for name, path, ready in [("home", "/", "#jobs"), ("job", "/jobs/tick", "#ledger"),
                              ("run", f"/runs/{run_id}", "#log"), ("audit", "/audit", "#audit")]:
        page.goto(path)
        page.wait_for_selector(ready)
        written += screenshots(page, name)
    phone = open_context(browser, dashboard, viewport=MOBILE)
    try:
        mobile = phone.new_page()
        mobile.goto("/")
        mobile.wait_for_selector("#jobs")
        written += screenshots(mobile, "home-mobile")
    finally:
        phone.close()
    assert 10 == len(written)
    assert [] == [path.name for path in written if not is_png(path)]


BACKGROUND = """() => {
    const painted = [document.body, document.documentElement]
        .map(e => getComputedStyle(e).backgroundColor)
        .find(c => c !== "rgba(0, 0, 0, 0)" && c !== "transparent");
    const [r, g, b] = (painted || "rgb(255, 255, 255)").match(/[0-9.]+/g).map(Number);
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}"""
"""The page's background lightness, 0 (black) to 255 (white)."""


def test_the_auto_theme_follows_the_scheme_and_the_toggle_keeps_a_choice(
        page: Page, context: BrowserContext) -> None:
    """With theme auto the page is dark in a dark scheme and light in a light one; the
    toggle sets the theme cookie, and the page wears the theme it names."""
    page.goto("/")
    expect(page.locator("html")).to_have_attribute("data-theme", "auto")
    light = page.evaluate(BACKGROUND)
    page.emulate_media(color_scheme="dark")
    dark = page.evaluate(BACKGROUND)
    assert dark + 100 < light, (dark, light)
    page.click("#theme-toggle")

    def themes() -> list[str]:
        return [c["value"] for c in context.cookies() if c["name"] == "cronduit_theme"]

    until(page, lambda: bool(themes()))  # set by a script or by the answer to a request
    page.goto("/")
    (theme,) = themes()
    assert theme in {"light", "dark"}
    expect(page.locator("html")).to_have_attribute("data-theme", theme)


def test_the_pages_read_without_javascript(browser: Browser, dashboard: Dashboard) -> None:
    """Home lists the jobs and a run page shows its whole log with scripts off."""
    run_id = dashboard.run_now("greet", NAME="nojs", REGION="eu")
    plain = open_context(browser, dashboard, java_script_enabled=False)
    try:
        page = plain.new_page()
        page.goto("/")
        expect(page.locator("#jobs tr[data-job]")).to_have_count(len(JOBS))
        page.goto(f"/runs/{run_id}")
        expect(page.locator("#log")).to_contain_text("hello, nojs from eu")
        expect(page.locator("#outcome")).to_have_text("success")
    finally:
        plain.close()


def test_the_home_page_is_readable_at_360_px_without_a_sideways_scroll(
        browser: Browser, dashboard: Dashboard) -> None:
    phone = open_context(browser, dashboard, viewport=MOBILE)
    try:
        page = phone.new_page()
        page.goto("/")
        page.wait_for_selector("#jobs tr[data-job]")
        width = page.evaluate("document.scrollingElement.scrollWidth")
        assert width <= MOBILE["width"] + 2
    finally:
        phone.close()
