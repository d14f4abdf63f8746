"""The overlap policy: what arriving triggers do to a job's runs, and which trigger they report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronduit.core.config.model import OverlapSpec
from cronduit.core.enums import Overlap, TriggerKind
from cronduit.core.overlap import (
    CANCELLED_REPLACED,
    DEFAULT_MAX_PARALLEL,
    NEEDS_IDLE,
    REFUSED_MANUAL_WAITING,
    REFUSED_PAUSED,
    REFUSED_RUNNING,
    SKIPPED_BUSY,
    SKIPPED_PAUSED,
    Arrival,
    Batch,
    Decision,
    JobState,
    Trigger,
    dispatched,
    manual_refusal,
    on_arrival,
    on_backoff,
    on_pause,
    on_run_end,
    on_run_end_of_head,
    replaced_at_once,
    runs_alone,
    select_trigger,
)
from tests.helpers.policies import overlap

TIMER, WEBHOOK, EVENT, MANUAL, AFTER = (
    TriggerKind.TIMER,
    TriggerKind.WEBHOOK,
    TriggerKind.EVENT,
    TriggerKind.MANUAL,
    TriggerKind.AFTER,
)
QUEUE, SKIP, REPLACE, ALLOW = Overlap.QUEUE, Overlap.SKIP, Overlap.REPLACE, Overlap.ALLOW


def trigger(kind: TriggerKind, seq: int) -> Trigger:
    """A trigger named after its kind and acceptance order, such as ``webhook-2``."""
    return Trigger(f"{kind}-{seq}", kind, seq)


@dataclass
class Simulation:
    """One job driven only through the policy functions, the way the store will drive it."""

    policy: OverlapSpec
    max_parallel: int = DEFAULT_MAX_PARALLEL
    runs: list[list[Trigger]] = field(default_factory=list)
    going: list[int] = field(default_factory=list)
    backoff: int | None = None
    waiting: list[Trigger] = field(default_factory=list)
    skipped: list[tuple[Trigger, str]] = field(default_factory=list)
    paused: bool = False
    accepted: list[Trigger] = field(default_factory=list)
    peak: int = 0

    def state(self) -> JobState:
        return JobState(len(self.going), tuple(self.waiting), self.paused, self.backoff is not None)

    def arrive(self, kind: TriggerKind) -> Arrival:
        new = trigger(kind, len(self.accepted) + 1)
        self.accepted.append(new)
        arrival = on_arrival(self.state(), new, self.policy.of(kind), self.max_parallel)
        if arrival.decision is Decision.START:
            assert arrival.batch is not None
            self._start(arrival.batch)
        elif arrival.decision is Decision.JOIN:
            assert self.backoff is not None
            self.runs[self.backoff].append(new)
        elif arrival.decision is Decision.SKIP:
            assert arrival.reason is not None
            self.skipped.append((new, arrival.reason))
        else:
            self.waiting.append(new)
            if arrival.decision is Decision.REPLACE:
                for run in list(self.going):
                    self.end(run)
        return arrival

    def ask_manual(self, queue: bool) -> str | None:
        refusal = manual_refusal(self.state(), queue)
        if refusal is None:
            self.arrive(MANUAL)
        return refusal

    def end(self, run: int | None = None) -> list[Batch]:
        ended = self.going[0] if run is None else run
        self.going.remove(ended)
        if self.backoff == ended:
            self.backoff = None
        batches = on_run_end(self.state(), self.policy, self.max_parallel)
        for batch in batches:
            self._start(batch)
        return batches

    def fail_attempt(self) -> None:
        joined = on_backoff(self.state(), self.policy)
        self.backoff = self.going[0]
        self.runs[self.backoff].extend(joined)
        self.waiting = [t for t in self.waiting if t not in joined]

    def pause(self) -> None:
        self.skipped.extend((t, SKIPPED_PAUSED) for t in on_pause(self.state()))
        self.waiting.clear()
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        for batch in on_run_end(self.state(), self.policy, self.max_parallel):
            self._start(batch)

    def drain(self) -> None:
        while self.going:
            self.end()

    def _start(self, batch: Batch) -> None:
        idle_only = all(self._needs_idle(t) for t in batch.triggers)
        assert not (idle_only and self.going), "a queued run started beside another run"
        self.runs.append(list(batch.triggers))
        self.going.append(len(self.runs) - 1)
        self.waiting = [t for t in self.waiting if t not in batch.triggers]
        self.peak = max(self.peak, len(self.going))

    def _needs_idle(self, item: Trigger) -> bool:
        return item.kind is MANUAL or self.policy.of(item.kind) in NEEDS_IDLE


def ids(triggers: list[Trigger] | tuple[Trigger, ...]) -> list[str]:
    """The ids of ``triggers``, for comparisons that read well on failure."""
    return [t.id for t in triggers]


def runs_of(job: Simulation) -> list[list[str]]:
    """Every run the job started, as the ids of the triggers each consumed."""
    return [ids(run) for run in job.runs]


def skipped_of(job: Simulation) -> list[tuple[str, str]]:
    """Every skipped run, as its trigger's id and its reason."""
    return [(t.id, reason) for t, reason in job.skipped]


