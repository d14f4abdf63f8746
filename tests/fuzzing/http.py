"""Fuzzing the HTTP app: webhook, GitHub and API requests of any body and headers.

Each :class:`HttpCase` is one request through the ASGI app, built as the HTTP tests build it
(``tests/http/conftest.py``: the real engine and SQLite store, a fake runner and clock):

- job webhooks, ``POST /hooks/<job>/<token>``: right and wrong tokens, jobs with and without
  webhooks or inputs, ``Idempotency-Key`` and ``X-Request-Id`` of any bytes, any content type;
- GitHub deliveries, ``POST /github``: the fixtures' payloads mutated field by field, bodies
  of any shape or nesting, and any event name and delivery id, most of them signed with the
  test secret so that the body is read, the rest unsigned or signed wrongly;
- run-now, pause and resume, ``POST /v1/jobs/<job>/...``: bodies near the API's own and of
  any shape, with and without the API token, and any ``?queue=`` value.

:meth:`HttpFuzz.check` sends one. The app may refuse anything, but never with a 5xx, never
by raising out of the app (the test transport re-raises what escapes), and each refusal is
a JSON ``detail`` of one line.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st

from cronduit.core.signing import webhook_token
from tests.fuzzing.findings import expect
from tests.fuzzing.values import (
    deep_json,
    documents,
    mutated,
    scalars,
    texts,
    to_json,
    weighted,
)
from tests.http.conftest import API_TOKEN, GITHUB_SECRET, HOOK_SECRET, Api, open_api

FIXTURES = Path(__file__).parent.parent / "fixtures" / "github"
ROTATE_EVERY = 2000
"""Requests per store: the fake runner never ends a run, so waiting triggers pile up."""


@dataclass(frozen=True)
class HttpCase:
    """One POST: its path (with any query), headers and body."""

    path: str
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes


# -- the check -----------------------------------------------------------------------------


class HttpFuzz:
    """The app over a fresh store, answering one case at a time on its own event loop."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.loop = asyncio.new_event_loop()
        self.sent = 0
        self._opened: AsyncIterator[Api] | None = None
        self.api = self._open()

    def _open(self) -> Api:
        store = Path(tempfile.mkdtemp(prefix="store-", dir=self.folder))
        self._opened = open_api(store)
        return self.loop.run_until_complete(anext(self._opened))

    def _close(self) -> None:
        if self._opened is not None:
            self.loop.run_until_complete(anext(self._opened, None))
            self._opened = None

    def close(self) -> None:
        self._close()
        self.loop.close()

    def check(self, case: HttpCase) -> None:
        """Send ``case``: any answer but a 5xx, and a one-line ``detail`` with a refusal."""
        self.sent += 1
        if self.sent % ROTATE_EVERY == 0:
            self._close()
            self.api = self._open()
        answer = self.loop.run_until_complete(self.api.client.post(
            case.path, content=case.body, headers=list(case.headers)))
        status = answer.status_code
        expect(status < 500, "answered %d: %s", status, answer.text[:300])
        if status >= 400:
            detail = _detail(answer.content)
            expect(detail is not None, "a %d without a JSON detail: %r", status,
                   answer.content[:300])
            expect("\n" not in str(detail), "a %d detail of two lines: %r", status, detail)


def _detail(content: bytes) -> str | None:
    try:
        body = json.loads(content)
    except ValueError:
        return None
    detail = body.get("detail") if isinstance(body, dict) else None
    return detail if isinstance(detail, str) else None


@contextmanager
def session(folder: Path | None = None) -> Iterator[HttpFuzz]:
    """An :class:`HttpFuzz` over stores in ``folder`` (a temporary folder by default)."""
    with tempfile.TemporaryDirectory(prefix="cronduit-fuzz-http-",
                                     dir=folder) as made:
        fuzz = HttpFuzz(Path(made))
        try:
            yield fuzz
        finally:
            fuzz.close()


