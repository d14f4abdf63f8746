"""The dashboard's pages and forms, served by the same Starlette app as the webhooks.

Plain Starlette routes (no FastAPI, no middleware): a webhook never meets any of this. Each
page is read in one reading transaction (:attr:`~cronduit.http.gateway.Gateway.read`) from
the facts the CLI and the JSON API give (:mod:`cronduit.intake.reports`), and rendered by
Jinja with autoescape, off the event loop. Each form writes through the intake call its API
route makes (run-now, pause, resume), with its checks and its audit entry, the operator
recorded as :data:`OPERATOR`.

Reads follow the API's rule: open on a loopback listener, else only for a logged-in browser
(303 to the login page). Writes need a session always (401), and pass the guards of
:mod:`.session` first (403).
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from jinja2 import Environment, FileSystemLoader
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from cronduit import intake
from cronduit.core.config.model import Job
from cronduit.core.enums import RunState, TriggerKind
from cronduit.core.status import daemon_state, timers_expected, upcoming_slots
from cronduit.core.timespec import format_utc
from cronduit.http.bodies import WEBHOOK_LIMIT, read_limited
from cronduit.http.dashboard import views
from cronduit.http.dashboard.session import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    THEME_COOKIE,
    Session,
    Sessions,
    cross_site,
    csrf_valid,
    new_nonce,
    secure_cookie,
)
from cronduit.http.gateway import Gateway
from cronduit.http.log_follow import follow_log, log_text
from cronduit.intake import pausing as control
from cronduit.intake import reports
from cronduit.ports import Pause, Run, RunFilter, SlotRecord, Transaction

HERE = Path(__file__).parent
OPERATOR = "dashboard"
"""Who the audit log says acted, for a write made from the dashboard."""
PAGE = 100
"""Jobs on one page of the home page: a page of 100 (2,000 runs in its strips) reads and
renders in tens of milliseconds whatever the size of the config; the filter narrows the
whole config, not one page."""
HISTORY = 50
"""Runs the job page lists."""
NEXT_SLOTS = 10
LEDGER = 50
"""Slots of the ledger the job page shows, newest first."""
AUDIT = 200
RUN_ID_WAIT = 5.0
"""Seconds run-now waits for the engine to start the run, to go to its page."""
THEMES = ("auto", "light", "dark")
FormData = dict[str, str]

_env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True,
                   trim_blocks=True, lstrip_blocks=True)
_env.filters["utc"] = format_utc
_env.filters["text"] = lambda value: value if isinstance(value, str) else json.dumps(value)


def dashboard_routes(gateway: Gateway) -> list[BaseRoute]:
    """The dashboard's routes over one daemon's gateway (one set of sessions each)."""
    pages = _Pages(gateway, Sessions())
    return [
        Route("/", pages.home, methods=["GET"]),
        Route("/jobs/{job}", pages.job, methods=["GET"]),
        Route("/jobs/{job}/run", pages.run_now, methods=["POST"]),
        Route("/jobs/{job}/pause", pages.pause, methods=["POST"]),
        Route("/jobs/{job}/resume", pages.resume, methods=["POST"]),
        Route("/runs/{run}", pages.run, methods=["GET"]),
        Route("/runs/{run}/log/stream", pages.log_stream, methods=["GET"]),
        Route("/audit", pages.audit, methods=["GET"]),
        Route("/login", pages.login_form, methods=["GET"]),
        Route("/login", pages.login, methods=["POST"]),
        Route("/logout", pages.logout, methods=["POST"]),
        Route("/theme", pages.theme, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]


class _Refused(Exception):
    """A request the dashboard answers with a page of its own (a status and why)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _safe_next(value: str | None) -> str:
    """Where a login goes on to: a path of this site only (never ``//other`` or a URL)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def _theme(request: Request) -> str:
    chosen = request.cookies.get(THEME_COOKIE, "auto")
    return chosen if chosen in THEMES else "auto"


class _Pages:
    """The handlers, over one gateway and its sessions."""

    def __init__(self, gateway: Gateway, sessions: Sessions) -> None:
        self.gateway = gateway
        self.sessions = sessions

    # -- who asks ---------------------------------------------------------------------

    def _api_token(self) -> str | None:
        name = self.gateway.config().settings.api_token
        return self.gateway.secret(name) if name else None

    def _session(self, request: Request) -> Session | None:
        return self.sessions.find(request.cookies.get(SESSION_COOKIE), self._api_token(),
                                  self.gateway.clock.now())

    def _reads_open(self) -> bool:
        return self.gateway.config().settings.reads_open

    def _login_redirect(self, request: Request) -> Response:
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?{urlencode({'next': path})}", status_code=303)

    async def _render(self, request: Request, template: str, session: Session | None,
                      status: int = 200, **values: Any) -> Response:
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        context = {"session": session, "csrf": session.csrf if session else "",
                   "theme": _theme(request), "here": path, "here_q": quote(path, safe=""),
                   "reads_open": self._reads_open(), **values}
        text = await asyncio.to_thread(_env.get_template(template).render, context)
        return HTMLResponse(text, status_code=status,
                            headers={"Cache-Control": "no-store",
                                     "X-Frame-Options": "DENY",
                                     "Content-Security-Policy": _CSP,
                                     "Referrer-Policy": "same-origin"})

    async def _page(self, request: Request,
                    render: Callable[[Session | None], Awaitable[Response]]) -> Response:
        """A read: open on loopback, else for a session only; a refusal as a page."""
        session = self._session(request)
        if session is None and not self._reads_open():
            return self._login_redirect(request)
        try:
            return await render(session)
        except (_Refused, intake.RequestRefused) as error:
            status = error.status
            return await self._render(request, "error.html.j2", session, status=status,
                                      message=str(error), status_code=status)

    async def _form(self, request: Request) -> tuple[Session, FormData] | Response:
        """A POST's form, once it passed the guards: not cross-site (403), a session (401),
        the session's CSRF token (403)."""
        why = cross_site(request)
        if why is not None:
            return await self._render(request, "error.html.j2", None, status=403,
                                      message=f"refused: a cross-site request ({why})",
                                      status_code=403)
        session = self._session(request)
        form = await _read_form(request)
        if session is None:
            return await self._render(request, "error.html.j2", None, status=401,
                                      message="log in to act: this needs a session",
                                      status_code=401)
        if not csrf_valid(session, form.get("csrf")):
            return await self._render(request, "error.html.j2", session, status=403,
                                      message="refused: the form's CSRF token is missing "
                                              "or not this session's; reload the page",
                                      status_code=403)
        return session, form

    def _job(self, name: str) -> Job:
        found = self.gateway.config().jobs.get(name)
        if found is None:
            raise _Refused(404, f"no job named {name[:80]!r}")
        return found

    def _expected(self) -> bool:
        return timers_expected(daemon_state(True, not self.gateway.dispatching()))

    # -- pages ------------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        query = request.query_params
        wanted = query.get("q", "")[:200]
        state = query.get("state", "all")
        state = state if state in views.STATES else "all"
        page = _whole(query.get("page"), 1)

        async def render(session: Session | None) -> Response:
            config, now, expected = self.gateway.config(), self.gateway.clock.now(), (
                self._expected())
            lowered = wanted.lower()
            names = [name for name in config.jobs if lowered in name.lower()] if wanted else (
                list(config.jobs))

            def read(tx: Transaction) -> tuple[list[views.JobRow], int]:
                chosen = names
                if state == "paused":
                    paused = {pause.job for pause in tx.pauses()}
                    chosen = [name for name in names if name in paused]
                if state == "failing":  # found by the store at once, none judged whole
                    chosen = reports.failing_jobs(tx, chosen)
                if state == "diverged":
                    chosen = reports.diverging_jobs(tx, config, chosen, now, expected)
                first = (page - 1) * PAGE
                shown = chosen[first:first + PAGE]
                marks = tx.run_marks(shown, views.STRIP)
                rows = [views.job_row(status, marks.get(status.job.name, []), now)
                        for status in reports.statuses_of(tx, config, shown, now, expected)]
                return rows, len(chosen)

            rows, total = await self.gateway.read(read)
            pages = max(1, -(-total // PAGE))

            def link(to: int) -> str:
                return "/?" + urlencode({"q": wanted, "state": state, "page": to})

            return await self._render(
                request, "home.html.j2", session, rows=rows, q=wanted, state=state,
                states=views.STATES, total=total, page=page, pages=pages,
                first=(page - 1) * PAGE + 1 if rows else 0,
                last=(page - 1) * PAGE + len(rows),
                prev_link=link(page - 1) if page > 1 else None,
                next_link=link(page + 1) if page < pages else None,
                configured=len(config.jobs), now=format_utc(now),
                dry_run=not self.gateway.dispatching())

        return await self._page(request, render)

    async def job(self, request: Request) -> Response:
        return await self._page(request, lambda session: self._job_page(
            request, request.path_params["job"], session))

    async def _job_page(self, request: Request, name: str, session: Session | None,
                        status: int = 200, error: str | None = None,
                        given: Mapping[str, str] | None = None,
                        pause_given: Mapping[str, str] | None = None) -> Response:
        job = self._job(name)
        query = request.query_params
        outcome = query.get("outcome", "")
        outcome = outcome if outcome in views.outcome_choices() else ""
        trigger = query.get("trigger", "")
        trigger = trigger if trigger in {str(kind) for kind in TriggerKind} else ""
        config, now, expected = self.gateway.config(), self.gateway.clock.now(), (
            self._expected())

        def read(tx: Transaction) -> dict[str, Any]:
            [judged] = reports.job_statuses(tx, config, now, expected, only=name)
            facts = reports.job_facts(judged, now)
            where = RunFilter(job=name, outcome=outcome or None, kind=trigger or None)
            return {"facts": facts,
                    "slots": [reports.slot_facts(reports.slot_view(tx, record))
                              for record in _recent_slots(tx, name, now)],
                    "history": [(run, views.run_class(run), reports.duration_s(run))
                                for run in tx.find_runs(where, None, HISTORY)]}

        found = await self.gateway.read(read)
        facts = found["facts"]
        paused = facts["paused"]
        return await self._render(
            request, "job.html.j2", session, status=status, job=job, facts=facts,
            banner=views.pause_banner(paused), paused=paused is not None,
            next_slots=[(format_utc(one.slot), one.name, format_utc(one.due))
                        for one in upcoming_slots(job, now, NEXT_SLOTS)],
            slots=found["slots"], history=found["history"],
            duration_text=views.duration_text, outcome=outcome, trigger=trigger,
            outcomes=views.outcome_choices(), triggers=[str(kind) for kind in TriggerKind],
            error=error, given=given or {}, pause_given=pause_given or {},
            notice=_notice(query.get("notice")), config=_config_summary(job),
            webhook=f"/hooks/{name}/<token>" if job.webhook else None)

    async def run(self, request: Request) -> Response:
        run_id = request.path_params["run"]

        async def render(session: Session | None) -> Response:
            def read(tx: Transaction) -> tuple[Run, dict[str, object], list[Any]]:
                found = tx.get_run(run_id)
                if found is None:
                    raise _Refused(404, f"no run {run_id[:80]}")
                record = reports.run_record(tx, found, self.gateway.run_folder(found.id))
                return found, record, tx.events_of_run(found.id)

            found, record, events = await self.gateway.read(read)
            try:
                log, log_note = await log_text(self.gateway, found, None), None
            except HTTPException as error:
                log, log_note = "", str(error.detail)
            going = found.state != RunState.ENDED
            return await self._render(
                request, "run.html.j2", session, run=found, record=record, events=events,
                outcome=found.outcome or "running", going=going, log=log, log_note=log_note,
                duration=views.duration_text(reports.duration_s(found)),
                run_class=views.run_class(found))

        return await self._page(request, render)

    async def log_stream(self, request: Request) -> Response:
        """The run's log as Server-Sent Events until it ends, for the run page's script:
        what ``GET /v1/runs/{id}/log?follow=1`` gives, behind the dashboard's read rule."""
        if self._session(request) is None and not self._reads_open():
            return PlainTextResponse("log in to read", status_code=401)
        run_id = request.path_params["run"]
        found = await self.gateway.read(lambda tx: tx.get_run(run_id))
        if found is None:
            return PlainTextResponse("no such run", status_code=404)
        return StreamingResponse(follow_log(self.gateway, found, None),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    async def audit(self, request: Request) -> Response:
        async def render(session: Session | None) -> Response:
            entries = await self.gateway.read(
                lambda tx: [reports.audit_facts(entry) for entry in tx.audit(AUDIT)])
            return await self._render(request, "audit.html.j2", session, entries=entries,
                                      shown=AUDIT)

        return await self._page(request, render)

    # -- writes -----------------------------------------------------------------------

    async def run_now(self, request: Request) -> Response:
        guarded = await self._form(request)
        if isinstance(guarded, Response):
            return guarded
        session, form = guarded
        name = request.path_params["job"]
        given = {key.removeprefix("input."): value for key, value in form.items()
                 if key.startswith("input.") and value != ""}
        try:
            target = self._job(name)
            inputs = intake.check_inputs(target, given)
            operator = intake.checked_operator(OPERATOR)
            now = self.gateway.clock.now()
            queue = form.get("queue") == "1"

            def accept(tx: Transaction) -> intake.Accepted:
                return intake.accept_manual(tx, target, inputs, queue=queue,
                                            operator=operator, now=now)

            accepted = await self.gateway.acceptor.submit(accept)
        except (_Refused, intake.RequestRefused) as error:
            return await self._refused_form(request, name, session, error, given=given)
        delivery_id = accepted.event.delivery_id
        run_id = None
        if self.gateway.dispatching():
            run_id = await self.gateway.run_of(delivery_id, RUN_ID_WAIT)
        if run_id is None:
            return RedirectResponse(f"/jobs/{quote(name)}?notice=waiting", status_code=303)
        return RedirectResponse(f"/runs/{quote(run_id)}", status_code=303)

    async def pause(self, request: Request) -> Response:
        guarded = await self._form(request)
        if isinstance(guarded, Response):
            return guarded
        session, form = guarded
        name = request.path_params["job"]
        reason, until = form.get("reason", ""), form.get("until", "").strip() or None
        now = self.gateway.clock.now()

        def pause(tx: Transaction) -> Pause:
            return control.pause(tx, name, reason, OPERATOR, until, now)

        return await self._write(request, name, session, pause, "paused",
                                 pause_given={"reason": reason, "until": until or ""})

    async def resume(self, request: Request) -> Response:
        guarded = await self._form(request)
        if isinstance(guarded, Response):
            return guarded
        session, _ = guarded
        name = request.path_params["job"]
        now = self.gateway.clock.now()

        def resume(tx: Transaction) -> Pause:
            return control.resume(tx, name, OPERATOR, now)

        return await self._write(request, name, session, resume, "resumed")

    async def _write(self, request: Request, name: str, session: Session,
                     work: Callable[[Transaction], Pause], notice: str,
                     pause_given: Mapping[str, str] | None = None) -> Response:
        try:
            self._job(name)
            await self.gateway.acceptor.submit(work)
        except (_Refused, intake.RequestRefused) as error:
            return await self._refused_form(request, name, session, error,
                                            pause_given=pause_given)
        return RedirectResponse(f"/jobs/{quote(name)}?notice={notice}", status_code=303)

    async def _refused_form(self, request: Request, name: str, session: Session,
                            error: _Refused | intake.RequestRefused,
                            given: Mapping[str, str] | None = None,
                            pause_given: Mapping[str, str] | None = None) -> Response:
        """The job page again, with why the form was refused, at the status the API gives."""
        message = str(error) + (" (tick queue to wait behind it)"
                                if getattr(error, "queueable", False) else "")
        if name not in self.gateway.config().jobs:
            return await self._render(request, "error.html.j2", session, status=error.status,
                                      message=message, status_code=error.status)
        return await self._job_page(request, name, session, status=error.status,
                                    error=message, given=given, pause_given=pause_given)

    # -- login, logout, theme -----------------------------------------------------------

    async def login_form(self, request: Request) -> Response:
        return await self._login_page(request, _safe_next(request.query_params.get("next")))

    async def _login_page(self, request: Request, next_path: str, status: int = 200,
                          error: str | None = None) -> Response:
        nonce = request.cookies.get(LOGIN_COOKIE) or new_nonce()
        response = await self._render(
            request, "login.html.j2", self._session(request), status=status, error=error,
            next_path=next_path, login_csrf=self.sessions.login_csrf(nonce),
            closed=self._api_token() is None)
        response.set_cookie(LOGIN_COOKIE, nonce, httponly=True, samesite="strict", path="/",
                            secure=secure_cookie(request))
        return response

    async def login(self, request: Request) -> Response:
        why = cross_site(request)
        if why is not None:
            return await self._render(request, "error.html.j2", None, status=403,
                                      message=f"refused: a cross-site request ({why})",
                                      status_code=403)
        form = await _read_form(request)
        next_path = _safe_next(form.get("next"))
        if not self.sessions.login_csrf_valid(request.cookies.get(LOGIN_COOKIE),
                                              form.get("csrf")):
            return await self._render(request, "error.html.j2", None, status=403,
                                      message="refused: the login form's CSRF token is "
                                              "missing or wrong; reload the login page",
                                      status_code=403)
        expected = self._api_token()
        if expected is None:
            return await self._login_page(
                request, next_path, status=401,
                error="login is closed: settings.api_token names no secret that is set")
        given = form.get("token", "")
        if not hmac.compare_digest(given.encode(), expected.encode()):
            return await self._login_page(request, next_path, status=401,
                                          error="wrong token: that is not the API token")
        session_id, _ = self.sessions.open(expected, self.gateway.clock.now())
        response = RedirectResponse(next_path, status_code=303)
        response.set_cookie(SESSION_COOKIE, session_id, httponly=True, samesite="strict",
                            path="/", secure=secure_cookie(request))
        response.delete_cookie(LOGIN_COOKIE, path="/")
        return response

    async def logout(self, request: Request) -> Response:
        guarded = await self._form(request)
        if isinstance(guarded, Response):
            return guarded
        self.sessions.close(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return response

    async def theme(self, request: Request) -> Response:
        """Set the theme cookie (``?set=light``; without it, the next of auto, light, dark)
        and go back: a link, so it works without a script."""
        chosen = request.query_params.get("set")
        if chosen not in THEMES:
            chosen = THEMES[(THEMES.index(_theme(request)) + 1) % len(THEMES)]
        response = RedirectResponse(_safe_next(request.query_params.get("next")),
                                    status_code=303)
        response.set_cookie(THEME_COOKIE, chosen, max_age=365 * 86400, samesite="strict",
                            path="/", secure=secure_cookie(request))
        return response


_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
"""Only this listener's own files: nothing from elsewhere, no inline script (htmx's own
indicator style is switched off by its meta config)."""


async def _read_form(request: Request) -> FormData:
    """A form POST's fields (``application/x-www-form-urlencoded``, what every form here
    sends), the last value of a repeated name winning; bounded like a webhook body."""
    body = await read_limited(request, WEBHOOK_LIMIT)
    try:
        return dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    except (UnicodeDecodeError, ValueError):
        return {}


def _whole(value: str | None, default: int) -> int:
    try:
        number = int(value) if value is not None else default
    except ValueError:
        return default
    return max(number, 1)


def _recent_slots(tx: Transaction, name: str, now: datetime) -> list[SlotRecord]:
    """The newest :data:`LEDGER` rows of the job's ledger, newest first: read from the last
    days first, further back only when those hold too few (a busy job's ledger is long)."""
    for days in (2, 60, None):
        start = None if days is None else now - timedelta(days=days)
        rows = tx.slots(name, start, None)
        if len(rows) >= LEDGER or days is None:
            return list(reversed(rows[-LEDGER:]))
    return []


_NOTICES = {"paused": "Paused.", "resumed": "Resumed.",
            "waiting": "Run accepted: it waits (behind a run going, or the daemon is in dry "
                       "run) and starts when it can."}


def _notice(key: str | None) -> str | None:
    return _NOTICES.get(key or "")


def _config_summary(job: Job) -> list[tuple[str, str]]:
    """What the job page's config box lists: how the job runs, in config words."""
    rows = [("timing", reports.timing_of(job))]
    if job.time_zone != "UTC":
        rows.append(("time zone", job.time_zone))
    if job.run is not None:
        rows.append(("run", job.run))
    elif job.command is not None:
        rows.append(("command", " ".join(job.command)))
    elif job.steps is not None:
        rows.append(("steps", ", ".join(step.id for step in job.steps)))
    rows.append(("overlap", str(job.overlap.default)))
    rows.append(("timeout", f"{job.timeout} s"))
    if job.retry is not None:
        rows.append(("retry", f"{job.retry.attempts} attempts, backoff {job.retry.backoff} s"))
    if job.inputs:
        rows.append(("inputs", ", ".join(job.inputs)))
    if job.nodes:
        rows.append(("nodes", ", ".join(job.nodes)))
    return rows


__all__ = ["OPERATOR", "PAGE", "dashboard_routes"]