# -- coalescing: one run consumes every waiting trigger and reports the right one ------------


@pytest.mark.parametrize(
    ("kinds", "reported"),
    [
        ([TIMER, WEBHOOK], "webhook-3"),
        ([WEBHOOK, WEBHOOK], "webhook-3"),
        ([TIMER, MANUAL], "timer-2"),
        ([MANUAL, TIMER], "manual-2"),
        ([EVENT, WEBHOOK, TIMER], "webhook-3"),
        ([TIMER, TIMER, TIMER], "timer-2"),
        ([WEBHOOK, EVENT], "event-3"),
        ([AFTER, TIMER], "after-2"),
        ([WEBHOOK, TIMER, MANUAL], "webhook-2"),
    ],
    ids=[
        "timer-then-webhook",
        "two-webhooks",
        "timer-then-manual",
        "manual-then-timer",
        "event-webhook-timer",
        "three-timers",
        "webhook-then-event",
        "after-then-timer",
        "webhook-timer-manual",
    ],
)
def test_triggers_arriving_during_a_run_coalesce_into_one_run(
    kinds: list[TriggerKind], reported: str
) -> None:
    """However they arrive, the waiting triggers start one run that reports the right one."""
    job = Simulation(overlap(QUEUE))
    job.arrive(TIMER)
    arrivals = [job.arrive(kind) for kind in kinds]
    (batch,) = job.end()
    expected = ([Arrival(Decision.WAIT)] * len(kinds), ids(job.accepted[1:]), reported)
    assert expected == (arrivals, ids(batch.triggers), batch.trigger.id)


def test_the_newest_delivery_beats_any_request() -> None:
    """A delivery is reported even when requests arrived before and after it."""
    batch = [trigger(TIMER, 1), trigger(EVENT, 2), trigger(MANUAL, 3), trigger(AFTER, 4)]
    assert batch[1] == select_trigger(batch)


def test_without_deliveries_the_earliest_request_is_reported() -> None:
    """Among requests alone, the one that has waited longest names the run."""
    batch = [trigger(AFTER, 5), trigger(MANUAL, 7), trigger(TIMER, 9)]
    assert batch[0] == select_trigger(batch)


def test_an_empty_batch_has_no_trigger_to_report() -> None:
    """A run always consumes something, so an empty batch is a caller's bug."""
    with pytest.raises(ValueError, match="at least one trigger"):
        select_trigger([])


def test_queue_starts_exactly_one_run_for_the_whole_work() -> None:
    """When the run ends, one run consumes every waiting trigger."""
    waiting = (trigger(TIMER, 2), trigger(WEBHOOK, 3), trigger(MANUAL, 4))
    assert [Batch(waiting)] == on_run_end(JobState(0, waiting), overlap(QUEUE))


def test_a_run_that_ends_with_nothing_waiting_starts_nothing() -> None:
    """No waiting triggers, no new run."""
    assert not on_run_end(JobState(0), overlap(QUEUE))


def test_queue_waits_while_a_run_is_still_going() -> None:
    """Under queue nothing starts while another run is in progress."""
    assert not on_run_end(JobState(1, (trigger(TIMER, 2),)), overlap(QUEUE))


# -- arrival under each policy ---------------------------------------------------------------