# -- the cases -----------------------------------------------------------------------------

JOBS = ("poke", "inputs", "quiet", "docs", "nope", "", "POKE", "poke/../inputs", "%00", "a" * 300)
"""The test config's jobs (``poke`` and ``inputs`` take webhooks; ``inputs`` declares REGION
and TAG), and names it does not have."""
KEYS = ("k-1", "k-1", "x" * 200, "x" * 201, "a b", "", "\x7f", "é", "k\tv", "\u00ff" * 3)
CONTENT_TYPES = ("application/json", "application/json; charset=utf-8", "text/plain",
                 "application/x-www-form-urlencoded", "application/jsonp", "", "json/json")
EVENTS = ("push", "check_suite", "check_run", "release", "ping", "issues", "", "PUSH",
          "push.x", "a" * 100, "check_suite\n")


def _fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return loaded


PAYLOADS = {path.stem: _fixture(path.stem) for path in sorted(FIXTURES.glob("*.json"))}
EVENT_OF = {"push": "push", "push_tag": "push", "push_deleted_branch": "push",
            "push_without_commits": "push", "check_suite_completed": "check_suite",
            "check_suite_completed_fork": "check_suite", "check_run_completed": "check_run",
            "release_published": "release", "ping": "ping", "issues_opened": "issues"}

_strings = st.one_of(texts, st.sampled_from(["main", "refs/heads/main", "refs/tags/v1",
                                             "0" * 40, "e4a7c9b1d3f5a2c8e0b6d4f2a9c7e5b3d1f8a6c4",
                                             "completed", "success", "failure", "acme/reels",
                                             "docs/guide.md", "../../etc", "x" * 5000]))


_operators = st.one_of(texts, st.sampled_from(["ops", "a" * 200, "a" * 201, "x\ny", "\x1b[31m",
                                               "x\u2028y"]))
_untils = st.one_of(texts, st.sampled_from(["2h", "0s", "99999999999d", "1" * 5000 + "s",
                                            "2026-06-01T13:00:00Z", "9999-12-31T23:59:59Z",
                                            "0001-01-01T00:00:00Z", "2026-06-01", "-1h",
                                            "2026-06-01T13:00:00", "3650d", "3651d"]))
_any_value = st.one_of(scalars, _strings, documents(scalars | _strings, max_leaves=8))
_BY_KEY = {"operator": st.one_of(_operators, _any_value), "until": st.one_of(_untils, _any_value),
           "reason": st.one_of(_operators, _any_value)}


def _payload_values(key: str | int | None) -> st.SearchStrategy[Any]:
    return _BY_KEY.get(key, _any_value) if isinstance(key, str) else _any_value


_body_values = documents(scalars | _strings, max_leaves=20)


