"""Who is told of an outcome, what they are sent, and when a failed delivery is tried again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronduit.core.enums import Outcome
from cronduit.core.notify import ATTEMPTS, RETRY_DELAYS, RunFacts, message, next_try, recipients

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
FACTS = RunFacts("backup", "3f9c1a7d", Outcome.FAILURE, T0, T0 + timedelta(seconds=83.5), 2,
                 3, "exit status 3")
ON = {"ops": (Outcome.FAILURE, Outcome.TIMEOUT), "chat": (Outcome.SUCCESS, Outcome.FAILURE),
      "quiet": (Outcome.SKIPPED,)}


def test_a_notifier_hears_an_outcome_only_if_the_job_selects_it_and_its_on_accepts_it() -> None:
    default = (Outcome.FAILURE, Outcome.TIMEOUT)
    assert ["ops", "chat"] == recipients(default, ON, Outcome.FAILURE)
    assert ["ops"] == recipients(default, ON, Outcome.TIMEOUT)
    assert [] == recipients(default, ON, Outcome.SUCCESS)  # chat would, the job does not
    assert ["chat"] == recipients((*default, Outcome.SUCCESS), ON, Outcome.SUCCESS)
    assert [] == recipients(default, {}, Outcome.FAILURE)


def test_the_json_body_has_the_spec_fields() -> None:
    assert {
        "job": "backup", "run": "3f9c1a7d", "outcome": "failure",
        "started_at": "2026-06-01T12:00:00Z", "finished_at": "2026-06-01T12:01:23Z",
        "duration_s": 83.5, "attempts": 2, "exit_status": 3, "reason": "exit status 3",
        "link": None,
    } == message(FACTS, "json")


def test_the_slack_body_is_one_line_of_text() -> None:
    assert {"text": "cronduit: backup run 3f9c1a7d failure after 83.5s (attempts 2): "
                    "exit status 3"} == message(FACTS, "slack")


def test_a_skipped_run_has_no_start_and_no_duration() -> None:
    skipped = RunFacts("backup", "r2", Outcome.SKIPPED, None, T0, 0, None, "a run was going")
    body = message(skipped, "json")
    assert (None, None) == (body["started_at"], body["duration_s"])


def test_failed_tries_are_retried_after_growing_delays_then_given_up() -> None:
    tries = [next_try(made, T0) for made in range(1, ATTEMPTS + 1)]
    assert [T0 + timedelta(seconds=s) for s in RETRY_DELAYS] + [None] == tries