@pytest.mark.parametrize("policy", list(Overlap))
@pytest.mark.parametrize("kind", list(TriggerKind))
def test_a_trigger_on_an_idle_job_starts_at_once(policy: Overlap, kind: TriggerKind) -> None:
    """Nothing running and nothing waiting: every policy starts a run with the trigger alone."""
    new = trigger(kind, 1)
    assert Arrival(Decision.START, batch=Batch((new,))) == on_arrival(JobState(), new, policy)


def test_skip_records_the_reason_and_nothing_waits() -> None:
    """A trigger meeting a run under skip becomes a skipped run with its reason."""
    job = Simulation(overlap(SKIP))
    job.arrive(TIMER)
    arrival = job.arrive(WEBHOOK)
    started = job.end()
    expected = (
        Arrival(Decision.SKIP, reason="a run was already going (overlap: skip)"),
        [("webhook-2", SKIPPED_BUSY)],
        0,
        0,
    )
    assert expected == (arrival, skipped_of(job), len(job.waiting), len(started))


def test_replace_cancels_the_runs_going() -> None:
    """A trigger under replace cancels every run going, with the reason to record."""
    expected = Arrival(Decision.REPLACE, reason=CANCELLED_REPLACED)
    assert expected == on_arrival(JobState(running=2), trigger(WEBHOOK, 3), REPLACE)


def test_replace_starts_the_new_trigger_once_the_cancelled_run_has_ended() -> None:
    """The replacement waits for the cancelled run to be gone, so the two never overlap."""
    job = Simulation(overlap(REPLACE))
    job.arrive(TIMER)
    job.arrive(WEBHOOK)
    expected = ([["timer-1"], ["webhook-2"]], [1])
    assert expected == (runs_of(job), job.going)


def test_replacements_arriving_while_a_run_is_cancelled_coalesce() -> None:
    """Two replacements that meet the same dying run start one run, the newest reported."""
    first, second = trigger(WEBHOOK, 2), trigger(WEBHOOK, 3)
    arrival = on_arrival(JobState(1, (first,)), second, REPLACE)
    (batch,) = on_run_end(JobState(0, (first, second)), overlap(REPLACE))
    expected = (Decision.REPLACE, (first, second), second)
    assert expected == (arrival.decision, batch.triggers, batch.trigger)


def test_allow_runs_in_parallel_up_to_max_parallel() -> None:
    """Under allow each trigger starts its own run while a slot is free."""
    job = Simulation(overlap(ALLOW), max_parallel=2)
    decisions = [job.arrive(WEBHOOK).decision for _ in range(3)]
    expected = ([Decision.START, Decision.START, Decision.WAIT], ["webhook-3"])
    assert expected == (decisions, ids(job.waiting))


def test_allow_overflow_starts_one_run_per_trigger_as_slots_free() -> None:
    """Waiting triggers under allow start alone, oldest first, one per free slot."""
    waiting = (trigger(WEBHOOK, 3), trigger(TIMER, 4), trigger(WEBHOOK, 5))
    batches = on_run_end(JobState(1, waiting), overlap(ALLOW), max_parallel=3)
    assert [Batch(waiting[:1]), Batch(waiting[1:2])] == batches


def test_allow_defaults_to_four_parallel_runs() -> None:
    """Without max_parallel, the fifth parallel trigger waits."""
    fourth, fifth = trigger(TIMER, 4), trigger(TIMER, 5)
    expected = (Arrival(Decision.START, batch=Batch((fourth,))), Arrival(Decision.WAIT))
    assert expected == (
        on_arrival(JobState(3), fourth, ALLOW),
        on_arrival(JobState(4), fifth, ALLOW),
    )


def test_allow_with_one_slot_runs_one_at_a_time_without_coalescing() -> None:
    """max_parallel 1 serialises runs but still gives each trigger its own run."""
    job = Simulation(overlap(ALLOW), max_parallel=1)
    for kind in (TIMER, TIMER, WEBHOOK):
        job.arrive(kind)
    job.drain()
    expected = [["timer-1"], ["timer-2"], ["webhook-3"]]
    assert expected == runs_of(job)


def test_a_trigger_joins_held_work_rather_than_start_beside_it() -> None:
    """With work held (dry run, daemon down) and nothing running, an arrival waits with it."""
    held = JobState(0, (trigger(WEBHOOK, 1),))
    assert Arrival(Decision.WAIT) == on_arrival(held, trigger(TIMER, 2), SKIP)


