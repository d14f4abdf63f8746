"""Any config ``check`` accepts can be served: every job runs once, nothing escapes the engine.

The configs are drawn from every key a job may have, with values a user could write; each one
that loads (what ``cronduit check`` accepts) is served by the real engine, on a real store,
with real processes started by the real runner and the clock faked, so retries and deadlines
pass in no time. Each job gets one manual run, and every run must end with an outcome: a job
whose ``dir`` or workspace is missing, or whose program cannot be found, ends as a failure
with its reason; it never stops the engine.
"""

from __future__ import annotations

import asyncio
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cronduit import intake
from cronduit.core.config import Config, ConfigErrors, load_config
from cronduit.core.enums import Outcome
from cronduit.engine import Engine
from cronduit.executor.runner import ProcessRunner
from cronduit.intake import pausing as control
from cronduit.paths import StatePaths
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock

START = datetime(2026, 3, 28, 23, 59, 30, tzinfo=UTC)
REAL_SECONDS = 20.0
"""How long a config may go in real time with no process ending before the test calls it
stuck."""
ALL_SECONDS = 120.0
"""How long one config may take in real time in all."""
WHOLE_HISTORY = 1_000_000
"""Runs of a job read to find its manual one: an every-minute job's timer runs may push it
far below the newest hundred."""

durations = st.sampled_from(["1s", "30s", "5m", "1h", "2h30m", "1d"])
shell_lines = st.sampled_from(["true", "exit 3", "exit 75", "echo $CRONDUIT_JOB",
                               "./not-here.sh", "printf '%s' \"$CRONDUIT_TRIGGER\""])
argument_lists = st.sampled_from([["true"], ["sh", "-c", "exit 1"], ["/no/such/program"],
                                  ["env"]])
timings = st.one_of(
    st.just({}),
    st.builds(lambda cron: {"cron": cron},
              st.sampled_from(["* * * * *", "30 1 * * *", "0 9 * * 1-5", "*/15 2 * * *",
                               "@hourly", "0 0 29 2 *"])),
    st.builds(lambda every: {"every": every}, st.sampled_from(["1s", "10m", "1h", "2d"])),
    st.builds(lambda at: {"at": at}, st.lists(st.sampled_from(["00:00", "01:30", "23:59"]),
                                              min_size=1, max_size=3, unique=True)),
)
overlaps = st.one_of(
    st.sampled_from(["queue", "skip", "replace", "allow"]),
    st.just({"timer": "skip", "default": "queue"}),
    st.just({"default": "allow", "max_parallel": 2}),
)
catch_ups = st.one_of(st.booleans(), durations,
                      st.builds(lambda window, n: {"window": window, "mode": "all",
                                                   "max_runs": n}, durations,
                                st.integers(1, 5)))
retries = st.builds(lambda attempts, backoff: {"attempts": attempts, "backoff": backoff},
                    st.integers(1, 4), st.sampled_from(["1s", "10s", "1m"]))
inputs = st.just({"TARGET": {"enum": ["a", "b"], "default": "a"},
                  "COUNT": {"pattern": "[0-9]+", "default": "1"}})
events = st.sampled_from([
    {"events": ["push"], "branches": ["main"], "paths": ["src/**", "!src/x"]},
    {"events": ["check_suite.completed"], "branches": ["main"], "conclusions": ["failure"]},
    {"events": ["release.published"]},
])


@st.composite
def jobs(draw: st.DrawFn, index: int, earlier: list[str]) -> dict[str, Any]:
    """One job: a body, perhaps a timing, and any of the optional keys."""
    job: dict[str, Any] = ({"run": draw(shell_lines)} if draw(st.booleans())
                           else {"command": draw(argument_lists)})
    job.update(draw(timings))
    timed = "cron" in job or "at" in job
    optional: dict[str, st.SearchStrategy[Any]] = {
        "overlap": overlaps,
        "retry": retries,
        "timeout": st.sampled_from(["10m", "1h", "6h"]),
        "notify": st.sampled_from([["failure"], ["success", "skipped"], []]),
        "env": st.just({"GREETING": "hi"}),
        "inputs": inputs,
        "secrets": st.just(["NOT_SET_ANYWHERE"]),
        "dir": st.sampled_from([".", "missing-folder"]),
        "workspace": st.just({"git": "no-such-repository", "mode": "fresh"}),
        "paused_on_start": st.booleans(),
        "webhook": st.just(True),
        "on": events,
    }
    if timed:
        optional |= {"time_zone": st.sampled_from(["Europe/London", "Asia/Kolkata", "UTC"]),
                     "catch_up": catch_ups, "jitter": st.sampled_from(["10s", "5m"])}
        if "cron" not in job or not job["cron"].startswith(("*", "@hourly")):
            optional["dst"] = st.sampled_from([{"gap": "skip"}, {"fold": "twice"}])
    if earlier:
        optional["on"] = st.one_of(events, st.builds(
            lambda after, outcomes: {"after": {"job": after, "outcomes": outcomes}},
            st.sampled_from(earlier), st.sampled_from([["success"], ["failure", "skipped"]])))
    for key in draw(st.lists(st.sampled_from(sorted(optional)), unique=True, max_size=5)):
        job[key] = draw(optional[key])
    if "dir" in job and "workspace" in job:
        del job["dir"]
    return job


