"""The read routes under ``/v1``: jobs, their slot ledgers, runs, a run's log, the audit log
and durable executions, on FastAPI.

FastAPI serves the reads only, mounted behind the Starlette routes of :mod:`.app`: a read
costs FastAPI's per-request machinery, a webhook does not (it is matched first). What it
gives in return is the OpenAPI document of these routes, generated from their signatures and
:mod:`.read_models`, with every status code each one answers (``responses=``).

Every read runs in one reading transaction on the API's own store
(:attr:`~cronduit.http.gateway.Gateway.read`), and says what the CLI says of the same thing
(:mod:`cronduit.intake.reports`). Reads are open on a loopback listener and need the API
token on any other (:func:`~cronduit.http.auth.authorize_read`). Errors are
``{"detail": "..."}`` everywhere, FastAPI's own validation errors included (422, naming the
field).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.security import HTTPBearer
from starlette.routing import Match, Mount
from starlette.types import Scope

from cronduit import intake
from cronduit.core.enums import Outcome, TriggerKind
from cronduit.core.limits import MAX_LISTED, instant_problem
from cronduit.core.status import daemon_state, timers_expected
from cronduit.core.text import clean
from cronduit.http.auth import authorize_read
from cronduit.http.cursors import (
    decode_cursor,
    decode_job_cursor,
    encode_cursor,
    encode_job_cursor,
    next_place,
)
from cronduit.http.gateway import Gateway
from cronduit.http.log_follow import follow_log, log_text
from cronduit.http.log_relay import RELAYED
from cronduit.http.models import ExecutionDetail, ExecutionList
from cronduit.http.read_models import (
    AuditList,
    ErrorBody,
    JobFacts,
    JobList,
    RunPage,
    RunRecord,
    SlotList,
)
from cronduit.ports import Run, RunFilter, Transaction

MAX_PAGE = 500
"""The most runs one page holds (each is a run record: its triggers, steps, notifications)."""
MAX_JOBS_PAGE = 1000
"""The most jobs one page of ``/v1/jobs`` holds: a page of 1,000 is read and judged in a
few tens of milliseconds; every job at once (10,000) took seconds and megabytes."""
_BEARER = HTTPBearer(scheme_name="bearer", auto_error=False,
                     description="the API token; reads need it off loopback only")
"""Names the token in the document; :func:`~cronduit.http.auth.authorize_read` checks it."""
_UNAVAILABLE = "the state store cannot be read now (Retry-After says when to try again)"
_SSE_EVENT = {
    "type": "object", "required": ["data"],
    "properties": {"event": {"enum": ["message", "end"]}, "data": {"type": "string"}},
    "description": "one event of the stream: a line of the log (event message), or, last, "
                   "the end (event end, its data the JSON {run, outcome, reason})"}
"""An event of a followed log, as a Server-Sent Events client reads it."""
_PATH = "a path parameter that cannot be read (the detail names it)"
_CLOSED = ("the listener is not loopback and the request has no valid API token "
           "(Authorization: Bearer)")


def _errors(**codes: str) -> dict[int | str, dict[str, Any]]:
    """The error answers of a route, each ``{"detail": ...}``, with what each code means;
    every route may answer 401 (not on loopback) and 503 (the store away)."""
    given = {"e401": _CLOSED, **codes, "e503": _UNAVAILABLE}
    return {int(code.removeprefix("e")): {"model": ErrorBody, "description": text}
            for code, text in given.items()}


async def _refused(_: Request, error: Exception) -> Response:
    assert isinstance(error, intake.RequestRefused)
    wait = {"Retry-After": str(error.retry_after)} if error.retry_after is not None else None
    return JSONResponse({"detail": str(error)}, status_code=error.status, headers=wait)


async def _invalid(_: Request, error: Exception) -> Response:
    """FastAPI's validation errors in the one error shape: each field and its rule."""
    assert isinstance(error, RequestValidationError)
    problems = "; ".join(
        f"{clean('.'.join(str(part) for part in problem['loc'][1:]), 100) or 'request'}: "
        f"{problem['msg']}" for problem in error.errors())
    return JSONResponse({"detail": problems}, status_code=422)


def _instant(value: datetime | None, name: str) -> datetime | None:
    """An instant of a query, aware (UTC when it names no offset), within cronduit's range."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    problem = instant_problem(value)
    if problem is not None:
        raise intake.RequestRefused(422, f"{name}: {problem}")
    return value


class ReadMount(Mount):
    """The read routes' mount, after the Starlette routes: it takes a request only when one
    of its routes serves the path, so a write route asked with another method still answers
    405, and a path nobody serves the Starlette app's 404."""

    def __init__(self, api: FastAPI) -> None:
        super().__init__("", app=api)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is Match.FULL and not any(
                route.matches(scope)[0] is not Match.NONE for route in self.routes):
            return Match.NONE, {}
        return match, child