def test_held_work_runs_coalesced_when_dispatch_resumes() -> None:
    """After a dry run the waiting triggers start one run, the newest delivery reported."""
    held = (trigger(WEBHOOK, 1), trigger(MANUAL, 2), trigger(EVENT, 3))
    (batch,) = on_run_end(JobState(0, held), overlap(SKIP))
    expected = (held, held[2])
    assert expected == (batch.triggers, batch.trigger)


# -- per-kind policies -----------------------------------------------------------------------


def test_per_kind_policies_treat_each_trigger_by_its_kind() -> None:
    """With timer: queue and skip for the rest, a slot waits and a delivery is skipped."""
    job = Simulation(overlap(SKIP, timer=QUEUE))
    job.arrive(TIMER)
    decisions = [job.arrive(WEBHOOK).decision, job.arrive(TIMER).decision]
    (batch,) = job.end()
    expected = ([Decision.SKIP, Decision.WAIT], ["timer-3"])
    assert expected == (decisions, ids(batch.triggers))


def test_a_queued_trigger_waits_for_every_parallel_run_to_end() -> None:
    """With timer: queue and allow for the rest, a slot waits until the job is idle."""
    job = Simulation(overlap(ALLOW, timer=QUEUE))
    job.arrive(WEBHOOK)
    job.arrive(WEBHOOK)
    arrival = job.arrive(TIMER)
    after_first = job.end()
    after_second = job.end()
    expected = (Arrival(Decision.WAIT), 0, [["timer-3"]])
    assert expected == (arrival, len(after_first), [ids(b.triggers) for b in after_second])


def test_parallel_triggers_do_not_overtake_a_queued_one() -> None:
    """A delivery that could run in parallel waits behind an earlier queued slot."""
    job = Simulation(overlap(ALLOW, timer=QUEUE))
    job.arrive(WEBHOOK)
    job.arrive(TIMER)
    arrival = job.arrive(WEBHOOK)
    batches = job.end()
    expected = (Arrival(Decision.WAIT), [["timer-2"], ["webhook-3"]])
    assert expected == (arrival, [ids(b.triggers) for b in batches])


def test_only_the_queued_kinds_coalesce_in_a_mixed_work() -> None:
    """Queued slots share one run; parallel deliveries keep one run each beside it."""
    waiting = (trigger(TIMER, 2), trigger(WEBHOOK, 3), trigger(TIMER, 4), trigger(WEBHOOK, 5))
    batches = on_run_end(JobState(0, waiting), overlap(ALLOW, timer=QUEUE))
    expected = [["timer-2", "timer-4"], ["webhook-3"], ["webhook-5"]]
    assert expected == [ids(b.triggers) for b in batches]


def test_a_replacement_cancels_parallel_runs_too() -> None:
    """With webhook: replace, a delivery cancels every run the job has going."""
    job = Simulation(overlap(ALLOW, webhook=REPLACE))
    job.arrive(TIMER)
    job.arrive(TIMER)
    decision = job.arrive(WEBHOOK).decision
    expected = (Decision.REPLACE, [["timer-1"], ["timer-2"], ["webhook-3"]], [2])
    assert expected == (decision, runs_of(job), job.going)


def test_the_policy_of_a_kind_falls_back_to_the_default() -> None:
    """Kinds the mapping does not name follow its default."""
    policy = overlap(SKIP, timer=QUEUE)
    expected = [QUEUE, SKIP, SKIP, SKIP, SKIP]
    assert expected == [policy.of(kind) for kind in TriggerKind]


# -- pause -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(TriggerKind))
def test_a_paused_job_skips_every_arriving_trigger(kind: TriggerKind) -> None:
    """Whatever its kind and the policy, a trigger for a paused job is skipped as paused."""
    expected = Arrival(Decision.SKIP, reason="paused")
    assert expected == on_arrival(JobState(paused=True), trigger(kind, 1), ALLOW)


def test_pausing_skips_the_waiting_triggers() -> None:
    """Triggers waiting when the job is paused become skipped runs, not runs at resume."""
    job = Simulation(overlap(QUEUE))
    job.arrive(TIMER)
    job.arrive(WEBHOOK)
    job.pause()
    job.drain()
    job.resume()
    expected = ([["timer-1"]], [("webhook-2", SKIPPED_PAUSED)])
    assert expected == (runs_of(job), skipped_of(job))


