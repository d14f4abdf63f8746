"""Routing and work: overlap policies, coalescing, retries, deadlines, chaining, retention."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from cronduit.core.enums import Outcome
from cronduit.engine import LAUNCH_CHUNK, RECORD_PIDS_WITHIN
from cronduit.ports import NewEvent
from tests.engine.conftest import Rig

MakeRig = Callable[..., Rig]
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SECRETS = "settings:\n  webhook_secret: HOOK\n  github_secret: GH\n"


def job(body: str) -> str:
    return SECRETS + "jobs:\n  j:\n    run: ./j\n    webhook: true\n" + body


def linked(rig: Rig, run_id: str) -> list[str]:
    with rig.store.transaction() as tx:
        return [e.delivery_id for e in tx.events_of_run(run_id)]


def test_triggers_during_a_run_coalesce_into_one_run_reporting_the_newest_delivery(
    make_rig: MakeRig,
) -> None:
    """queue: manual starts; a timer request and two webhooks wait; one run consumes all three."""
    rig = make_rig(job(""), T0)
    rig.accept("manual/1", "j", "manual")
    rig.tick()
    first = rig.runner.launched[0].run.id
    rig.accept("slot/j/x", "j", "timer")
    rig.accept("webhook/j/a", "j", "webhook")
    rig.accept("webhook/j/b", "j", "webhook")
    rig.tick()
    assert 1 == len(rig.runner.launched)
    rig.runner.finish(first, 0)
    rig.tick()
    second = rig.runner.launched[1]
    assert "webhook/j/b" == second.trigger.delivery_id
    assert ["slot/j/x", "webhook/j/a", "webhook/j/b"] == linked(rig, second.run.id)


def test_without_deliveries_the_earliest_request_is_reported(make_rig: MakeRig) -> None:
    """Two requests waiting (manual then timer): the run reports the earlier one."""
    rig = make_rig(job(""), T0)
    rig.accept("webhook/j/0", "j", "webhook")
    rig.tick()
    rig.accept("manual/1", "j", "manual")
    rig.accept("slot/j/x", "j", "timer")
    rig.tick()
    rig.runner.finish(rig.runner.launched[0].run.id, 0)
    rig.tick()
    assert "manual/1" == rig.runner.launched[1].trigger.delivery_id


def test_skip_records_a_skipped_run_with_its_reason(make_rig: MakeRig) -> None:
    """overlap: skip — a trigger meeting a run becomes a skipped run; nothing waits."""
    rig = make_rig(job("    overlap: skip\n"), T0)
    rig.accept("webhook/j/1", "j", "webhook")
    rig.tick()
    rig.accept("webhook/j/2", "j", "webhook")
    rig.tick()
    runs = rig.history("j")
    assert [None, "skipped"] == [r.outcome for r in runs]
    assert "a run was already going (overlap: skip)" == runs[1].reason
    rig.runner.finish(runs[0].id, 0)
    rig.tick()
    assert 1 == len(rig.runner.launched)


def test_replace_cancels_the_running_run_then_runs_the_new_trigger(make_rig: MakeRig) -> None:
    """overlap: replace — TERM the old run; once it ended, the new trigger runs."""
    rig = make_rig(job("    overlap: replace\n"), T0)
    rig.accept("webhook/j/1", "j", "webhook")
    rig.tick()
    old = rig.runner.launched[0].run.id
    rig.accept("webhook/j/2", "j", "webhook")
    rig.tick()
    assert [(old, "cancelled")] == rig.runner.stopped
    rig.tick()
    assert ["cancelled", None] == [r.outcome for r in rig.history("j")]
    assert "webhook/j/2" == rig.runner.launched[1].trigger.delivery_id


def test_allow_runs_in_parallel_up_to_max_parallel(make_rig: MakeRig) -> None:
    """overlap: allow with max_parallel 2 — two run at once, the third waits its turn."""
    rig = make_rig(job("    overlap: {default: allow, max_parallel: 2}\n"), T0)
    for n in range(3):
        rig.accept(f"webhook/j/{n}", "j", "webhook")
    rig.tick()
    assert 2 == len(rig.runner.running())
    rig.runner.finish(rig.runner.launched[0].run.id, 0)
    rig.tick()
    assert ["webhook/j/2"] == [x.trigger.delivery_id for x in rig.runner.launched[2:]]


def test_a_dry_run_holds_triggers_and_a_normal_start_runs_them_coalesced(
    make_rig: MakeRig,
) -> None:
    """serve --dry-run accepts and holds; the next normal start runs one coalesced run."""
    rig = make_rig(job("    every: 1h\n"), T0, dispatch=False)
    rig.accept("webhook/j/1", "j", "webhook")
    rig.accept("manual/1", "j", "manual")
    rig.advance(timedelta(hours=2))
    assert [] == rig.runner.launched
    with rig.store.transaction() as tx:
        assert [] == tx.timers()
    rig.restart()
    rig.tick()
    assert 1 == len(rig.runner.running())
    first = rig.runner.launched[0]
    assert {"webhook/j/1", "manual/1"} <= set(linked(rig, first.run.id))


def test_a_retry_hint_waits_and_triggers_during_backoff_join_the_retry(
    make_rig: MakeRig,
) -> None:
    """Exit 75 with a 10s hint: backoff; a webhook joins; attempt 2 runs and consumes it."""
    rig = make_rig(job(""), T0)
    rig.accept("manual/1", "j", "manual")
    rig.tick()
    run_id = rig.runner.launched[0].run.id
    rig.runner.finish(run_id, 75, retry_after=10)
    due = rig.tick()
    assert T0 + timedelta(seconds=10) == due
    rig.accept("webhook/j/late", "j", "webhook")
    rig.tick()
    rig.at(T0 + timedelta(seconds=10))
    assert [(run_id, 2)] == [(x.run.id, x.attempt) for x in rig.runner.launched[1:]]
    assert ["manual/1", "webhook/j/late"] == linked(rig, run_id)
    rig.runner.finish(run_id, 0)
    rig.tick()
    [run] = rig.history("j")
    assert ("success", 2) == (run.outcome, run.attempts)


def test_a_failure_without_retry_ends_the_run_and_the_next_trigger_just_runs(
    make_rig: MakeRig,
) -> None:
    """No retry: exit 1 is a failure; the next trigger starts a fresh run."""
    rig = make_rig(job(""), T0)
    rig.accept("manual/1", "j", "manual")
    rig.tick()
    rig.runner.finish(rig.runner.launched[0].run.id, 1)
    rig.tick()
    rig.accept("manual/2", "j", "manual")
    rig.tick()
    outcomes = [(r.outcome, r.reason) for r in rig.history("j")]
    assert [("failure", "exit status 1"), (None, "")] == outcomes


def test_retry_attempts_back_off_doubling(make_rig: MakeRig) -> None:
    """retry: 3 attempts, 30s backoff — sleeps 30s then 60s, then the run fails."""
    rig = make_rig(job("    retry: {attempts: 3, backoff: 30s}\n"), T0)
    rig.accept("manual/1", "j", "manual")
    rig.tick()
    run_id = rig.runner.launched[0].run.id
    rig.runner.finish(run_id, 1)
    assert T0 + timedelta(seconds=30) == rig.tick()
    rig.at(T0 + timedelta(seconds=30))
    rig.runner.finish(run_id, 1)
    assert T0 + timedelta(seconds=90) == rig.tick()
    rig.at(T0 + timedelta(seconds=90))
    rig.runner.finish(run_id, 1)
    rig.tick()
    [run] = rig.history("j")
    assert ("failure", 3) == (run.outcome, run.attempts)


def test_the_deadline_stops_the_run_as_timeout(make_rig: MakeRig) -> None:
    """timeout: 1m — at the deadline the run is stopped and recorded as timeout."""
    rig = make_rig(job("    timeout: 1m\n"), T0)
    rig.accept("manual/1", "j", "manual")
    assert T0 + RECORD_PIDS_WITHIN == rig.tick()  # launched: back soon to record the pid
    assert T0 + timedelta(minutes=1) == rig.tick()
    rig.at(T0 + timedelta(minutes=1))
    rig.tick()
    assert [(rig.runner.launched[0].run.id, "timeout")] == rig.runner.stopped
    [run] = rig.history("j")
    assert "timeout" == run.outcome
    with rig.store.transaction() as tx:
        assert ["timed_out"] == [e.event for e in tx.run_ends_after("j", 0)]


def test_on_after_chains_a_job_to_another_jobs_outcome(make_rig: MakeRig) -> None:
    """b runs after a succeeds, through an accepted 'after' event; not after a failure."""
    text = ("jobs:\n  a:\n    run: ./a\n  b:\n    run: ./b\n"
            "    on: {after: {job: a, outcomes: [success]}}\n")
    rig = make_rig(text, T0)
    rig.accept("manual/1", "a", "manual")
    rig.tick()
    rig.runner.finish(rig.runner.launched[0].run.id, 0)
    rig.tick()
    rig.tick()
    assert ["a", "b"] == [x.run.job for x in rig.runner.launched]
    assert "after a success" == rig.runner.launched[1].trigger.label
    rig.accept("manual/2", "a", "manual")
    rig.tick()
    rig.runner.finish(rig.runner.launched[2].run.id, 1)
    rig.tick()
    rig.tick()
    assert 3 == len(rig.runner.launched)


def test_kept_runs_prunes_files_of_older_runs_only(make_rig: MakeRig) -> None:
    """kept_runs: 2 — after five runs, the three oldest lose their files, all keep records."""
    rig = make_rig("settings:\n  kept_runs: 2\njobs:\n  j:\n    run: ./j\n", T0)
    for n in range(5):
        rig.accept(f"manual/{n}", "j", "manual")
        rig.tick()
        rig.runner.finish(rig.runner.launched[-1].run.id, 0)
        rig.tick()
        rig.advance(timedelta(seconds=1))
    runs = rig.history("j")
    assert 5 == len(runs)
    assert [r.id for r in runs[:3]] == rig.runner.pruned
    assert [True, True, True, False, False] == [r.files_pruned for r in runs]


def test_replace_ends_a_run_sleeping_in_backoff_and_runs_the_new_trigger(
    make_rig: MakeRig,
) -> None:
    """A run in backoff has no process to stop: replace cancels it at once."""
    rig = make_rig(job("    overlap: replace\n    retry: {attempts: 3, backoff: 1m}\n"), T0)
    rig.accept("webhook/j/1", "j", "webhook")
    rig.tick()
    first = rig.runner.launched[0].run.id
    rig.runner.finish(first, 1)
    rig.tick()
    rig.accept("webhook/j/2", "j", "webhook")
    rig.tick()
    outcomes = [(r.id == first, r.outcome) for r in rig.history("j")]
    assert [(True, "cancelled"), (False, None)] == outcomes
    assert "webhook/j/2" == rig.runner.launched[1].trigger.delivery_id
    rig.at(T0 + timedelta(minutes=5))
    assert 2 == len(rig.runner.launched)


def test_runs_waiting_to_launch_past_their_deadline_never_start(make_rig: MakeRig) -> None:
    """A burst larger than a launch chunk: runs whose deadline passes in the queue end as
    timeout without a process."""
    count = LAUNCH_CHUNK + 6
    text = "jobs:\n" + "".join(f"  j{n}:\n    run: x\n    timeout: 1s\n" for n in range(count))
    rig = make_rig(text, T0)
    for n in range(count):
        rig.accept(f"manual/{n}", f"j{n}", "manual")
    rig.tick()
    assert LAUNCH_CHUNK == len(rig.runner.launched)
    rig.advance(timedelta(seconds=2))
    assert LAUNCH_CHUNK == len(rig.runner.launched)
    late = [run for n in range(count) for run in rig.history(f"j{n}")
            if run.reason == "deadline passed before the process started"]
    assert 6 == len(late)
    assert {"timeout"} == {run.outcome for run in late}


def test_a_tick_launches_one_chunk_in_all_though_both_its_commits_decided_launches(
        make_rig: MakeRig) -> None:
    """The first commit's launches (next steps) begin before the routing transaction; the
    routed runs after it take what is left of the chunk, and the rest wait for the next
    tick, which comes at once."""
    walks, plain = 10, LAUNCH_CHUNK
    text = "jobs:\n" + "".join(
        f"  walk{n}:\n    steps:\n      - {{id: a, run: x}}\n      - {{id: b, run: x}}\n"
        for n in range(walks)) + "".join(f"  j{n}:\n    run: x\n" for n in range(plain))
    rig = make_rig(text, T0)
    for n in range(walks):
        rig.accept(f"manual/walk{n}", f"walk{n}", "manual")
    rig.tick()
    assert walks == len(rig.runner.launched)
    for launched in rig.runner.launched:
        rig.runner.finish(launched.run.id, 0)
    for n in range(plain):
        rig.accept(f"manual/j{n}", f"j{n}", "manual")
    assert T0 == rig.tick()  # more to launch: at once
    later = rig.runner.launched[walks:]
    assert LAUNCH_CHUNK == len(later)
    assert [2] * walks == [x.attempt for x in later[:walks]]
    rig.tick()
    assert walks + walks + plain == len(rig.runner.launched)


def test_a_run_whose_process_cannot_start_fails_with_the_reason_and_others_go_on(
        make_rig: MakeRig) -> None:
    """A missing dir (or no processes left) fails that run, retried by its policy; the
    runs started beside it and the daemon's next ticks are unaffected."""
    rig = make_rig("""
jobs:
  lost: {run: x, every: 1h, dir: /nowhere, retry: {attempts: 2, backoff: 1m}}
  fine: {run: x, every: 1h}
""", T0)
    rig.runner.unstartable["lost"] = "No such file or directory: /nowhere"
    rig.tick()
    rig.tick()
    (fine,) = rig.history("fine")
    assert "running" == fine.state
    (lost,) = rig.history("lost")
    assert ("backoff", "could not start: No such file or directory: /nowhere") == (
        lost.state, lost.reason)
    rig.advance(timedelta(minutes=1))
    rig.tick()
    (lost,) = rig.history("lost")
    assert (Outcome.FAILURE, 2) == (lost.outcome, lost.attempts)
    assert "could not start" in (lost.reason or "")


NOTIFIED = """
notifiers:
  ops:  {url: "https://hooks.example/ops/T0KEN", on: [failure, timeout, skipped]}
  chat: {url: "https://chat.example/hook", on: [success, failure], format: slack}
jobs:
  backup: {run: x, every: 1h, overlap: skip, notify: [failure, timeout, skipped]}
  quiet:  {run: x, every: 1h}
"""


def test_an_outcome_is_queued_for_each_notifier_in_the_transaction_that_ends_the_run(
        make_rig: MakeRig) -> None:
    rig = make_rig(NOTIFIED, T0)
    rig.tick()
    (backup_id,) = [r.id for r in rig.history("backup")]
    (quiet_id,) = [r.id for r in rig.history("quiet")]
    rig.accept("hook/1", "backup", "webhook")  # while backup runs: skipped (overlap: skip)
    rig.tick()
    rig.runner.finish(backup_id, 2)
    rig.runner.finish(quiet_id, 0)
    rig.tick()
    skipped_run = next(r for r in rig.history("backup") if r.outcome == Outcome.SKIPPED)
    with rig.store.transaction() as tx:
        failed = {(n.notifier, n.state) for n in tx.notifications_of_run(backup_id)}
        quiet = tx.notifications_of_run(quiet_id)
        skipped = [n.notifier for n in tx.notifications_of_run(skipped_run.id)]
        body = json.loads(tx.notifications_of_run(backup_id)[0].body)
    assert {("ops", "pending"), ("chat", "pending")} == failed
    assert [] == quiet  # success, and the job did not ask for it
    assert ["ops"] == skipped  # chat's `on` does not take skipped
    assert ("backup", "failure", 2) == (body["job"], body["outcome"], body["exit_status"])
    assert "T0KEN" not in json.dumps(body)