def read_api(gateway: Gateway) -> FastAPI:
    """The read routes over one gateway, as an ASGI app to mount."""
    def allowed(request: Request, _: Annotated[Any, Depends(_BEARER)]) -> None:
        authorize_read(gateway, request.headers.get("authorization"))

    api = FastAPI(openapi_url=None, docs_url=None, redoc_url=None,
                  dependencies=[Depends(allowed)],
                  exception_handlers={intake.RequestRefused: _refused,
                                      RequestValidationError: _invalid})
    _job_routes(api, gateway)
    _run_routes(api, gateway)
    _other_routes(api, gateway)
    return api


def _job_routes(api: FastAPI, gateway: Gateway) -> None:
    # Each job's place in the config's order, the order pages of jobs go in.
    in_order = intake.reports.per_config(
        lambda config: {name: place for place, name in enumerate(config.jobs)})

    def expected() -> bool:
        return timers_expected(daemon_state(True, not gateway.dispatching()))

    @api.get("/v1/jobs", response_model=JobList,
             responses=_errors(e422="a limit or cursor outside its rule"),
             summary="Jobs in config order, a page at a time: timing, next slots, timer, "
                     "pause, last outcome, divergence; healthy: whether any job diverges")
    async def jobs(limit: Annotated[int, Query(ge=1, le=MAX_JOBS_PAGE)] = 100,
                   cursor: str | None = None) -> JobList:
        now, config, timers = gateway.clock.now(), gateway.config(), expected()
        places = in_order(config)
        start = 0 if cursor is None else next_place(places, decode_job_cursor(cursor))
        names = list(places)
        shown = names[start:start + limit]

        def read(tx: Transaction) -> JobList:
            found = [JobFacts.model_validate(intake.job_facts(status, now)) for status
                     in intake.reports.statuses_of(tx, config, shown, now, timers)]
            healthy = not any(job.divergences for job in found) and not (
                intake.reports.diverging_jobs(tx, config, names, now, timers))
            more = start + limit < len(names)
            return JobList(healthy=healthy, jobs=found, next_cursor=encode_job_cursor(
                shown[-1], start + len(shown) - 1) if more else None)

        return await gateway.read(read)

    @api.get("/v1/jobs/{job}", response_model=JobFacts,
             responses=_errors(e404="no such job", e422=_PATH),
             summary="One job, as cronduit status --json gives it")
    async def job(job: str) -> JobFacts:
        now, config, timers = gateway.clock.now(), gateway.config(), expected()
        name = _configured(gateway, job)

        def read(tx: Transaction) -> JobFacts:
            [status] = intake.job_statuses(tx, config, now, timers, only=name)
            return JobFacts.model_validate(intake.job_facts(status, now))

        return await gateway.read(read)

    @api.get("/v1/jobs/{job}/slots", response_model=SlotList,
             responses=_errors(e404="no such job",
                               e422="from or to that is not an instant in cronduit's range"),
             summary="The job's slot ledger, oldest first: each slot's fate and why")
    async def slots(job: str,
                    start: Annotated[datetime | None, Query(alias="from")] = None,
                    to: datetime | None = None) -> SlotList:
        name = _configured(gateway, job)
        first, last = _instant(start, "from"), _instant(to, "to")

        def read(tx: Transaction) -> SlotList:
            return SlotList.model_validate({"job": name, "slots": [
                intake.reports.slot_facts(intake.reports.slot_view(tx, record))
                for record in tx.slots(name, first, last)]})

        return await gateway.read(read)


def _configured(gateway: Gateway, name: str) -> str:
    if name not in gateway.config().jobs:
        raise HTTPException(404, f"no job named {clean(name, 80)!r}")
    return name