def test_nothing_starts_on_a_paused_job() -> None:
    """A run ending on a paused job starts nothing, even with triggers waiting."""
    state = JobState(0, (trigger(TIMER, 1),), paused=True)
    assert not on_run_end(state, overlap(QUEUE))


# -- manual runs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "queue", "expected"),
    [
        (JobState(), False, None),
        (JobState(running=1), False, REFUSED_RUNNING),
        (JobState(running=1), True, None),
        (JobState(0, (trigger(MANUAL, 1),)), False, REFUSED_MANUAL_WAITING),
        (JobState(0, (trigger(MANUAL, 1),)), True, None),
        (JobState(0, (trigger(TIMER, 1),)), False, None),
        (JobState(paused=True), False, REFUSED_PAUSED),
        (JobState(paused=True), True, REFUSED_PAUSED),
        (JobState(running=1, in_backoff=True), False, REFUSED_RUNNING),
    ],
    ids=[
        "idle",
        "running",
        "running-queue",
        "manual-waiting",
        "manual-waiting-queue",
        "held-timer",
        "paused",
        "paused-queue",
        "in-backoff",
    ],
)
def test_manual_refusal(state: JobState, queue: bool, expected: str | None) -> None:
    """A manual run is refused when the job runs or a manual run waits, unless queued."""
    assert expected == manual_refusal(state, queue)


def test_a_refusal_reason_says_how_to_get_past_it() -> None:
    """The refusal the operator reads names the way out."""
    assert "queue" in REFUSED_RUNNING
    assert "queue" in REFUSED_MANUAL_WAITING
    assert "resume" in REFUSED_PAUSED


@pytest.mark.parametrize("policy", list(Overlap))
def test_a_queued_manual_run_waits_whatever_the_manual_policy(policy: Overlap) -> None:
    """--queue asks to wait behind the run going, so skip, replace and allow do not apply."""
    assert Arrival(Decision.WAIT) == on_arrival(JobState(1), trigger(MANUAL, 1), policy)


def test_a_waiting_manual_run_waits_for_the_job_to_be_idle() -> None:
    """Under allow, a queued manual run does not start beside the run it queued behind."""
    state = JobState(1, (trigger(MANUAL, 2),))
    assert not on_run_end(state, overlap(ALLOW))


def test_a_second_manual_run_is_refused_unless_queued() -> None:
    """Without --queue the request is refused; queued ones run together after the run."""
    job = Simulation(overlap(QUEUE))
    job.arrive(TIMER)
    answers = [job.ask_manual(queue=True), job.ask_manual(queue=False), job.ask_manual(True)]
    job.drain()
    expected = ([None, REFUSED_RUNNING, None], [["timer-1"], ["manual-2", "manual-3"]])
    assert expected == (answers, runs_of(job))


# -- retries ---------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", [QUEUE, SKIP])
def test_a_trigger_during_a_backoff_joins_the_retry(policy: Overlap) -> None:
    """Queued and skipping triggers meeting a run in backoff join its retry's batch."""
    state = JobState(running=1, in_backoff=True)
    assert Arrival(Decision.JOIN) == on_arrival(state, trigger(WEBHOOK, 2), policy)


def test_a_replacement_cancels_a_run_in_backoff() -> None:
    """Under replace the sleeping run is cancelled rather than retried."""
    state = JobState(running=1, in_backoff=True)
    expected = Arrival(Decision.REPLACE, reason=CANCELLED_REPLACED)
    assert expected == on_arrival(state, trigger(WEBHOOK, 2), REPLACE)


def test_allow_starts_beside_a_run_in_backoff() -> None:
    """Under allow a backoff is just another run going."""
    state = JobState(running=1, in_backoff=True)
    new = trigger(WEBHOOK, 2)
    assert Arrival(Decision.START, batch=Batch((new,))) == on_arrival(state, new, ALLOW)


def test_no_trigger_joins_a_retry_while_other_runs_go() -> None:
    """Joining would make the retry overlap the other runs, so the trigger waits."""
    state = JobState(running=2, in_backoff=True)
    assert Arrival(Decision.WAIT) == on_arrival(state, trigger(TIMER, 3), QUEUE)