@st.composite
def configs(draw: st.DrawFn) -> str:
    """The text of a config file with one to five jobs and the settings they need."""
    names: list[str] = []
    body: dict[str, Any] = {}
    for index in range(draw(st.integers(1, 5))):
        body[f"job-{index}"] = draw(jobs(index, list(names)))
        names.append(f"job-{index}")
    settings_: dict[str, Any] = {"webhook_secret": "HOOK_KEY", "github_secret": "GH_KEY",
                                 "kept_runs": draw(st.integers(1, 3))}
    if draw(st.booleans()):
        settings_["catch_up"] = draw(catch_ups)
    document: dict[str, Any] = {"settings": settings_, "jobs": body}
    if draw(st.booleans()):
        document["notifiers"] = {"ops": {"url": "http://127.0.0.1:9/hook",
                                         "on": ["failure", "success"]}}
    return yaml.safe_dump(document, sort_keys=False)


async def serve_each_job_once(config: Config, folder: Path) -> dict[str, set[str]]:
    """Serve ``config`` until every job's manual run has ended; each job's outcomes."""
    paths = StatePaths(folder / "state")
    paths.root.mkdir()
    clock = FakeClock(START)
    store = SqliteStore(paths.database)
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()
    runner = ProcessRunner(paths, folder / "cronduit.yaml", dict, woken.set)
    runner.attach(loop)
    try:
        engine = Engine(config, store, runner)
        engine.apply(config, clock.now())
        engine.start(clock.now())
        with store.transaction() as tx:
            for job in config.jobs.values():
                if tx.active_pause(job.name) is not None:
                    control.resume(tx, job.name, "test", clock.now())
                intake.accept_manual(tx, job, intake.check_inputs(job, {}), queue=True,
                                     operator="test", now=clock.now())
        # Stuck: no process ended for REAL_SECONDS. A config of every-minute jobs beside a
        # retry that sleeps for hours starts hundreds of real processes as the clock jumps,
        # each a few milliseconds: slow, not stuck, so it has up to ALL_SECONDS in all.
        started = loop.time()
        deadline = started + REAL_SECONDS
        while not _every_manual_run_ended(store, config):
            assert loop.time() < deadline, "the runs did not all end"
            # Cleared before the tick, as the daemon's loop does: a process that ends while
            # the tick runs must not have its word lost (a wait of REAL_SECONDS for nothing).
            woken.clear()
            due = engine.tick(clock.now())
            with store.transaction() as tx:
                active = tx.active_runs()
            if any(run.state == "running" for run in active):
                # Real processes end in real time: wait for the runner's word.
                await asyncio.wait_for(woken.wait(), REAL_SECONDS)
                deadline = min(loop.time() + REAL_SECONDS, started + ALL_SECONDS)
                continue
            retries = [run.next_attempt_at for run in active if run.next_attempt_at]
            # Straight to the next retry when a run sleeps (timers due meanwhile fire late,
            # as after an outage); else to whatever is due next.
            target = min(retries) if retries else due
            if target is not None and target > clock.now():
                clock.set(target)
            else:
                clock.advance(timedelta(seconds=1))
        with store.transaction() as tx:
            return {name: {run.outcome or "" for run in tx.history(name, WHOLE_HISTORY)
                           if run.kind == "manual"}
                    for name in config.jobs}
    finally:
        store.close()


def _every_manual_run_ended(store: SqliteStore, config: Config) -> bool:
    with store.transaction() as tx:
        return all(
            any(run.kind == "manual" and run.state == "ended"
                for run in tx.history(name, WHOLE_HISTORY))
            for name in config.jobs
        )


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(configs())
def test_every_config_check_accepts_serves_and_each_job_runs_once(text: str) -> None:
    """Served on a fake clock with real processes, each job's manual run ends with an
    outcome, and no exception escapes the engine, whatever the config holds."""
    try:
        config = load_config(text, "cronduit.yaml")
    except ConfigErrors:
        assume(False)
        raise
    with tempfile.TemporaryDirectory() as folder:
        outcomes = asyncio.run(serve_each_job_once(config, Path(folder)))
    known = {outcome.value for outcome in Outcome}
    assert dict.fromkeys(config.jobs, True) == {
        name: bool(found) and found <= known for name, found in outcomes.items()}