def _run_routes(api: FastAPI, gateway: Gateway) -> None:
    def record(tx: Transaction, run: Run) -> RunRecord:
        return RunRecord.model_validate(intake.run_record(tx, run, gateway.run_folder(run.id)))

    @api.get("/v1/runs", response_model=RunPage,
             responses=_errors(e422="a filter, limit or cursor outside its rule"),
             summary="Runs newest first, filtered; keyset pages (next_cursor)")
    async def runs(job: str | None = None, outcome: Outcome | None = None,
                   trigger: TriggerKind | None = None, since: datetime | None = None,
                   until: datetime | None = None,
                   limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20,
                   cursor: str | None = None) -> RunPage:
        where = RunFilter(job=job, outcome=None if outcome is None else str(outcome),
                          kind=None if trigger is None else str(trigger),
                          since=_instant(since, "since"), until=_instant(until, "until"))
        after = None if cursor is None else decode_cursor(cursor)

        def read(tx: Transaction) -> RunPage:
            if after is not None and tx.get_run(after) is None:
                raise intake.RequestRefused(422, "cursor: not one this API gave")
            found = tx.find_runs(where, after, limit)
            more = len(found) == limit and bool(tx.find_runs(where, found[-1].id, 1))
            return RunPage(runs=[record(tx, run) for run in found],
                           next_cursor=encode_cursor(found[-1].id) if more else None)

        return await gateway.read(read)

    @api.get("/v1/runs/{run}", response_model=RunRecord,
             responses=_errors(e404="no such run", e422=_PATH),
             summary="One run's record: SPEC §5's, with its triggers, steps, notifications")
    async def run(run: str) -> RunRecord:
        def read(tx: Transaction) -> RunRecord:
            return record(tx, _known_run(tx, run))

        return await gateway.read(read)

    @api.get("/v1/runs/{run}/log", response_class=Response, responses={
        200: {"description": "the log as text; with follow=1, Server-Sent Events (one per "
                             "line, then an end event) until the run ends",
              "content": {"text/plain": {"schema": {"type": "string"}},
                          "text/event-stream": {"schema": _SSE_EVENT}}},
        **_errors(e404="no such run, no such attempt, or no log (skipped, pruned, never "
                       "written on this host)",
                  e422="an attempt that is not a whole number from 1, or a follow that is "
                       "not a boolean")},
        summary="A run's log (stdout and stderr); follow=1 streams it until the run ends")
    async def run_log(request: Request, run: str,
                      attempt: Annotated[int | None, Query(ge=1)] = None,
                      follow: bool = False) -> Response:
        found = await gateway.read(lambda tx: _known_run(tx, run))
        if attempt is not None and attempt > max(found.attempts, 1):
            raise HTTPException(404, f"run {found.id} has {found.attempts} attempt(s), "
                                     f"not {attempt}")
        if follow:
            events: AsyncIterator[str] = follow_log(gateway, found, attempt,
                                                    relayed=RELAYED in request.headers)
            return StreamingResponse(events, media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache"})
        text = await log_text(gateway, found, attempt)
        return Response(text, media_type="text/plain; charset=utf-8")


def _known_run(tx: Transaction, run_id: str) -> Run:
    found = tx.get_run(run_id)
    if found is None:
        raise intake.RequestRefused(404, f"no run {clean(run_id, 80)}")
    return found


def _other_routes(api: FastAPI, gateway: Gateway) -> None:
    @api.get("/v1/audit", response_model=AuditList,
             responses=_errors(e422=f"a limit that is not a whole number from 1 to {MAX_PAGE}"),
             summary="Who paused, resumed, ran by hand or applied what; newest first")
    async def audit(limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50) -> AuditList:
        def read(tx: Transaction) -> AuditList:
            return AuditList.model_validate(
                {"entries": [intake.reports.audit_facts(entry) for entry in tx.audit(limit)]})

        return await gateway.read(read)

    @api.get("/v1/executions", response_model=ExecutionList,
             responses=_errors(e422="a limit that is not a whole number in its bounds"),
             summary="The newest durable executions, as cronduit execution list gives them")
    async def executions(job: str | None = None,
                         limit: Annotated[int, Query(ge=1, le=MAX_LISTED)] = 20
                         ) -> ExecutionList:
        def read(tx: Transaction) -> ExecutionList:
            return ExecutionList.model_validate({"executions": [
                intake.execution_summary(x, tx.execution_steps(x.id))
                for x in tx.executions(job, limit)]})

        return await gateway.read(read)

    @api.get("/v1/executions/{execution}", response_model=ExecutionDetail,
             responses=_errors(e404="no such execution", e422=_PATH),
             summary="One execution: inputs, steps, attempts, outputs, whether it can resume")
    async def execution(execution: str) -> ExecutionDetail:
        now, config = gateway.clock.now(), gateway.config()

        def read(tx: Transaction) -> ExecutionDetail:
            return ExecutionDetail.model_validate(intake.execution_detail(
                tx, config, intake.known_execution(tx, execution), now))

        return await gateway.read(read)