def test_triggers_waiting_when_the_run_backs_off_join_the_retry() -> None:
    """The retry consumes what waited for its run, and what arrives during the backoff."""
    job = Simulation(overlap(QUEUE))
    job.arrive(TIMER)
    job.arrive(TIMER)
    job.fail_attempt()
    arrival = job.arrive(WEBHOOK)
    job.drain()
    expected = (Arrival(Decision.JOIN), [["timer-1", "timer-2", "webhook-3"]])
    assert expected == (arrival, runs_of(job))


def test_parallel_triggers_do_not_join_a_retry() -> None:
    """Under allow a waiting trigger keeps its own run."""
    waiting = (trigger(WEBHOOK, 2),)
    assert not on_backoff(JobState(1, waiting), overlap(ALLOW))


def test_nothing_joins_a_retry_when_several_runs_go() -> None:
    """With more than one run going, the waiting triggers keep waiting."""
    waiting = (trigger(TIMER, 3),)
    assert not on_backoff(JobState(2, waiting), overlap(ALLOW, timer=QUEUE))


# -- records refuse nonsense -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: JobState(running=-1), "running"),
        (lambda: JobState(in_backoff=True), "backoff"),
        (lambda: JobState(0, (trigger(TIMER, 2), trigger(TIMER, 1))), "acceptance order"),
        (lambda: Batch(()), "at least one"),
        (lambda: Batch((trigger(TIMER, 1), trigger(TIMER, 1))), "acceptance order"),
        (lambda: Arrival(Decision.START), "batch"),
        (lambda: Arrival(Decision.WAIT, batch=Batch((trigger(TIMER, 1),))), "batch"),
        (lambda: Arrival(Decision.SKIP), "reason"),
        (lambda: Arrival(Decision.JOIN, reason="x"), "reason"),
        (lambda: on_arrival(JobState(), trigger(TIMER, 1), QUEUE, max_parallel=0), "max_parallel"),
        (lambda: on_run_end(JobState(), overlap(), max_parallel=0), "max_parallel"),
        (
            lambda: on_arrival(JobState(1, (trigger(TIMER, 5),)), trigger(TIMER, 4), QUEUE),
            "not newer",
        ),
    ],
    ids=[
        "negative-running",
        "backoff-without-run",
        "waiting-out-of-order",
        "empty-batch",
        "batch-repeats",
        "start-without-batch",
        "wait-with-batch",
        "skip-without-reason",
        "join-with-reason",
        "arrival-zero-parallel",
        "run-end-zero-parallel",
        "older-arrival",
    ],
)
def test_inconsistent_values_are_refused(build: Callable[[], object], message: str) -> None:
    """Values the store could never hold raise at once instead of deciding nonsense."""
    with pytest.raises(ValueError, match=message):
        build()


# -- properties ------------------------------------------------------------------------------

Step = tuple[str, object]

arriving_kinds = st.sampled_from([kind for kind in TriggerKind if kind is not MANUAL])
policies = st.sampled_from(list(Overlap))
overlap_policies = st.builds(
    overlap, policies, **{kind.value: st.one_of(st.none(), policies) for kind in TriggerKind}
)


def steps(*names: str) -> st.SearchStrategy[list[Step]]:
    """Sequences of arrivals, manual requests (queued or not) and the named job events."""
    return st.lists(
        st.one_of(
            arriving_kinds.map(lambda kind: ("arrive", kind)),
            st.booleans().map(lambda queue: ("manual", queue)),
            st.sampled_from([(name, None) for name in names]),
        ),
        max_size=40,
    )


def play(job: Simulation, step: Step) -> None:
    """Apply one step if the job's state allows it (a run must be going to end, ...)."""
    name, value = step
    if name == "arrive":
        assert isinstance(value, TriggerKind)
        job.arrive(value)
    elif name == "manual":
        job.ask_manual(queue=bool(value))
    elif name == "end" and job.going:
        job.end()
    elif name == "fail" and len(job.going) == 1 and job.backoff is None:
        job.fail_attempt()
    elif name == "retry":
        job.backoff = None
    elif name == "pause" and not job.paused:
        job.pause()
    elif name == "resume" and job.paused:
        job.resume()


