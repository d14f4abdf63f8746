"""What the dashboard's pages show, shaped from the facts the CLI and the JSON API give
(:mod:`cronduit.intake.reports`): no rule is decided here, only how a fact reads on a page.

Every value is handed to the templates as it is; Jinja's autoescape makes a job's reason,
a log line or an input text on the page, never markup. One exception: the home page's strips
of recent runs (:func:`strip_html`), 2,000 links a page, are made here as markup, each value
in them escaped as the autoescape escapes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from markupsafe import Markup, escape

from cronduit.core.enums import Outcome
from cronduit.core.explain import explain
from cronduit.core.status import FAILED, JobStatus
from cronduit.core.timespec import format_utc
from cronduit.intake import reports
from cronduit.ports import Pause, Run, RunMark

STATES = ("all", "paused", "failing", "diverged")
"""The home page's state filter: every job, the paused ones, those whose last counted run
failed or timed out, and those with any divergence (a failure included)."""
STRIP = 20
"""Runs in each job's strip on the home page."""


def run_class(run: Run | RunMark) -> str:
    """A run's colour on a page: its outcome as the store spells it, else its state
    (``running``, ``backoff``)."""
    return run.outcome if run.outcome is not None else str(run.state)


def countdown(due: datetime, now: datetime) -> str:
    """``in 3m 20s``, ``in 2d 4h``; ``due now`` once it has come (the timer fires it)."""
    seconds = int((due - now).total_seconds())
    if seconds <= 0:
        return "due now"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"in {days}d {hours}h"
    if hours:
        return f"in {hours}h {minutes}m"
    if minutes:
        return f"in {minutes}m {secs}s"
    return f"in {secs}s"


def duration_text(seconds: float | None) -> str:
    """``1.2 s``, ``3m 04s``, ``2h 05m``; empty for none (a run going)."""
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


def pause_banner(paused: Mapping[str, object] | None) -> str | None:
    """``PAUSED by ana since 2026-06-01T09:00:00Z: disk full until 2026-06-02T09:00:00Z``
    from a job's ``paused`` facts; None when it is not paused."""
    if paused is None:
        return None
    text = f"PAUSED by {paused['by']} since {paused['since']}: {paused['reason']}"
    return text + (f" until {paused['until']}" if paused.get("until") else "")


@dataclass(frozen=True)
class JobRow:
    """One job on the home page."""

    name: str
    timing: str
    described: str | None
    next_due: str | None
    """The next elapse as an ISO instant (UTC); None when nothing is due."""
    countdown: str
    last_outcome: str | None
    last_run: str | None
    last_duration: str
    running: int
    waiting: int
    strip: Markup
    """The links of :func:`strip_html`."""
    divergences: tuple[str, ...]
    paused: str | None
    reminder: str | None

    @property
    def failing(self) -> bool:
        return self.last_outcome in FAILED


def strip_html(marks: Sequence[RunMark]) -> Markup:
    """A job's strip of recent runs: a link to each run of ``marks`` (newest first, as the
    store reads them), oldest first, its class the run's colour (:func:`run_class`), its
    title the run's trigger, colour and reason, every value escaped as Jinja's autoescape
    escapes it (markupsafe).

    Made here, not by the template: a page of 100 jobs has 2,000 marks, and the template's
    loop over them (an attribute look-up and an escape for each of three values of each)
    was three quarters of the page's render; here each mark is its run id between two pieces
    worked out once per kind, colour and reason (:func:`_around_id`). An id of letters and
    digits alone, as cronduit makes them, has nothing to escape and is not passed through
    ``escape`` (which cost as much as the rest of the mark)."""
    parts = []
    for mark in reversed(marks):
        before, after = _around_id(mark.kind, run_class(mark), mark.reason)
        run_id = mark.id
        parts.append(f"{before}{run_id if run_id.isalnum() else escape(run_id)}{after}")
    return Markup("".join(parts))


@lru_cache(maxsize=4096)
def _around_id(kind: str, shown: str, reason: str) -> tuple[str, str]:
    """A strip's link to a run, before and after its id, for a run of this trigger kind,
    colour and reason: few differ on a page (a reason is most often empty or the same
    words), so each is escaped once, not once per run."""
    title = f"{kind} · {shown}" + (f" · {reason}" if reason else "")
    return f'<a class="run {escape(shown)}" href="/runs/', f'" title="{escape(title)}"></a>'


@lru_cache(maxsize=65536)
def described(cron: str) -> str:
    """A cron expression in English (:func:`cronduit.core.explain.explain`), worked out once
    per expression: a page of 200 jobs would spend most of its time on it otherwise."""
    return explain(cron)


def paused_facts(pause: Pause | None) -> dict[str, object] | None:
    """A pause as ``job_facts`` gives it (``paused``)."""
    if pause is None:
        return None
    return {"by": pause.operator, "since": format_utc(pause.paused_at), "reason": pause.reason,
            "until": reports.utc(pause.until)}


def job_row(status: JobStatus[Run, Pause], recent: Sequence[RunMark], now: datetime
            ) -> JobRow:
    """The home page's row of a job, from its status (what ``GET /v1/jobs`` says of it) and
    the marks of its newest runs (its strip)."""
    job, last, due = status.job, status.last, status.elapse.due
    return JobRow(
        name=job.name, timing=reports.timing_of(job),
        described=None if job.cron is None else described(job.cron),
        next_due=None if due is None else format_utc(due),
        countdown="" if due is None else countdown(due, now),
        last_outcome=None if last is None else last.outcome,
        last_run=None if last is None else last.id,
        last_duration="" if last is None else duration_text(reports.duration_s(last)),
        running=len(status.active), waiting=status.waiting,
        strip=strip_html(recent), divergences=status.divergences,
        paused=pause_banner(paused_facts(status.pause)), reminder=status.reminder)


def outcome_choices() -> tuple[str, ...]:
    """The outcomes a run history filter offers, as the store spells them."""
    return tuple(str(outcome) for outcome in Outcome)
