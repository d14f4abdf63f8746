"""The OpenAPI document at ``/openapi.json``: the Starlette routes' table, kept here by hand
from their request and response models, merged with the document FastAPI generates for the
read routes (:mod:`cronduit.http.read_routes`).

The tests check the merged document names every route the app serves, and that every
answer matches it, so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import models_json_schema

from cronduit.http.models import (
    Accepted,
    DeliveryRecorded,
    ExecutionDetail,
    ExecutionRequest,
    Health,
    PauseRecord,
    PauseRequest,
    ResumeAccepted,
    ResumeRequest,
    RunRequest,
    RunStarted,
)

_ERROR = {"description": "", "content": {"application/json": {"schema": {
    "type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]}}}}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _ok(description: str, schema: str) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": _ref(schema)}}}


_UNAVAILABLE = ("the state store cannot be written (a full or read-only disk): nothing was "
                "accepted; Retry-After says when to try again")


def _errors(**codes: str) -> dict[str, Any]:
    return {code.removeprefix("e"): {**_ERROR, "description": text}
            for code, text in codes.items()}


def _header(name: str, description: str, *, required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "header", "required": required, "description": description,
            "schema": {"type": "string"}}


def _path(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "description": description,
            "schema": {"type": "string"}}


PATHS: dict[str, dict[str, Any]] = {
    "/healthz": {"get": {
        "summary": "Whether the daemon answers, and whether it runs in dry run",
        "responses": {"200": _ok("the daemon answers", "Health")},
    }},
    "/metrics": {"get": {
        "summary": "The daemon's metrics in the Prometheus text format (docs/metrics.md)",
        "description": "Rendered from what the daemon keeps: counters as runs end and slots "
                       "get their fates, gauges read from the store every 5 s. Open on a "
                       "loopback listener; elsewhere it needs the API token.",
        "responses": {"200": {"description": "every metric family",
                              "content": {"text/plain; version=0.0.4": {
                                  "schema": {"type": "string"}}}},
                      **_errors(e401="off loopback: no valid API token")},
    }},
    "/hooks/{job}/{token}": {"post": {
        "summary": "Trigger a job with webhook: true; 202 once the trigger is durable",
        "description": "The whole body reaches the run in $CRONDUIT_TRIGGER_FILE; a JSON "
                       "object body may carry {\"inputs\": {...}}. Idempotency-Key or "
                       "X-Request-Id makes a retried POST the same trigger.",
        "parameters": [
            _path("job", "the job's name"),
            _path("token", "HMAC-SHA256 of the webhook secret over the job name, in hex"),
            _header("Idempotency-Key", "1-200 printable ASCII characters"),
            _header("X-Request-Id", "used when Idempotency-Key is absent"),
        ],
        "requestBody": {"required": False, "content": {"*/*": {"schema": {}}}},
        "responses": {"202": _ok("accepted", "Accepted"), **_errors(
            e400="a body declared JSON that is not; a malformed Idempotency-Key",
            e404="no such webhook: unknown job, no webhook: true, or a wrong token",
            e413="body over 1 MiB", e422="an input breaks its declared rule",
            e503=_UNAVAILABLE)},
    }},
    "/github": {"post": {
        "summary": "Record a GitHub delivery and trigger the jobs it matches",
        "parameters": [
            _header("X-GitHub-Event", "the event name", required=True),
            _header("X-GitHub-Delivery", "the delivery's id: recorded once", required=True),
            _header("X-Hub-Signature-256", "sha256=HMAC of the body under the GitHub secret",
                    required=True),
        ],
        "requestBody": {"required": True,
                        "content": {"application/json": {"schema": {"type": "object"}}}},
        "responses": {"202": _ok("recorded", "DeliveryRecorded"), **_errors(
            e400="no X-GitHub-Delivery, or a body that is not JSON",
            e401="the signature does not verify", e413="body over 25 MiB",
            e422="a payload field cronduit reads is missing or of the wrong type",
            e503=_UNAVAILABLE)},
    }},
    "/v1/jobs/{job}/run": {"post": {
        "summary": "Run a job now, as cronduit job run does",
        "security": [{"bearer": []}],
        "parameters": [
            _path("job", "the job's name"),
            {"name": "queue", "in": "query", "required": False, "schema": {"type": "boolean"},
             "description": "wait behind a run going or a manual run pending"},
        ],
        "requestBody": {"required": False,
                        "content": {"application/json": {"schema": _ref("RunRequest")}}},
        "responses": {"201": _ok("accepted: started, or waiting (behind the run going with "
                                 "queue, or in a dry run until a normal start, with a note)",
                                 "RunStarted"), **_errors(
            e401="no valid API token", e404="no such job",
            e409="the job has a run going or a manual run pending",
            e422="an input breaks its declared rule, an operator that is not one line of "
                 "printable text (control characters, too long), or an unknown key",
            e503=_UNAVAILABLE)},
    }},
    "/v1/jobs/{job}/pause": {"post": {
        "summary": "Pause a job, as cronduit job pause does",
        "description": "Its timers run nothing (their slots are recorded missed, reason "
                       "paused), its other triggers are recorded as skipped runs, manual "
                       "runs are refused. until: a duration from now (2h) or an ISO 8601 "
                       "instant; the pause then ends by itself.",
        "security": [{"bearer": []}],
        "parameters": [_path("job", "the job's name")],
        "requestBody": {"required": True,
                        "content": {"application/json": {"schema": _ref("PauseRequest")}}},
        "responses": {"200": _ok("paused", "PauseRecord"), **_errors(
            e401="no valid API token", e404="no such job",
            e409="the job is paused already (the answer names who, when and why)",
            e422="a missing or blank reason, control characters or a line break in the "
                 "reason or the operator, either too long, an until that is not in the "
                 "future, or an unknown key", e503=_UNAVAILABLE)},
    }},
    "/v1/jobs/{job}/resume": {"post": {
        "summary": "Resume a job, as cronduit job resume does (missed slots are not made up)",
        "security": [{"bearer": []}],
        "parameters": [_path("job", "the job's name")],
        "requestBody": {"required": False,
                        "content": {"application/json": {"schema": _ref("ResumeRequest")}}},
        "responses": {"200": _ok("resumed: the pause that ended", "PauseRecord"), **_errors(
            e401="no valid API token", e404="no such job", e409="the job is not paused",
            e422="an operator with control characters or a line break, or too long, or an "
                 "unknown key",
            e503=_UNAVAILABLE)},
    }},
    "/v1/executions/{execution}/resume": {"post": {
        "summary": "Resume a failed execution where it failed, as cronduit execution resume "
                   "does; 202 once the resume is durable",
        "security": [{"bearer": []}],
        "parameters": [_path("execution", "the execution's id")],
        "requestBody": {"required": False, "content": {
            "application/json": {"schema": _ref("ExecutionRequest")}}},
        "responses": {"202": _ok("accepted: a new activation starts under the job's overlap "
                                 "policy", "ResumeAccepted"), **_errors(
            e401="no valid API token", e404="no such execution",
            e409="it cannot be resumed: running, succeeded, abandoned, expired, 100 "
                 "activations, or the job's steps changed (the answer says which)",
            e422="an operator that is not one line of printable text, or an unknown key",
            e503=_UNAVAILABLE)},
    }},
    "/v1/executions/{execution}/abandon": {"post": {
        "summary": "Abandon a failed execution, as cronduit execution abandon does",
        "security": [{"bearer": []}],
        "parameters": [_path("execution", "the execution's id")],
        "requestBody": {"required": False, "content": {
            "application/json": {"schema": _ref("ExecutionRequest")}}},
        "responses": {"200": _ok("abandoned: the execution as it is now", "ExecutionDetail"),
                      **_errors(e401="no valid API token", e404="no such execution",
                                e409="it is running, succeeded, or was abandoned already",
                                e422="an operator that is not one line of printable text, or "
                                     "an unknown key", e503=_UNAVAILABLE)},
    }},
}


def document(reads: dict[str, Any]) -> dict[str, Any]:
    """The whole OpenAPI 3.1 document: these paths, and those of ``reads`` (the read
    routes' generated document), with the schemas of both."""
    _, schemas = models_json_schema(
        [(model, "serialization") for model in
         (Accepted, DeliveryRecorded, Health, RunStarted, PauseRecord, ExecutionDetail,
          ResumeAccepted)]
        + [(model, "validation") for model in (RunRequest, PauseRequest, ResumeRequest,
                                                ExecutionRequest)],
        ref_template="#/components/schemas/{model}")
    return {
        "openapi": "3.1.0",
        "info": {"title": "cronduit", "version": "1",
                 "description": "Webhooks, GitHub deliveries, run-now, pause and resume, "
                                "durable executions, and the reads of jobs, runs, logs and "
                                "the audit log (docs/http.md)."},
        "paths": {**PATHS, **reads.get("paths", {})},
        "components": {
            "schemas": {**reads.get("components", {}).get("schemas", {}),
                        **schemas.get("$defs", {})},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }
