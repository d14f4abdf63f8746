"""The HTTP routes. Each checks what it can before writing (who asks, which job, the body,
the inputs), hands one write to the acceptor, and answers only once that write is durable.

Status codes follow SPEC §4: a job webhook answers 404 alike for an unknown job, a job
without ``webhook: true`` and a wrong token, so a caller cannot probe for job names; 413
past the body limit; 422 for inputs that break a declared rule; 202 once accepted. Run-now
answers 401 without a valid API token, 404 for an unknown job, 409 when refused, 503 in a
dry run and 201 with the run.
"""

from __future__ import annotations

import hmac
import json
from typing import Annotated, Any

from fastapi import FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

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
from cronduit.core.signing import github_signature_valid, token_matches
from cronduit.github_ancestry import head_in_branch
from cronduit.http.bodies import GITHUB_LIMIT, WEBHOOK_LIMIT, read_limited
from cronduit.http.gateway import Gateway
from cronduit.http.models import Accepted, DeliveryRecorded, Health, RunRequest, RunStarted
from cronduit.ports import Transaction

RUN_ID_WAIT = 5.0
"""Seconds run-now waits for the engine to start the run, to answer with its id."""

_NOT_FOUND = "no such webhook"


def create_app(gateway: Gateway) -> FastAPI:
    """The app, bound to one daemon's gateway."""
    app = FastAPI(title="cronduit", version="1", docs_url=None, redoc_url=None)

    @app.exception_handler(intake.RequestRefused)
    async def refused(_: Request, error: intake.RequestRefused) -> JSONResponse:
        return JSONResponse({"detail": str(error)}, status_code=error.status)

    @app.get("/healthz")
    async def healthz() -> Health:
        """Whether the daemon answers, and whether it dispatches (not a dry run)."""
        return Health(status="ok", dry_run=not gateway.dispatching(),
                      jobs=len(gateway.config().jobs))

    _add_webhook_routes(app, gateway)
    _add_github_routes(app, gateway)
    _add_api_routes(app, gateway)
    return app


def _add_webhook_routes(app: FastAPI, gateway: Gateway) -> None:
    @app.post("/hooks/{job}/{token}", status_code=202,
              responses={404: {"description": "no such webhook (unknown job, no "
                                              "`webhook: true`, or a wrong token)"},
                         413: {"description": "body over 1 MiB"},
                         422: {"description": "an input breaks its declared rule"}})
    async def webhook(job: str, token: str, request: Request,
                      idempotency_key: Annotated[str | None, Header()] = None,
                      x_request_id: Annotated[str | None, Header()] = None) -> Accepted:
        """Accept a trigger for a job with ``webhook: true``; 202 once it is durable. The
        whole body reaches the run in ``$CRONDUIT_TRIGGER_FILE``; a JSON object body may
        carry ``inputs``. ``Idempotency-Key`` (or ``X-Request-Id``) makes a retry the same
        trigger."""
        target = _webhook_job(gateway, job, token)
        body = await read_limited(request, WEBHOOK_LIMIT)
        inputs = intake.check_inputs(target, _body_inputs(body, request))
        delivery_id = intake.webhook_delivery_id(target.name, idempotency_key or x_request_id)
        now = gateway.clock.now()

        def accept(tx: Transaction) -> intake.Accepted:
            return intake.accept_webhook(tx, target, delivery_id, body, inputs, now)

        accepted = await gateway.acceptor.submit(accept)
        return Accepted(delivery_id=delivery_id, event=accepted.event.seq,
                        duplicate=not accepted.created)



def _add_github_routes(app: FastAPI, gateway: Gateway) -> None:
    @app.post("/github", status_code=202,
              responses={400: {"description": "no X-GitHub-Delivery, or a body that is not "
                                              "JSON"},
                         401: {"description": "X-Hub-Signature-256 does not verify"},
                         422: {"description": "a payload field cronduit reads is missing or "
                                              "of the wrong type"}})
    async def github(request: Request,
                     x_github_event: Annotated[str | None, Header()] = None,
                     x_github_delivery: Annotated[str | None, Header()] = None,
                     x_hub_signature_256: Annotated[str | None, Header()] = None,
                     ) -> DeliveryRecorded:
        """Record a GitHub delivery once per ``X-GitHub-Delivery`` and derive one trigger
        per matching job, in one transaction; 202 once durable."""
        body = await read_limited(request, GITHUB_LIMIT)
        settings = gateway.config().settings
        secret = gateway.secret(settings.github_secret) if settings.github_secret else None
        if secret is None or not github_signature_valid(secret, body, x_hub_signature_256):
            raise HTTPException(401, "X-Hub-Signature-256: does not verify with "
                                     "settings.github_secret")
        delivery_id = intake.github_delivery_id(x_github_delivery)
        try:
            event = read_delivery(x_github_event, json.loads(body))
        except DeliveryError as error:
            raise intake.RequestRefused(422, str(error)) from None
        except ValueError:
            raise intake.RequestRefused(400, "body: not valid JSON") from None
        event = await _verify_branch(gateway, event)
        rules = {name: job.on.rule for name, job in gateway.config().jobs.items()
                 if job.on is not None and job.on.rule is not None}
        jobs = matching_jobs(event, rules)
        now = gateway.clock.now()

        def accept(tx: Transaction) -> intake.DeliveryAccepted:
            return intake.accept_code_event(tx, delivery_id, event, jobs, now)

        accepted = await gateway.acceptor.submit(accept)
        return DeliveryRecorded(delivery_id=delivery_id, label=event.label,
                                duplicate=not accepted.created,
                                triggered=[trigger.job for trigger in accepted.triggers])



