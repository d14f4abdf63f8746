"""``on.after``: which jobs a run's end triggers (SPEC §4), decided from the config alone."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cronduit.core.config.model import Job
from cronduit.core.enums import Outcome


@dataclass(frozen=True, slots=True)
class FollowUp:
    """A trigger a run's end owes a chained job: idempotent on ``delivery_id`` (one per
    ended run and follower), so a chain replayed after a crash triggers once."""

    job: str
    delivery_id: str
    label: str


Followers = Mapping[str, Sequence[Job]]
"""The jobs chained to each job (``on.after.job``), so a run's end finds them at once."""


def followers_of(jobs: Iterable[Job]) -> dict[str, list[Job]]:
    """Index ``on.after`` by the job it follows."""
    followers: dict[str, list[Job]] = {}
    for job in jobs:
        after = job.on.after if job.on is not None else None
        if after is not None:
            followers.setdefault(after.job, []).append(job)
    return followers


def follow_ups(followers: Followers, job: str, outcome: Outcome, run_id: str) -> list[FollowUp]:
    """The triggers the end of ``job``'s run ``run_id`` with ``outcome`` owes: one for each
    job that follows it and accepts that outcome."""
    owed = []
    for follower in followers.get(job, ()):
        after = follower.on.after if follower.on is not None else None
        if after is not None and outcome in after.outcomes:
            owed.append(FollowUp(follower.name, f"after/{follower.name}/{run_id}",
                                 f"after {job} {outcome}"))
    return owed
