"""Schemathesis over the whole OpenAPI document at ``/openapi.json``, in process against the
ASGI app on the real engine and store: every route, without the token and with it, on a
listener off loopback (where reads need it). No answer is a 500, and every answer's status
code, content type and body are the ones the document gives for that route."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from cronduit import intake
from tests.http.conftest import API_TOKEN, CONFIG, Wired, wired

EXPOSED = CONFIG.replace("settings:\n", "settings:\n  listen: 0.0.0.0:8770\n", 1) + """\
  nightly: {run: "true", cron: "0 3 * * *", jitter: 10m}
"""
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]
EXAMPLES = 25
"""Cases per route and token: the whole run stays within a minute."""
AUTH = {"Authorization": f"Bearer {API_TOKEN}"}


def ended_run(app: Wired) -> str:
    """A run of ``quiet`` that ran and ended, with a log: a real record for the cases to
    name (a run that goes on would be followed for ever)."""
    now = app.clock.now()
    with app.store.transaction() as tx:
        accepted = intake.accept_manual(tx, app.engine.config.jobs["quiet"], {}, queue=False,
                                        operator="test", now=now)
    app.engine.tick(now)
    with app.store.transaction() as tx:
        event = tx.event_by_delivery(accepted.event.delivery_id)
    assert event is not None
    assert event.run_id is not None
    run_id = event.run_id
    log = app.paths.log(run_id)
    log.parent.mkdir(parents=True)
    log.write_bytes(b"line one\nline \xff two\n")
    app.runner.finish(run_id, 0)
    app.engine.tick(app.clock.now())
    return run_id


@pytest.mark.parametrize("token", [False, True], ids=["without the token", "with it"])
def test_every_answer_matches_the_document(tmp_path: Path, token: bool) -> None:
    headers = AUTH if token else {}
    with wired(tmp_path, config_text=EXPOSED) as app:
        known = {"job": ["quiet", "nightly", "poke"], "run": [ended_run(app)]}
        schema = schemathesis.openapi.from_asgi("/openapi.json", app.app)
        operations = [result.ok() for result in schema.get_all_operations()]
        assert {"/v1/runs/{run}/log", "/v1/jobs", "/hooks/{job}/{token}"} <= {
            op.path for op in operations}
        for operation in operations:
            _check(operation, headers, known)


def _check(operation: Any, headers: dict[str, str], known: dict[str, list[str]]) -> None:
    """Generated cases of one route, valid and invalid ones; half of them name a job or run
    that exists."""
    cases = st.one_of(operation.as_strategy(GenerationMode.POSITIVE),
                      operation.as_strategy(GenerationMode.NEGATIVE))

    @given(case=cases, real=st.booleans())
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def answers_as_documented(case: Any, real: bool) -> None:
        for name, values in known.items():
            if real and name in (case.path_parameters or {}):
                case.path_parameters[name] = values[0]
        response = case.call(headers=headers)
        case.validate_response(response, checks=CHECKS, headers=headers)

    answers_as_documented()
