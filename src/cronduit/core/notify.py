"""Notifications: who hears about a run's outcome, what they are sent, and when to try again.

Pure: the engine asks :func:`recipients` and :func:`message` inside the transaction that ends
the run and writes the answers as pending deliveries (so a crash between a run's end and its
notification loses neither); the notifier edge sends them and asks :func:`next_try` after a
failed attempt. Delivery is fail-open: a notifier that is down delays nothing and changes no
outcome; after :data:`ATTEMPTS` tries the delivery is recorded as failed, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from cronduit.core.enums import Outcome
from cronduit.core.timespec import format_utc

ATTEMPTS = 4
"""Tries per delivery: the first, then retries after each of :data:`RETRY_DELAYS`."""
RETRY_DELAYS = (5, 30, 120)
"""Seconds before the second, third and fourth tries: a notifier restarting or briefly
overloaded gets a couple of minutes, and a dead one costs nothing more."""
TIMEOUT = 5.0
"""Seconds a notifier has to answer one POST."""


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What a notification says about a run (SPEC §7)."""

    job: str
    run: str
    outcome: Outcome
    started_at: datetime | None
    finished_at: datetime
    attempts: int
    exit_status: int | None
    reason: str
    link: str | None = None
    execution: str | None = None
    """The durable execution the run was an activation of (a job with steps)."""
    failed_step: str | None = None
    """The step whose failure ended that activation, if one did."""


def recipients(job_notify: Sequence[Outcome], notifiers: Mapping[str, Sequence[Outcome]],
               outcome: Outcome) -> list[str]:
    """The notifiers told of ``outcome``: the job must select it, and each notifier's ``on``
    must accept it (``notifiers`` maps each name to its ``on``), in the config's order."""
    if outcome not in job_notify:
        return []
    return [name for name, accepts in notifiers.items() if outcome in accepts]


def message(facts: RunFacts, form: Literal["json", "slack"]) -> dict[str, object]:
    """The JSON body POSTed: the facts as fields, or Slack's ``text`` form."""
    duration = (None if facts.started_at is None
                else round((facts.finished_at - facts.started_at).total_seconds(), 3))
    if form == "slack":
        took = "" if duration is None else f" after {duration:g}s"
        why = f": {facts.reason}" if facts.reason else ""
        steps = "" if facts.execution is None else f", execution {facts.execution}"
        return {"text": f"cronduit: {facts.job} run {facts.run} {facts.outcome}{took} "
                        f"(attempts {facts.attempts}{steps}){why}"}
    body: dict[str, object] = {
        "job": facts.job,
        "run": facts.run,
        "outcome": str(facts.outcome),
        "started_at": None if facts.started_at is None else format_utc(facts.started_at),
        "finished_at": format_utc(facts.finished_at),
        "duration_s": duration,
        "attempts": facts.attempts,
        "exit_status": facts.exit_status,
        "reason": facts.reason,
        "link": facts.link,
    }
    if facts.execution is not None:  # a durable execution's activation (SPEC §8)
        body["execution"] = facts.execution
        body["failed_step"] = facts.failed_step
    return body


def next_try(attempts_made: int, now: datetime) -> datetime | None:
    """When to try a failed delivery again, after ``attempts_made`` tries; None: give up."""
    if attempts_made >= ATTEMPTS:
        return None
    return now + timedelta(seconds=RETRY_DELAYS[attempts_made - 1])
