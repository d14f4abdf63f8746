"""After each attempt: retry or end, with which outcome and run-ended event."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cronduit.core.config.model import Retry
from cronduit.core.enums import Outcome
from cronduit.core.lifecycle import (
    RUN_END_EVENTS,
    AttemptReport,
    backoff_step,
    deadline_passed,
    judge_attempt,
    recovered_attempt,
    retry_of,
    run_deadline,
)

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
HOUR = NOW + timedelta(hours=1)
NO_RETRY = Retry()


def test_exit_zero_is_success() -> None:
    """A clean exit ends the run as success."""
    verdict = judge_attempt(AttemptReport(0), 1, NO_RETRY, NOW, HOUR)
    assert (Outcome.SUCCESS, None) == (verdict.outcome, verdict.retry_at)


@pytest.mark.parametrize(("status", "reason"), [(1, "exit status 1"), (137, "killed by signal 9")])
def test_a_failure_without_retry_ends_the_run(status: int, reason: str) -> None:
    """No retry configured: a non-zero exit is a failure with a readable reason."""
    verdict = judge_attempt(AttemptReport(status), 1, NO_RETRY, NOW, HOUR)
    assert (Outcome.FAILURE, reason) == (verdict.outcome, verdict.reason)


def test_retry_backs_off_doubling_up_to_the_cap() -> None:
    """attempts 4, backoff 30s, max 50s: 30s, then 50s (capped), then the run fails."""
    retry = Retry(attempts=4, backoff=30, max_backoff=50)
    delays = [judge_attempt(AttemptReport(1), n, retry, NOW, HOUR).retry_at for n in (1, 2, 3)]
    assert [NOW + timedelta(seconds=30), NOW + timedelta(seconds=50),
            NOW + timedelta(seconds=50)] == delays
    assert Outcome.FAILURE == judge_attempt(AttemptReport(1), 4, retry, NOW, HOUR).outcome


def test_exit_75_asks_for_a_retry_even_without_retry() -> None:
    """EX_TEMPFAIL retries, after the job's hint when it wrote one."""
    plain = judge_attempt(AttemptReport(75), 1, NO_RETRY, NOW, HOUR)
    hinted = judge_attempt(AttemptReport(75, retry_after=5), 1, NO_RETRY, NOW, HOUR)
    assert NOW + timedelta(seconds=30) == plain.retry_at
    assert NOW + timedelta(seconds=5) == hinted.retry_at


def test_a_retry_that_cannot_start_before_the_deadline_is_not_scheduled() -> None:
    """The deadline bounds the whole run: a backoff past it ends the run instead."""
    verdict = judge_attempt(AttemptReport(75), 1, NO_RETRY, NOW, NOW + timedelta(seconds=30))
    assert Outcome.FAILURE == verdict.outcome
    assert "no time left before the deadline" in verdict.reason


def test_a_wait_past_the_calendar_ends_the_run_instead_of_overflowing() -> None:
    """A hint or a backoff longer than the time left is compared before it is added to now,
    so no wait, however long, becomes an instant (a year 9999 clock included)."""
    late = datetime(9999, 12, 1, tzinfo=UTC)
    for now, deadline in ((NOW, HOUR), (late, late + timedelta(days=1))):
        verdict = judge_attempt(AttemptReport(75, retry_after=10**18), 1, NO_RETRY, now,
                                deadline)
        assert (Outcome.FAILURE, None) == (verdict.outcome, verdict.retry_at)


def test_stopped_attempts_end_as_timeout_or_cancelled() -> None:
    """A stop by cronduit names the outcome, whatever the exit status."""
    timeout = judge_attempt(AttemptReport(None, stopped_for="timeout"), 2, NO_RETRY, NOW, HOUR)
    cancel = judge_attempt(AttemptReport(None, stopped_for="cancelled"), 1, NO_RETRY, NOW, HOUR)
    assert (Outcome.TIMEOUT, Outcome.CANCELLED) == (timeout.outcome, cancel.outcome)


def test_a_vanished_process_is_a_failure_and_not_retried() -> None:
    """A process lost while cronduit was down is recorded as a failure with the reason."""
    verdict = judge_attempt(AttemptReport(None, vanished=True), 1, Retry(attempts=3), NOW, HOUR)
    assert (Outcome.FAILURE, "process vanished while cronduit was down") == (
        verdict.outcome, verdict.reason)


def test_every_ending_outcome_has_a_run_ended_event() -> None:
    """job wait and on.after read these names."""
    assert {"completed", "failed", "timed_out", "cancelled"} == set(RUN_END_EVENTS.values())


def test_the_deadline_is_passed_exactly_at_it() -> None:
    """At the deadline's instant the run is out of time."""
    assert deadline_passed(HOUR, HOUR)
    assert not deadline_passed(NOW, HOUR)
    assert not deadline_passed(NOW, None)


def test_an_attempt_file_emptied_by_lost_writes_is_not_launched_again() -> None:
    """"Never started" beside a recorded pid: the file lost its writes (a power cut, a disk
    turned read-only), the job did start, so it ends vanished instead of running twice."""
    assert AttemptReport(None, vanished=True) == recovered_attempt("not_started", True)


def test_what_the_attempt_file_says_stands_when_no_pid_was_recorded() -> None:
    """Without a recorded process the file is right: never started means launch it, and a
    live or ended attempt is what it is, pid or not."""
    ended = AttemptReport(3)
    assert ["not_started", "running", ended, "running", ended] == [
        recovered_attempt("not_started", False), recovered_attempt("running", False),
        recovered_attempt(ended, False), recovered_attempt("running", True),
        recovered_attempt(ended, True)]


def test_a_runs_deadline_is_its_start_plus_the_jobs_timeout() -> None:
    started = datetime(2026, 6, 1, 3, 0, tzinfo=UTC)
    assert started + timedelta(seconds=90) == run_deadline(started, 90)


@pytest.mark.parametrize(("now_s", "deadline_s", "next_s", "expected"), [
    (10, 100, 20, None),  # sleeps on
    (20, 100, 20, "retry"),  # its next attempt is due
    (100, 100, 20, "timeout"),  # the deadline comes first, even with the attempt due
    (150, 100, None, "timeout"),
    (10, None, None, None),
])
def test_a_run_in_backoff_retries_when_due_and_times_out_at_its_deadline(
        now_s: int, deadline_s: int | None, next_s: int | None, expected: str | None) -> None:
    base = datetime(2026, 6, 1, tzinfo=UTC)

    def at(seconds: int | None) -> datetime | None:
        return None if seconds is None else base + timedelta(seconds=seconds)

    assert expected == backoff_step(base + timedelta(seconds=now_s), at(deadline_s), at(next_s))


def test_a_job_without_retry_is_judged_by_one_attempt() -> None:
    assert Retry() == retry_of(None)
    own = Retry(attempts=3)
    assert own is retry_of(own)