def test_one_routing_batch_starts_waits_joins_and_unmatches_each_trigger_as_alone(
    make_rig: MakeRig,
) -> None:
    """Routed in one batch (one transaction, the jobs' work read once): j's first trigger
    starts a run and the next two wait behind it; k's two webhooks join its run in backoff;
    a trigger for a job not in the config is unmatched. Each ends as if routed alone."""
    config = SECRETS + ("jobs:\n  j:\n    run: ./j\n    webhook: true\n"
                        "  k:\n    run: ./k\n    webhook: true\n")
    rig = make_rig(config, T0)
    rig.accept("manual/k", "k", "manual")
    rig.tick()
    sleeping = rig.runner.launched[0].run.id
    rig.runner.finish(sleeping, 75, retry_after=60)
    rig.tick()
    for delivery, name, kind in (("manual/1", "j", "manual"), ("webhook/k/a", "k", "webhook"),
                                 ("webhook/j/a", "j", "webhook"), ("webhook/gone", "gone",
                                                                   "webhook"),
                                 ("webhook/k/b", "k", "webhook"), ("webhook/j/b", "j", "webhook")):
        rig.accept(delivery, name, kind)
    rig.tick()
    [_, started] = rig.runner.launched
    assert "manual/1" == started.trigger.delivery_id
    assert ["manual/k", "webhook/k/a", "webhook/k/b"] == linked(rig, sleeping)
    with rig.store.transaction() as tx:
        assert ["webhook/j/a", "webhook/j/b"] == [e.delivery_id for e in tx.waiting_events("j")]
        gone = tx.event_by_delivery("webhook/gone")
        assert gone is not None
        assert "unmatched" == gone.state
        assert [] == tx.new_events(10)
    rig.runner.finish(started.run.id, 0)
    rig.tick()
    assert ["webhook/j/a", "webhook/j/b"] == linked(rig, rig.runner.launched[2].run.id)


