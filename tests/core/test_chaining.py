"""``on.after``: which jobs a run's end triggers, from the config alone."""

from __future__ import annotations

from cronduit.core.chaining import FollowUp, follow_ups, followers_of
from cronduit.core.config import load_config
from cronduit.core.enums import Outcome

CONFIG = """
jobs:
  build: {run: "true"}
  test:
    run: "true"
    on: {after: {job: build}}
  report:
    run: "true"
    on: {after: {job: build, outcomes: [failure, timeout]}}
  alone: {run: "true"}
"""


def test_followers_are_indexed_by_the_job_they_follow() -> None:
    config = load_config(CONFIG, "cronduit.yaml")
    followers = followers_of(config.jobs.values())
    assert {"build": ["test", "report"]} == {
        job: [one.name for one in jobs] for job, jobs in followers.items()}


def test_a_runs_end_triggers_each_follower_that_accepts_its_outcome_once_per_run() -> None:
    followers = followers_of(load_config(CONFIG, "cronduit.yaml").jobs.values())
    assert [FollowUp("test", "after/test/r1", "after build success")] == follow_ups(
        followers, "build", Outcome.SUCCESS, "r1")
    assert [FollowUp("report", "after/report/r2", "after build failure")] == follow_ups(
        followers, "build", Outcome.FAILURE, "r2")
    assert [] == follow_ups(followers, "build", Outcome.CANCELLED, "r3")
    assert [] == follow_ups(followers, "alone", Outcome.SUCCESS, "r4")
