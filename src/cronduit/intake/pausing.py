"""Pausing and resuming jobs, each written with its audit entry (:mod:`cronduit.intake.audit`).

Every function here runs inside one store transaction and either writes its change together
with its audit entry, or refuses (:class:`~cronduit.intake.RequestRefused`) without writing
anything. The CLI, the HTTP API and the engine (a pause's expiry, a removed job) call the same
functions, so a refusal reads the same from every door. Whether the text of a request is
acceptable is the core's to say (:mod:`cronduit.core.pausing`).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from cronduit.core.pausing import PauseError, parse_until
from cronduit.core.text import TextError, check_operator, check_reason
from cronduit.core.timespec import format_utc
from cronduit.intake import audit
from cronduit.intake.audit import describe, record
from cronduit.intake.refusals import RequestRefused
from cronduit.ports import Conflict, Pause, Transaction

ENGINE = audit.ENGINE


def pause(tx: Transaction, job: str, reason: str, operator: str, until: str | None,
          now: datetime) -> Pause:
    """Pause ``job``: refused (409) when it is paused already, naming who paused it, when
    and why; 422 for a reason, operator or expiry the core refuses."""
    try:
        new = Pause(job, check_reason(reason), check_operator(operator), now,
                        None if until is None else parse_until(until, now))
    except (PauseError, TextError) as error:
        raise RequestRefused(422, str(error)) from None
    _refuse_if_paused(tx, job)
    try:
        tx.insert_pause(new)
    except Conflict:  # paused by someone else since the look above
        _refuse_if_paused(tx, job)
        raise
    record(tx, "pause", new.operator, now, job, reason=new.reason,
           until=None if new.until is None else format_utc(new.until))
    return new


def _refuse_if_paused(tx: Transaction, job: str) -> None:
    existing = tx.active_pause(job)
    if existing is not None:
        raise RequestRefused(409, f"job {job} is already {describe(existing)}; "
                                  "nothing was changed")


def resume(tx: Transaction, job: str, operator: str, now: datetime) -> Pause:
    """Resume ``job``: refused (409) when it is not paused."""
    try:
        who = check_operator(operator)
    except TextError as error:
        raise RequestRefused(422, str(error)) from None
    ended = tx.end_pause(job, now, who)
    if ended is None:
        raise RequestRefused(409, f"job {job} is not paused; nothing was changed")
    _newresume(tx, ended, now, "resumed")
    return ended


def expire(tx: Transaction, now: datetime, in_force: list[Pause] | None = None) -> list[Pause]:
    """End every pause whose ``until`` has come (at that instant, by :data:`ENGINE`), among
    ``in_force`` when the caller read the pauses in force already in this transaction."""
    ended = []
    for active in tx.pauses() if in_force is None else in_force:
        if active.until is not None and active.until <= now:
            done = tx.end_pause(active.job, active.until, ENGINE)
            if done is not None:
                _newresume(tx, done, now, "expired")
                ended.append(done)
    return ended


def clear_removed(tx: Transaction, jobs: Collection[str], now: datetime
                  ) -> list[Pause]:
    """End the pauses of jobs no longer in the config (``jobs``: the configured names)."""
    ended = []
    for active in tx.pauses():
        if active.job not in jobs:
            done = tx.end_pause(active.job, now, ENGINE)
            if done is not None:
                _newresume(tx, done, now, "removed from the config")
                ended.append(done)
    return ended


def _newresume(tx: Transaction, ended: Pause, now: datetime, why: str) -> None:
    record(tx, "resume", ended.resumed_by, now, ended.job, why=why,
           paused_by=ended.operator, paused_at=format_utc(ended.paused_at),
           reason=ended.reason)
