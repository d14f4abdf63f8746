"""What every stage reads: the config in force and what is derived from it once per apply.

The firing path runs for every slot of every job, so anything it would otherwise work out per
firing from the config (a job's schedule, the jobs that share one firing decision, the jobs
chained to it) is worked out here, once, when a config is taken. A job's policies need no
working out: the core takes its ``catch_up`` and ``overlap`` records as the config holds them.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from cronduit.core.chaining import followers_of
from cronduit.core.config.model import Config, Job
from cronduit.core.nodes import excluded_jobs
from cronduit.core.run_ids import RunIds
from cronduit.core.timespec import Schedule, schedule_of
from cronduit.engine.observer import NOT_OBSERVED, Observer
from cronduit.ports import Event

BATCH = 500
"""Triggers fired, routed or chained per transaction: one commit for many (group commit)."""

Log = Callable[[str], None]


def quiet(_: str) -> None:
    """A log that keeps nothing (tests, benchmarks)."""


@dataclass(frozen=True)
class Plan:
    """A config and what the stages derive from it."""

    config: Config
    schedules: dict[str, Schedule]
    groups: dict[str, int]
    """Jobs with the same schedule and catch-up policy decide alike from the same timer
    state: a small number names each such group, cheaper to hash per firing than the
    schedule and the policy themselves."""
    followers: dict[str, list[Job]]
    keeps_tails: bool = False
    """Whether each attempt's end stores the run's log tail (:mod:`cronduit.core.log_tails`):
    only when the state is PostgreSQL, where other hosts read runs whose logs are not
    theirs. On SQLite the logs are on the state's own host, and its firing path pays for
    no such write."""

    @classmethod
    def of(cls, config: Config, schedules: dict[str, Schedule] | None = None) -> Plan:
        schedules = schedules_of(config) if schedules is None else schedules
        keys: dict[tuple[object, ...], int] = {}
        groups = {name: keys.setdefault((schedule, config.jobs[name].catch_up), len(keys))
                  for name, schedule in schedules.items()}
        return cls(config, schedules, groups, followers_of(config.jobs.values()),
                   keeps_tails=config.settings.uses_postgres)


@dataclass
class Stage:
    """What the stages share: the plan in force, whether runs start, who is paused, the log
    and the observer of what commits."""

    plan: Plan
    dispatch: bool
    """False in a dry run: no timers fire and no runs start; triggers wait."""
    log: Log = quiet
    paused: frozenset[str] = frozenset()
    """Jobs paused, as read at the start of the transaction under way."""
    run_ids: RunIds = field(default_factory=RunIds)
    node: str = "local"
    """This daemon's node name: recorded on the runs it starts; ``nodes:`` globs match it."""
    shared: bool = False
    """Whether other daemons share the store (PostgreSQL): each then adopts, times out and
    stops only its own runs, and sweeps nodes that were lost."""
    contended: bool = False
    """Set when another daemon held a job's work this tick: what waits is looked at again
    soon, not at the next due instant."""
    stopping: set[str] = field(default_factory=set)
    """Runs of this node asked to stop by another node, whose stop was sent."""
    owed: set[str] = field(default_factory=set)
    """Jobs whose run ended here while another daemon held their work: that daemon may have
    read the run as still going and left a trigger waiting, so what waits is looked at
    again here once it has committed (:func:`~cronduit.engine.work.start_waiting`)."""
    observer: Observer = NOT_OBSERVED
    """Told what each transaction decided once it committed (:mod:`.observer`)."""
    triggers: dict[str, Event] = field(default_factory=dict)
    """The trigger of each run launched here and not ended, by run id, as its first attempt
    was launched with it: a run's later attempts (a durable run's next step, a retry) are
    launched with it again without reading it. Filled once a launch is committed, emptied
    as the run ends; a run missing (after a restart, a rollback) reads its trigger."""
    _excluded: tuple[Plan | None, tuple[str, ...]] = (None, ())

    @property
    def config(self) -> Config:
        return self.plan.config

    @property
    def scope(self) -> str | None:
        """The node whose runs this engine handles; None: every run (one daemon)."""
        return self.node if self.shared else None

    @property
    def excluded(self) -> tuple[str, ...]:
        """Jobs whose ``nodes:`` leave this node out: their work is left to the others."""
        plan, names = self._excluded
        if plan is not self.plan:
            names = excluded_jobs(self.plan.config.jobs.values(), self.node)
            self._excluded = (self.plan, names)
        return names

    @property
    def keeps_tails(self) -> bool:
        return self.plan.keeps_tails

    def new_run_id(self, now: datetime) -> str:
        return self.run_ids.next(now, secrets.randbits(36))


def schedules_of(config: Config) -> dict[str, Schedule]:
    """Each timed job's schedule. Equal schedules become one object, so the jobs sharing one
    (every 1m, a common cron line) share its cached label and name formatting, not only their
    firing decision."""
    interned: dict[Schedule, Schedule] = {}
    return {name: interned.setdefault(schedule, schedule)
            for name, job in config.jobs.items() if (schedule := schedule_of(job)) is not None}

