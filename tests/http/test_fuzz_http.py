"""The HTTP app, fuzzed: a short run (900 cases) of ``tests/fuzzing/http.py``, of which
``bench/fuzz.py`` runs 30,000. No webhook, GitHub delivery or API write, whatever its body
and headers, gets a 5xx or raises out of the app, and every refusal is a one-line JSON
detail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings

from tests.fuzzing.findings import SUITE
from tests.fuzzing.http import HttpCase, HttpFuzz, api_cases, github_cases, session, webhook_cases


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpFuzz]:
    with session(Path(tmp_path_factory.mktemp("fuzz-http"))) as fuzz:
        yield fuzz


@settings(SUITE, max_examples=300)
@given(case=webhook_cases())
def test_a_webhook_of_any_body_and_headers_is_answered_without_a_5xx(app: HttpFuzz,
                                                                      case: HttpCase) -> None:
    """Right and wrong tokens, any idempotency key, inputs of any type, any nesting."""
    app.check(case)


@settings(SUITE, max_examples=300)
@given(case=github_cases())
def test_a_github_delivery_signed_or_not_is_answered_without_a_5xx(app: HttpFuzz,
                                                                    case: HttpCase) -> None:
    """The fixtures' payloads mutated field by field, signed with the test secret mostly."""
    app.check(case)


@settings(SUITE, max_examples=300)
@given(case=api_cases())
def test_run_now_pause_and_resume_of_any_body_are_answered_without_a_5xx(
        app: HttpFuzz, case: HttpCase) -> None:
    """With and without the API token, any ``?queue=``, bodies near the API's own."""
    app.check(case)