def check_bounds(job: Simulation) -> None:
    """What must hold after every step, whatever the policy."""
    assert len(job.going) <= job.max_parallel
    assert job.going or not job.waiting, "work waits on an idle job"


def check_every_trigger_accounted_once(job: Simulation) -> None:
    """After draining, each accepted trigger was consumed by one run or skipped, never both."""
    consumed = [t.id for run in job.runs for t in run]
    skipped = [t.id for t, _ in job.skipped]
    assert not job.waiting
    assert sorted(ids(job.accepted)) == sorted(consumed + skipped)


@given(steps("end", "fail", "retry"))
def test_under_queue_one_run_goes_one_waits_and_every_trigger_runs_once(
    plan: list[Step],
) -> None:
    """Under queue, whatever the order, one run is pending at most and no trigger is lost."""
    job = Simulation(overlap(QUEUE))
    for step in plan:
        play(job, step)
        check_bounds(job)
        assert len(job.going) <= 1
        assert len(on_run_end(JobState(0, tuple(job.waiting)), job.policy)) <= 1
    job.drain()
    check_every_trigger_accounted_once(job)
    assert not job.skipped


@given(overlap_policies, st.integers(1, 3), steps("end", "fail", "retry", "pause", "resume"))
def test_under_any_policy_every_trigger_runs_once_or_is_skipped(
    policy: OverlapSpec, max_parallel: int, plan: list[Step]
) -> None:
    """Mixed policies, pauses and retries never lose a trigger or exceed max_parallel."""
    job = Simulation(policy, max_parallel)
    for step in plan:
        play(job, step)
        check_bounds(job)
    job.drain()
    check_every_trigger_accounted_once(job)


@given(st.lists(st.sampled_from(list(TriggerKind)), min_size=1, max_size=8))
def test_the_reported_trigger_is_always_one_of_the_batch(kinds: list[TriggerKind]) -> None:
    """select_trigger picks from the batch, and a delivery whenever there is one."""
    batch = [trigger(kind, seq) for seq, kind in enumerate(kinds, start=1)]
    chosen = select_trigger(batch)
    assert chosen in batch
    assert any(t.kind.is_delivery for t in batch) == chosen.kind.is_delivery


@given(
    waiting=st.lists(st.sampled_from(list(TriggerKind)), max_size=6),
    running=st.integers(0, 5),
    in_backoff=st.booleans(),
    policy=st.sampled_from(list(Overlap)),
    kind=st.sampled_from(list(TriggerKind)),
    max_parallel=st.integers(1, 5),
)
def test_an_arrival_decides_the_same_from_the_newest_waiting_trigger_alone(
    waiting: list[TriggerKind], running: int, in_backoff: bool, policy: Overlap,
    kind: TriggerKind, max_parallel: int,
) -> None:
    """The engine passes only the newest waiting trigger to on_arrival; the decision must be
    the one the whole queue gives."""
    queue = tuple(Trigger(f"t{seq}", k, seq) for seq, k in enumerate(waiting, start=1))
    arriving = Trigger("new", kind, len(queue) + 1)
    backoff = in_backoff and running > 0
    whole = on_arrival(JobState(running, queue, in_backoff=backoff), arriving, policy,
                       max_parallel)
    newest = on_arrival(JobState(running, queue[-1:], in_backoff=backoff), arriving, policy,
                        max_parallel)
    assert whole == newest


def serial(seq: int) -> Trigger:
    """A backfill trigger under its default policy: allow, one run going at most."""
    return Trigger(f"backfill/{seq}", TriggerKind.MANUAL, seq, Overlap.ALLOW, 1)


def test_a_trigger_with_its_own_serial_policy_waits_behind_a_run_rather_than_refusing() -> None:
    """Its own allow of one run: with a run going it waits, whatever the job's allow says."""
    arrival = on_arrival(JobState(running=1), serial(2), Overlap.ALLOW, max_parallel=4)
    assert Decision.WAIT == arrival.decision


def test_serial_triggers_start_one_run_each_one_after_another() -> None:
    """Three waiting backfill triggers on an idle job: one run, for the oldest alone."""
    state = JobState(waiting=(serial(1), serial(2), serial(3)))
    batches = on_run_end(state, overlap(Overlap.QUEUE), max_parallel=4)
    assert [(serial(1),)] == [batch.triggers for batch in batches]