def test_a_queue_longer_than_the_head_runs_every_trigger_in_order(make_rig: MakeRig) -> None:
    """150 webhooks waiting (more than a run's end reads first): under allow with two
    slots each run end starts the next oldest, all 150 run once in acceptance order; under
    queue one run consumes all 150 (the whole queue is read when a run waits for idle)."""
    rig = make_rig(job("    overlap: {webhook: allow, max_parallel: 2}\n"), T0)
    with rig.store.transaction() as tx:
        tx.insert_events([NewEvent(f"webhook/j/{n:03d}", "j", "webhook", "w", T0)
                          for n in range(150)])
    rig.tick()
    while rig.runner.running():
        for run_id in rig.runner.running():
            rig.runner.finish(run_id, 0)
        rig.tick()
    assert [f"webhook/j/{n:03d}" for n in range(150)] == [
        x.trigger.delivery_id for x in rig.runner.launched]
    queued = make_rig(job(""), T0)
    queued.accept("manual/first", "j", "manual")
    queued.tick()
    with queued.store.transaction() as tx:
        tx.insert_events([NewEvent(f"webhook/j/{n:03d}", "j", "webhook", "w", T0)
                          for n in range(150)])
    queued.tick()
    queued.runner.finish(queued.runner.launched[0].run.id, 0)
    queued.tick()
    [_, coalesced] = queued.runner.launched
    assert 150 == len(linked(queued, coalesced.run.id))
