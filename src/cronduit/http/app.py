"""The HTTP routes. Each checks what it can before writing (who asks, which job, the body,
the inputs), hands one write to the acceptor, and answers only once that write is durable.

Status codes follow SPEC §4: a job webhook answers 404 alike for an unknown job, a job
without ``webhook: true`` and a wrong token, so a caller cannot probe for job names; 413
past the body limit; 400 for JSON that cannot be read (not JSON where it says it is, or
nested deeper than :data:`~cronduit.core.json_depth.MAX_JSON_DEPTH`); 422 for inputs that
break a declared rule; 202 once accepted. Run-now answers 401 without a valid API token,
404 for an unknown job, 409 when refused, 422 for a body it cannot take (an operator that
breaks the rule of :func:`cronduit.core.text.check_line` included), and 201 with the run
(in a dry run: accepted and waiting, with a note saying so).

The app is plain Starlette, not FastAPI: FastAPI's per-request machinery (dependency
solving, its middleware stack) cost about 130 µs a request here, more than everything else
a webhook does on the event loop, and the webhook throughput target needs that time. The
reads, where that cost does not matter, are FastAPI's (:mod:`cronduit.http.read_routes`),
mounted after these routes, so a webhook never meets it. ``/openapi.json`` is one document:
these routes' table (:mod:`cronduit.http.openapi`) merged with what FastAPI generates for
the reads.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4 as METRICS_TYPE
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from cronduit import intake
from cronduit.core.config.model import Job
from cronduit.core.github import (
    CodeEvent,
    DeliveryError,
    jobs_awaiting_branch,
    matching_jobs,
    read_delivery,
    with_verified_branch,
)
from cronduit.core.json_depth import JsonTooDeep, check_json_depth, loads
from cronduit.core.matching import OnRule
from cronduit.core.signing import github_signature_valid, token_matches
from cronduit.core.text import clean
from cronduit.core.timespec import format_utc
from cronduit.http.ancestry import head_in_branch
from cronduit.http.auth import authorize, authorize_read
from cronduit.http.bodies import GITHUB_LIMIT, WEBHOOK_LIMIT, read_limited
from cronduit.http.dashboard import dashboard_routes
from cronduit.http.gateway import Gateway
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
from cronduit.http.openapi import document
from cronduit.http.read_routes import ReadMount, read_api
from cronduit.intake import pausing as control
from cronduit.ports import Pause, Transaction

RUN_ID_WAIT = 5.0
"""Seconds run-now waits for the engine to start the run, to answer with its id."""

API_OPERATOR = "api"
"""The operator recorded for an API request whose body names none."""
_NOT_FOUND = "no such webhook"
DRY_RUN_NOTE = ("the daemon runs in dry run: the run was accepted and waits; it starts when "
                "the daemon next starts normally")


def create_app(gateway: Gateway) -> Starlette:
    """The app, bound to one daemon's gateway."""
    routes = _Routes(gateway)
    reads = read_api(gateway)
    openapi = json.dumps(document(reads.openapi())).encode()
    return Starlette(routes=[
        Route("/healthz", routes.healthz, methods=["GET"]),
        Route("/metrics", routes.metrics, methods=["GET"]),
        Route("/hooks/{job}/{token}", routes.webhook, methods=["POST"]),
        Route("/github", routes.github, methods=["POST"]),
        Route("/v1/jobs/{job}/run", routes.run_now, methods=["POST"]),
        Route("/v1/jobs/{job}/pause", routes.pause, methods=["POST"]),
        Route("/v1/jobs/{job}/resume", routes.resume, methods=["POST"]),
        Route("/v1/executions/{execution}/resume", routes.resume_execution, methods=["POST"]),
        Route("/v1/executions/{execution}/abandon", routes.abandon_execution,
              methods=["POST"]),
        Route("/openapi.json", lambda _: Response(openapi, media_type="application/json"),
              methods=["GET"]),
        *dashboard_routes(gateway),  # HTML pages, left out of the OpenAPI document
        ReadMount(reads),  # last: the reads, behind every route above
    ], exception_handlers={
        intake.RequestRefused: _refused,
        HTTPException: _http_error,
    })


async def _refused(_: Request, error: Exception) -> Response:
    assert isinstance(error, intake.RequestRefused)
    detail = str(error) + (" (with ?queue=1)" if error.queueable else "")
    wait = {"Retry-After": str(error.retry_after)} if error.retry_after is not None else None
    return JSONResponse({"detail": detail}, status_code=error.status, headers=wait)


async def _http_error(_: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    return JSONResponse({"detail": error.detail}, status_code=error.status_code,
                        headers=error.headers)


def _answer(model: BaseModel, status: int) -> Response:
    return Response(model.model_dump_json(), status_code=status, media_type="application/json")


class _Routes:
    """The endpoints, over one gateway."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def healthz(self, _: Request) -> Response:
        """Whether the daemon answers, and whether it dispatches (not a dry run)."""
        gateway = self.gateway
        return _answer(Health(status="ok", dry_run=not gateway.dispatching(),
                              jobs=len(gateway.config().jobs)), 200)

    def metrics(self, request: Request) -> Response:
        """The daemon's metrics in the Prometheus text format: a read, so open on loopback
        and behind the token elsewhere (SPEC §9). A plain function, so Starlette renders it
        on a worker thread: the text of thousands of jobs never holds up the event loop's
        webhooks."""
        authorize_read(self.gateway, request.headers.get("authorization"))
        return Response(self.gateway.metrics(), media_type=METRICS_TYPE)

    async def webhook(self, request: Request) -> Response:
        """Accept a trigger for a job with ``webhook: true``; 202 once it is durable."""
        gateway = self.gateway
        target = _webhook_job(gateway, request.path_params["job"], request.path_params["token"])
        body = await read_limited(request, WEBHOOK_LIMIT)
        inputs = intake.check_inputs(target, _body_inputs(body, request))
        headers = request.headers
        key = headers.get("idempotency-key") or headers.get("x-request-id")
        delivery_id = intake.webhook_delivery_id(target.name, key)
        now = gateway.clock.now()

        def accept(tx: Transaction) -> intake.Accepted:
            return intake.accept_webhook(tx, target, delivery_id, body, inputs, now)

        accepted = await gateway.acceptor.submit(accept)
        return _answer(Accepted(delivery_id=delivery_id, event=accepted.event.seq,
                                duplicate=not accepted.created), 202)

    async def github(self, request: Request) -> Response:
        """Record a GitHub delivery once per ``X-GitHub-Delivery`` and derive one trigger per
        matching job, in one transaction; 202 once durable."""
        gateway = self.gateway
        body = await read_limited(request, GITHUB_LIMIT)
        headers = request.headers
        settings = gateway.config().settings
        secret = gateway.secret(settings.github_secret) if settings.github_secret else None
        if secret is None or not github_signature_valid(secret, body,
                                                        headers.get("x-hub-signature-256")):
            raise HTTPException(401, "X-Hub-Signature-256: does not verify with "
                                     "settings.github_secret")
        delivery_id = intake.github_delivery_id(headers.get("x-github-delivery"))
        try:
            event = read_delivery(headers.get("x-github-event"), loads(body, "body"))
        except DeliveryError as error:
            raise intake.RequestRefused(422, str(error)) from None
        except JsonTooDeep as error:
            raise intake.RequestRefused(400, str(error)) from None
        except ValueError:
            raise intake.RequestRefused(400, "body: not valid JSON") from None
        rules = _rules(gateway)
        event = await _verify_branch(gateway, event, rules)
        jobs = matching_jobs(event, rules)
        now = gateway.clock.now()

        def accept(tx: Transaction) -> intake.DeliveryAccepted:
            return intake.accept_code_event(tx, delivery_id, event, jobs, now)

        accepted = await gateway.acceptor.submit(accept)
        return _answer(DeliveryRecorded(
            delivery_id=delivery_id, label=event.label, duplicate=not accepted.created,
            triggered=[trigger.job for trigger in accepted.triggers]), 202)

    async def run_now(self, request: Request) -> Response:
        """Start a manual run, as ``cronduit job run`` does; refused (409) while the job has a
        run going or a manual run pending, unless ``?queue=1``."""
        gateway = self.gateway
        authorize(gateway, request.headers.get("authorization"))
        name = request.path_params["job"]
        target = gateway.config().jobs.get(name)
        if target is None:
            raise HTTPException(404, f"no job named {name!r}")
        queue = _flag(request.query_params.get("queue"), "queue")
        asked = _run_request(await read_limited(request, WEBHOOK_LIMIT))
        inputs = intake.check_inputs(target, asked.inputs)
        operator = intake.checked_operator(_operator(asked.operator))  # before any write
        now = gateway.clock.now()

        def accept(tx: Transaction) -> intake.Accepted:
            return intake.accept_manual(tx, target, inputs, queue=queue, operator=operator,
                                        now=now)

        accepted = await gateway.acceptor.submit(accept)
        delivery_id = accepted.event.delivery_id
        if not gateway.dispatching():  # a dry run accepts and holds it (SPEC §3)
            return _answer(RunStarted(run_id=None, delivery_id=delivery_id, state="waiting",
                                      note=DRY_RUN_NOTE), 201)
        run_id = await gateway.run_of(delivery_id, RUN_ID_WAIT)
        return _answer(RunStarted(run_id=run_id, delivery_id=delivery_id,
                                  state="started" if run_id is not None else "waiting"), 201)

    async def pause(self, request: Request) -> Response:
        """Pause a job, as ``cronduit job pause`` does; 409 when it is paused already."""
        gateway = self.gateway
        authorize(gateway, request.headers.get("authorization"))
        name = _configured(gateway, request.path_params["job"])
        asked = _body(PauseRequest, await read_limited(request, WEBHOOK_LIMIT), empty=False)
        now = gateway.clock.now()

        def pause(tx: Transaction) -> Pause:
            return control.pause(tx, name, asked.reason, _operator(asked.operator), asked.until,
                                 now)

        return _answer(_pause_record(await gateway.acceptor.submit(pause)), 200)

    async def resume(self, request: Request) -> Response:
        """Resume a job, as ``cronduit job resume`` does; 409 when it is not paused."""
        gateway = self.gateway
        authorize(gateway, request.headers.get("authorization"))
        name = _configured(gateway, request.path_params["job"])
        asked = _body(ResumeRequest, await read_limited(request, WEBHOOK_LIMIT), empty=True)
        now = gateway.clock.now()

        def resume(tx: Transaction) -> Pause:
            return control.resume(tx, name, _operator(asked.operator), now)

        return _answer(_pause_record(await gateway.acceptor.submit(resume)), 200)

    async def resume_execution(self, request: Request) -> Response:
        """Resume a failed execution, as ``cronduit execution resume`` does: 202 once the
        resume is durable; 409 with the reason when it cannot be resumed."""
        gateway = self.gateway
        wanted, operator, now = await _execution_request(gateway, request)

        def accept(tx: Transaction) -> intake.Accepted:
            return intake.accept_resume(tx, gateway.config(), wanted, operator=operator,
                                        now=now)

        accepted = await gateway.acceptor.submit(accept)
        return _answer(ResumeAccepted(execution=wanted,
                                      delivery_id=accepted.event.delivery_id), 202)

    async def abandon_execution(self, request: Request) -> Response:
        """Abandon a failed execution, as ``cronduit execution abandon`` does; 409 while it
        runs, or when it succeeded or was abandoned already."""
        gateway = self.gateway
        wanted, operator, now = await _execution_request(gateway, request)

        def abandon(tx: Transaction) -> dict[str, object]:
            intake.abandon(tx, wanted, operator=operator, now=now)
            return intake.execution_detail(tx, gateway.config(),
                                           intake.known_execution(tx, wanted), now)

        return _answer(ExecutionDetail.model_validate(await gateway.acceptor.submit(abandon)),
                       200)


async def _execution_request(gateway: Gateway, request: Request
                             ) -> tuple[str, str | None, datetime]:
    """An execution's resume or abandon: authorized, its body read; (id, operator, now)."""
    authorize(gateway, request.headers.get("authorization"))
    asked = _body(ExecutionRequest, await read_limited(request, WEBHOOK_LIMIT), empty=True)
    operator = intake.checked_operator(_operator(asked.operator))
    return request.path_params["execution"], operator, gateway.clock.now()


def _operator(given: str | None) -> str:
    """Who asks: the body's ``operator`` (held to the rule of every operator field where it
    is recorded), else :data:`API_OPERATOR`."""
    return API_OPERATOR if given is None else given


def _configured(gateway: Gateway, name: str) -> str:
    if name not in gateway.config().jobs:
        raise HTTPException(404, f"no job named {name!r}")
    return name


def _pause_record(pause: Pause) -> PauseRecord:
    def text(instant: datetime | None) -> str | None:
        return None if instant is None else format_utc(instant)

    return PauseRecord(job=pause.job, reason=pause.reason, operator=pause.operator,
                       paused_at=format_utc(pause.paused_at), until=text(pause.until),
                       resumed_at=text(pause.resumed_at), resumed_by=pause.resumed_by)


def _webhook_job(gateway: Gateway, name: str, token: str) -> Job:
    """The job a webhook URL names, or the one 404 every wrong URL gets."""
    config = gateway.config()
    job = config.jobs.get(name)
    secret_name = config.settings.webhook_secret
    secret = gateway.secret(secret_name) if secret_name else None
    # The token is compared even for a job that cannot take webhooks, so the answer takes
    # the same time whichever part of the URL is wrong.
    matches = secret is not None and token_matches(secret, name, token)
    if job is None or not job.webhook or not matches:
        raise HTTPException(404, _NOT_FOUND)
    return job


def _rules(gateway: Gateway) -> dict[str, OnRule]:
    return {name: job.on.rule for name, job in gateway.config().jobs.items()
            if job.on is not None and job.on.rule is not None}


async def _verify_branch(gateway: Gateway, event: CodeEvent, rules: dict[str, OnRule]
                         ) -> CodeEvent:
    """Confirm a check's head branch when some job filters on branches and would run on it;
    otherwise leave it unconfirmed (no branch), which is the safe side."""
    awaiting = jobs_awaiting_branch(event, rules)
    if not awaiting or event.branch_to_verify is None or event.head_sha is None:
        return with_verified_branch(event, None)
    settings = gateway.config().settings
    token = gateway.secret(settings.github_token) if settings.github_token else None
    verified = await head_in_branch(_clones(gateway, awaiting), event.branch_to_verify,
                                    event.head_sha, token=token,
                                    repository=event.repository or "")
    return with_verified_branch(event, verified)


def _clones(gateway: Gateway, jobs: list[str]) -> list[Path]:
    """The workspace clones of ``jobs``, each once (jobs of one repository share a clone):
    any waiting job's clone may confirm the branch, not only the first job's."""
    found = (gateway.workspace(name) for name in jobs)
    return list(dict.fromkeys(path for path in found if path is not None))


def _flag(value: str | None, name: str) -> bool:
    if value is None:
        return False
    lowered = value.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise intake.RequestRefused(422, f"{name}: must be 1 or 0 (true or false)")


def _body_inputs(body: bytes, request: Request) -> object:
    """The ``inputs`` of a JSON object body; none for any other body (a webhook's body is
    the caller's own, and reaches the run whatever it is)."""
    if not body.strip():
        return None
    declared_json = "json" in request.headers.get("content-type", "")
    try:
        parsed: Any = loads(body, "body")
    except JsonTooDeep as error:  # whatever its type says: its inputs could not be read
        raise intake.RequestRefused(400, str(error)) from None
    except ValueError:
        if declared_json:
            raise intake.RequestRefused(400, "body: declared JSON but is not valid JSON") from None
        return None
    return parsed.get("inputs") if isinstance(parsed, dict) else None


def _run_request(body: bytes) -> RunRequest:
    return _body(RunRequest, body, empty=True)


M = TypeVar("M", bound=BaseModel)


def _body(model: type[M], body: bytes, *, empty: bool) -> M:
    """The request body as ``model``; an empty body is the model's defaults when ``empty``
    allows it; 422 naming each problem otherwise."""
    if not body.strip() and empty:
        return model()
    try:
        # Measured as pydantic reads it (UTF-8), so its own nesting limit is never the one
        # that answers: the message names cronduit's.
        check_json_depth(body.decode("utf-8", "replace"), "body")
    except JsonTooDeep as error:
        raise intake.RequestRefused(422, str(error)) from None
    try:
        return model.model_validate_json(body)
    except ValidationError as error:
        problems = "; ".join(
            # a key of the body is an outside value: cleaned before it reaches the answer
            f"{clean('.'.join(str(part) for part in problem['loc']), 100) or 'body'}: "
            f"{problem['msg']}"
            for problem in error.errors(include_input=False)
        )
        raise intake.RequestRefused(422, problems) from None