def _add_api_routes(app: FastAPI, gateway: Gateway) -> None:
    @app.post("/v1/jobs/{job}/run", status_code=201,
              responses={401: {"description": "no valid API token"},
                         404: {"description": "no such job"},
                         409: {"description": "the job is running or a manual run is pending"},
                         422: {"description": "an input breaks its declared rule"},
                         503: {"description": "the scheduler is not running (dry run)"}})
    async def run_now(job: str, request: Request,
                      authorization: Annotated[str | None, Header()] = None,
                      queue: Annotated[bool, Query(description="wait behind a run going or "
                                                               "a manual run pending")] = False,
                      ) -> RunStarted:
        """Start a manual run, as ``cronduit job run`` does. Refused (409) while the job has
        a run going or a manual run pending, unless ``?queue=1``."""
        _authorize(gateway, authorization)
        target = gateway.config().jobs.get(job)
        if target is None:
            raise HTTPException(404, f"no job named {job!r}")
        if not gateway.dispatching():
            raise HTTPException(503, "the scheduler is not running (dry run): nothing starts")
        asked = _run_request(await read_limited(request, WEBHOOK_LIMIT))
        inputs = intake.check_inputs(target, asked.inputs)
        operator = asked.operator or "api"
        now = gateway.clock.now()

        def accept(tx: Transaction) -> intake.Accepted:
            return intake.accept_manual(tx, target, inputs, queue=queue, operator=operator,
                                        now=now)

        accepted = await gateway.acceptor.submit(accept)
        delivery_id = accepted.event.delivery_id
        run_id = await gateway.run_of(delivery_id, RUN_ID_WAIT)
        return RunStarted(run_id=run_id, delivery_id=delivery_id,
                          state="started" if run_id is not None else "waiting")



def _webhook_job(gateway: Gateway, name: str, token: str) -> Job:
    """The job a webhook URL names, or the one 404 every wrong URL gets."""
    job = gateway.config().jobs.get(name)
    secret_name = gateway.config().settings.webhook_secret
    secret = gateway.secret(secret_name) if secret_name else None
    # The token is compared even for a job that cannot take webhooks, so the answer takes
    # the same time whichever part of the URL is wrong.
    matches = secret is not None and token_matches(secret, name, token)
    if job is None or not job.webhook or not matches:
        raise HTTPException(404, _NOT_FOUND)
    return job


async def _verify_branch(gateway: Gateway, event: CodeEvent) -> CodeEvent:
    """Confirm a check's head branch when some job filters on branches and would run on it;
    otherwise leave it unconfirmed (no branch), which is the safe side."""
    rules = {name: job.on.rule for name, job in gateway.config().jobs.items()
             if job.on is not None and job.on.rule is not None}
    awaiting = jobs_awaiting_branch(event, rules)
    if not awaiting or event.branch_to_verify is None or event.head_sha is None:
        return with_verified_branch(event, None)
    settings = gateway.config().settings
    token = gateway.secret(settings.github_token) if settings.github_token else None
    verified = await head_in_branch(gateway.workspace(awaiting[0]), event.branch_to_verify,
                                    event.head_sha, token=token,
                                    repository=event.repository or "")
    return with_verified_branch(event, verified)


def _authorize(gateway: Gateway, header: str | None) -> None:
    name = gateway.config().settings.api_token
    expected = gateway.secret(name) if name else None
    if expected is None:
        raise HTTPException(401, "the API is closed: settings.api_token names no secret "
                                 "that is set", headers={"WWW-Authenticate": "Bearer"})
    scheme, _, given = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(),
                                                             expected.encode()):
        raise HTTPException(401, "Authorization: expected Bearer <api token>",
                            headers={"WWW-Authenticate": "Bearer"})


def _body_inputs(body: bytes, request: Request) -> object:
    """The ``inputs`` of a JSON object body; none for any other body (a webhook's body is
    the caller's own, and reaches the run whatever it is)."""
    if not body.strip():
        return None
    declared_json = "json" in request.headers.get("content-type", "")
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        if declared_json:
            raise intake.RequestRefused(400, "body: declared JSON but is not valid JSON") from None
        return None
    return parsed.get("inputs") if isinstance(parsed, dict) else None


def _run_request(body: bytes) -> RunRequest:
    if not body.strip():
        return RunRequest()
    try:
        return RunRequest.model_validate_json(body)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in problem['loc']) or 'body'}: {problem['msg']}"
            for problem in error.errors(include_input=False)
        )
        raise intake.RequestRefused(422, problems) from None
