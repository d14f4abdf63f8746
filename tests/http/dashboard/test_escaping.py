"""Outside values reach the pages as text, never markup (Jinja's autoescape), and no secret
ever reaches a page."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from jinja2 import Environment

from cronduit.http.dashboard.views import run_class, strip_html
from cronduit.ports import RunMark
from tests.http.conftest import API_TOKEN, GITHUB_SECRET, HOOK_SECRET, Api
from tests.http.dashboard.html import page, squashed
from tests.http.dashboard.test_pages import manual_run, write_log

pytestmark = pytest.mark.anyio

AUTH = {"Authorization": f"Bearer {API_TOKEN}"}
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
STRIP_TEMPLATE = Environment(autoescape=True).from_string(
    '{% for run in strip|reverse %}<a class="run {{ run.outcome }}" href="/runs/{{ run.id }}"'
    ' title="{{ run.title }}"></a>{% endfor %}')
"""The home page's strip as its template made it, value by value under autoescape: what
:func:`strip_html` must give."""


async def test_a_hostile_pause_reason_is_shown_as_text(lite: Api) -> None:
    answer = await lite.client.post("/v1/jobs/often/pause", headers=AUTH,
                                    json={"reason": HOSTILE, "operator": "<b>mallory</b>"})
    assert 200 == answer.status_code
    for path in ("/", "/jobs/often", "/audit"):
        text = (await lite.client.get(path)).text
        assert "<script>alert" not in text, path
        assert "<img src=x" not in text, path
        assert "<b>mallory" not in text, path
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in text, path
    row = next(r for r in page((await lite.client.get("/")).text).find("tr")
           if r.attrs.get("data-job") == "often")
    assert f"PAUSED by <b>mallory</b> since 2026-06-01T12:00:00Z: {HOSTILE}" == squashed(
        row.one(cls="banner-paused").text)


async def test_a_hostile_log_line_and_webhook_body_are_shown_as_text(lite: Api) -> None:
    run_id = await manual_run(lite, exit_status=None)
    write_log(lite, run_id, f"{HOSTILE}\n</pre><script>x()</script>\n".encode())
    text = (await lite.client.get(f"/runs/{run_id}")).text
    assert "<script>" not in text.replace('<script src="/static/', "")
    assert f"{HOSTILE}\n</pre><script>x()</script>\n" == page(text).one("pre", id_="log").text
    hooked = await lite.client.post(lite.hook("poke"), content=HOSTILE.encode(),
                                    headers={"content-type": "text/plain"})
    assert 202 == hooked.status_code
    lite.tick()
    for path in ("/", "/jobs/poke"):
        shown = (await lite.client.get(path)).text
        assert "<script>alert" not in shown, path
        assert "<img src=x" not in shown, path
    history = page((await lite.client.get("/jobs/poke")).text).one("table", id_="history")
    assert "webhook <script>alert" in squashed(history.text)  # the label, as text


async def test_no_page_shows_a_secret(lite: Api) -> None:
    run_id = await manual_run(lite, exit_status=1)
    await lite.client.post("/v1/jobs/often/pause", headers=AUTH, json={"reason": "r"})
    for path in ("/", "/jobs/poke", "/jobs/inputs", f"/runs/{run_id}", "/audit", "/login"):
        text = (await lite.client.get(path)).text
        for secret in (API_TOKEN, HOOK_SECRET, GITHUB_SECRET):
            assert secret not in text, (path, secret)
    poke = page((await lite.client.get("/jobs/poke")).text)
    assert lite.hook("poke") not in poke.one(id_="webhook").text  # the token is <token>


MARK = st.builds(RunMark, id=st.text(), job=st.just("j"), kind=st.text(max_size=8),
                 state=st.sampled_from(["running", "backoff", "ended"]),
                 outcome=st.none() | st.text(max_size=8), reason=st.text(max_size=12))


@given(st.lists(MARK, max_size=6))
@example([RunMark("0190a1b2c3d4e5", "j", "webhook", "ended", "failure", HOSTILE),
          RunMark('a"><script>x()</script>', "j", "<b>", "running", None, ""),
          RunMark("r1", "j", "timer", "ended", 'x" onmouseover="y', "it's & <that>")])
def test_a_strip_is_what_its_template_made_of_each_value_escaped(marks: list[RunMark]) -> None:
    """Any ids, kinds, outcomes and reasons, hostile ones among them: the strip made as
    markup is, byte for byte, the template's loop over the same marks under Jinja's
    autoescape, oldest first (the id of letters and digits, not escaped, included)."""
    strip = [{"id": mark.id, "outcome": run_class(mark),
              "title": f"{mark.kind} · {run_class(mark)}" + (
                  f" · {mark.reason}" if mark.reason else "")} for mark in marks]
    assert STRIP_TEMPLATE.render(strip=strip) == str(strip_html(marks))