def test_a_trigger_with_its_own_queue_policy_coalesces_with_the_others() -> None:
    """Own queue: the waiting backfill triggers go into one run together."""
    own = [Trigger(f"b/{n}", TriggerKind.MANUAL, n, Overlap.QUEUE) for n in (1, 2, 3)]
    batches = on_run_end(JobState(waiting=tuple(own)), overlap(Overlap.ALLOW))
    assert [tuple(own)] == [batch.triggers for batch in batches]


def test_a_trigger_with_its_own_skip_policy_is_skipped_by_a_run_going() -> None:
    """Own skip beats the manual rule (a manual trigger otherwise arrives as queue)."""
    own = Trigger("b/2", TriggerKind.MANUAL, 2, Overlap.SKIP)
    assert Decision.SKIP == on_arrival(JobState(running=1), own, Overlap.QUEUE).decision


def test_only_serial_or_idle_waiting_triggers_run_alone() -> None:
    """runs_alone: serial and queue exclude other runs; a backfill under allow does not."""
    assert runs_alone(serial(1), Overlap.ALLOW)
    assert runs_alone(Trigger("m", TriggerKind.MANUAL, 1), Overlap.ALLOW)
    assert not runs_alone(Trigger("b", TriggerKind.MANUAL, 1, Overlap.ALLOW), Overlap.QUEUE)


def test_a_trigger_limit_goes_only_with_its_own_allow() -> None:
    """max_parallel on a trigger without its own allow is refused at construction."""
    with pytest.raises(ValueError, match="max_parallel"):
        Trigger("b", TriggerKind.MANUAL, 1, Overlap.QUEUE, 1)


@pytest.mark.parametrize("decision", list(Decision))
def test_a_dry_run_turns_a_start_into_a_wait_and_leaves_every_other_decision(
        decision: Decision) -> None:
    assert decision == dispatched(decision, True)
    expected = Decision.WAIT if decision is Decision.START else decision
    assert expected == dispatched(decision, False)


def test_a_replace_ends_a_run_in_backoff_at_once_and_stops_a_running_one() -> None:
    assert replaced_at_once(True)
    assert not replaced_at_once(False)


@given(
    st.lists(st.sampled_from([TIMER, WEBHOOK, EVENT, MANUAL, AFTER]), min_size=0, max_size=30),
    st.dictionaries(st.sampled_from(["timer", "webhook", "event", "manual", "after"]),
                    st.sampled_from([QUEUE, SKIP, REPLACE, ALLOW]), max_size=5),
    st.integers(0, 6), st.integers(1, 8), st.integers(1, 12),
)
def test_deciding_on_the_head_of_the_queue_gives_what_the_whole_queue_gives(
        kinds: list[TriggerKind], per_kind: dict[str, Overlap], running: int,
        max_parallel: int, head: int) -> None:
    """Over any queue, per-kind policies and slots, the head's answer is the whole queue's,
    or None (then the whole queue is asked); never a different set of runs."""
    policy = overlap(**per_kind)
    waiting = tuple(trigger(kind, seq) for seq, kind in enumerate(kinds))
    state = JobState(running=running, waiting=waiting)
    whole = on_run_end(state, policy, max_parallel)
    cut = JobState(running=running, waiting=waiting[:head])
    answer = on_run_end_of_head(cut, policy, max_parallel, whole=len(waiting) <= head)
    assert answer is None or answer == whole


def test_a_long_queue_of_parallel_triggers_is_decided_on_its_head() -> None:
    """allow with two slots free and a hundred webhooks waiting: the head of five decides;
    a queue whose head waits for an idle job needs the whole queue."""
    waiting = tuple(trigger(WEBHOOK, seq) for seq in range(100))
    policy = overlap(webhook=ALLOW)
    answer = on_run_end_of_head(JobState(running=2, waiting=waiting[:5]), policy, 4, whole=False)
    assert [["webhook-0"], ["webhook-1"]] == [ids(b.triggers) for b in answer or []]
    queued = on_run_end_of_head(JobState(running=0, waiting=waiting[:5]), overlap(), 4,
                                whole=False)
    assert queued is None