def _keys(document: Any) -> list[str]:
    found: set[str] = set()
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            found.update(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return sorted(found) or ["x"]


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _bodies(near: Any) -> st.SearchStrategy[bytes]:
    """A body: ``near`` as it is or mutated, any document, deep nesting, any bytes."""
    changed = mutated(near, _payload_values, st.sampled_from(_keys(near)) | texts)
    text = st.one_of(st.builds(to_json, changed), st.builds(to_json, changed),
                     st.builds(to_json, _body_values), deep_json(), st.just(to_json(near)))
    return st.one_of(text.map(_encoded), text.map(_encoded), st.binary(max_size=64),
                     st.sampled_from([b"", b" \n", b"null", b"[]", b"{}", b'"x"', b"{",
                                      b"\xff\xfe", b'{"a": NaN}', b"1e999"]))


def _header(name: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[
        tuple[tuple[bytes, bytes], ...]]:
    """The header with one of ``values`` (latin-1, as HTTP carries it), or no such header."""
    return st.one_of(st.just(()), values.map(
        lambda value: ((name.encode(), value.encode("latin-1", "replace")),)))


_content_type = _header("content-type", st.sampled_from(CONTENT_TYPES))
_content_length = st.one_of(st.just(()), st.just(()), st.just(()), st.sampled_from(
    [((b"content-length", b"99999999999999999999"),), ((b"content-length", b"26214401"),)]))


_WEBHOOK_BODIES = _bodies({"inputs": {"REGION": "eu", "TAG": "v2"}, "source": "fuzz"})
_GITHUB_BODIES = {name: _bodies(payload) for name, payload in PAYLOADS.items()}
_API_BODIES = {
    "run": _bodies({"inputs": {"REGION": "us", "TAG": "v3"}, "operator": "ops"}),
    "pause": _bodies({"reason": "deploy freeze", "operator": "ops", "until": "2h"}),
    "resume": _bodies({"operator": "ops"}),
}


@st.composite
def webhook_cases(draw: st.DrawFn) -> HttpCase:
    job = draw(st.sampled_from(JOBS))
    token_of = draw(st.sampled_from([job, job, "poke", "inputs"]))
    token = draw(st.one_of(st.just(webhook_token(HOOK_SECRET, token_of)),
                           st.just(webhook_token("another secret", token_of)),
                           texts.map(_quoted)))
    headers = (*draw(_content_type), *draw(_header("idempotency-key", st.sampled_from(KEYS))),
               *draw(_header("x-request-id", st.sampled_from(KEYS))), *draw(_content_length))
    return HttpCase(f"/hooks/{_quoted(job)}/{token}", headers, draw(_WEBHOOK_BODIES))


def _quoted(text: str) -> str:
    """``text`` as one path segment, percent-encoded (lone surrogates as UTF-8 would write
    them if it could, so they reach the app as bytes it must refuse)."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def _signature(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@st.composite
def github_cases(draw: st.DrawFn) -> HttpCase:
    name = draw(st.sampled_from(sorted(PAYLOADS)))
    body = draw(_GITHUB_BODIES[name])
    signature = draw(st.sampled_from([
        _signature(body, GITHUB_SECRET), _signature(body, GITHUB_SECRET),
        _signature(body, GITHUB_SECRET), _signature(body, GITHUB_SECRET).upper(),
        _signature(body, "wrong"), _signature(body, GITHUB_SECRET)[7:], "sha256=", "sha1=x", "",
    ]))
    event = draw(st.sampled_from([EVENT_OF[name], EVENT_OF[name], *EVENTS]))
    headers = ((b"x-hub-signature-256", signature.encode()),
               *draw(_header("x-github-event", st.just(event))),
               *draw(_header("x-github-delivery", st.sampled_from(KEYS) | texts)),
               *draw(_content_type), *draw(_content_length))
    return HttpCase("/github", headers, body)


@st.composite
def api_cases(draw: st.DrawFn) -> HttpCase:
    action = draw(st.sampled_from(["run", "run", "pause", "resume"]))
    job = draw(st.sampled_from(JOBS))
    query = draw(st.sampled_from(["", "", "?queue=1", "?queue=0", "?queue=maybe", "?queue=",
                                  "?queue=1&queue=0", "?x=%ff"]))
    authorization = draw(st.sampled_from([f"Bearer {API_TOKEN}", f"Bearer {API_TOKEN}",
                                          f"bearer  {API_TOKEN} ", "Bearer wrong", "Bearer",
                                          "", f"Basic {API_TOKEN}", "Bearer \u00ff"]))
    headers = ((b"authorization", authorization.encode("latin-1")), *draw(_content_type))
    return HttpCase(f"/v1/jobs/{_quoted(job)}/{action}{query}", headers,
                    draw(_API_BODIES[action]))


def http_cases() -> st.SearchStrategy[HttpCase]:
    """Webhooks, GitHub deliveries and API writes, in about equal shares."""
    return weighted((1, webhook_cases()), (1, github_cases()), (1, api_cases()))
