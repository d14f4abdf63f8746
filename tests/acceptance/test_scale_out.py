"""Many real daemons on one PostgreSQL (SPEC §10): every slot fires once across all of them,
a lost node's runs are recorded and retried elsewhere within the bound, and a daemon that
lost its lease (killed, frozen, cut off) writes nothing stale.

Every daemon here is a real ``cronduit serve`` with a folder of its own, as on a host of its
own; what ran is counted from the jobs' own output files as well as from the tables. Leases
are short (3 s), so a takeover is due within seconds. Under CI (``CI=true``) a test fails,
never skips, when PostgreSQL (or what else it needs) is missing.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from cronduit.core.signing import webhook_token
from tests.acceptance.test_clock_steps import libfaketime
from tests.helpers.cluster import Cluster, Node, cluster_in
from tests.helpers.netns import hosts
from tests.helpers.postgres import URL, fresh_schema
from tests.helpers.private_postgres import private_server

LEASE = 3.0
"""Seconds of every node's lease in these tests."""
TAKEOVER_BOUND = LEASE + 10.0
"""The published bound: a lost node's runs are recorded and retried within lease + 10 s."""


def url_in(schema: str, base: str = URL) -> str:
    """The server's URL with ``schema`` first on the search path, as a config writes it."""
    return f"{base}?options=-csearch_path%3D{schema}"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with fresh_schema("mn") as schema, cluster_in(tmp_path, url_in(schema),
                                                   f"{LEASE:g}s") as made:
        yield made


TICK = """\
  tick:
    run: 'true'
    every: 1s
"""


def test_a_second_daemon_with_a_node_name_already_held_is_refused(cluster: Cluster) -> None:
    """The second ``alpha`` exits 3 with a line naming the node; the first keeps its lease
    (same epoch, renewed since) and keeps firing."""
    first = cluster.serve(cluster.node("alpha", TICK))
    cluster.wait_serving(first)
    held = cluster.node_row("alpha")
    assert held is not None
    second = cluster.serve(cluster.node("alpha", TICK, folder="alpha-again"))
    assert second.process is not None
    assert 3 == second.process.wait(timeout=30), second.log()
    assert "node alpha" in second.log()
    assert "listening on" not in second.log()
    refused_at = cluster.now()
    cluster.wait_for(lambda: (row := cluster.node_row("alpha")) is not None
                     and row["renewed_at"] > refused_at, "alpha to renew its lease")
    cluster.wait_for(lambda: any(run["created_at"] > refused_at and run["node"] == "alpha"
                                 and run["outcome"] == "success"
                                 for run in cluster.runs("tick")),
                     "alpha to run tick after the refusal")
    after = cluster.node_row("alpha")
    assert after is not None
    assert (held["epoch"], held["pid"], None) == (after["epoch"], after["pid"],
                                                  after["retired_at"])
    assert first.running()


def slow_job(out: Path) -> str:
    """A job whose first attempt runs for a minute and whose retry succeeds at once; each
    attempt writes its start (with the folder, hence the node, it ran in) and its end, or
    ``killed N`` when ended by SIGTERM."""
    return f"""\
  slow:
    run: >-
      trap 'echo "killed $CRONDUIT_ATTEMPT" >> {out}; exit 143' TERM;
      echo "start $CRONDUIT_ATTEMPT $PWD" >> {out};
      if [ "$CRONDUIT_ATTEMPT" = 1 ]; then sleep 60; fi;
      echo "end $CRONDUIT_ATTEMPT" >> {out}
    every: 1h
    retry: {{attempts: 2, backoff: 2s}}
"""


def test_a_killed_daemons_run_is_recorded_lost_and_retried_on_another_node(
        cluster: Cluster, tmp_path: Path) -> None:
    """SIGKILL the daemon whose run is going: its supervisor, which outlives it, ends the
    attempt as the lease runs out; within lease + 10 s another node records the attempt
    failed with reason ``node lost (node victim)``, in backoff; the retry runs on that
    other node (attempt 2), after the first attempt ended, and succeeds; the lost node is
    retired."""
    out = tmp_path / "slow.txt"
    victim = cluster.serve(cluster.node("victim", slow_job(out)))
    cluster.wait_for(lambda: [(r["node"], r["state"], r["pid"] is not None)
                              for r in cluster.runs("slow")] == [("victim", "running", True)],
                     "the run to go on the victim")
    survivor = cluster.serve(cluster.node("survivor", slow_job(out)))
    cluster.wait_serving(survivor)
    victim.kill()
    killed = time.monotonic()

    seen: list[dict[str, object]] = []

    def lost_in_backoff() -> bool:
        [run] = cluster.runs("slow")
        seen.append(run)
        return bool(run["state"] == "backoff")

    cluster.wait_for(lost_in_backoff, "the sweep to record the run lost", TAKEOVER_BOUND,
                     every=0.02)
    taken_over = time.monotonic() - killed
    run = seen[-1]
    assert str(run["reason"]).startswith("node lost"), run
    assert "victim" in str(run["reason"]), run
    assert (1, None) == (run["attempts"], run["outcome"]), run
    cluster.wait_for(lambda: [(r["state"], r["outcome"]) for r in cluster.runs("slow")]
                     == [("ended", "success")], "the retry to succeed")
    [done] = cluster.runs("slow")
    assert ("survivor", 2) == (done["node"], done["attempts"]), done
    assert [f"start 1 {victim.folder}", "killed 1", f"start 2 {survivor.folder}", "end 2"] \
        == out.read_text().splitlines()
    retired = cluster.node_row("victim")
    assert retired is not None
    assert (True, "survivor") == (retired["retired_at"] is not None, retired["retired_by"])
    assert taken_over <= TAKEOVER_BOUND
    print(f"takeover {taken_over:.1f}s after the SIGKILL (bound {TAKEOVER_BOUND:g}s)")


MANY = 200
"""One-second jobs in the exactly-once test: 200 firings and 200 processes a second."""
RECORD = """\
read -r t < "$CRONDUIT_TRIGGER_FILE"
s=${t#*'"slot": "'}
s=${s%%'"'*}
echo "$s $CRONDUIT_RUN_ID $PWD" >> "OUT/$CRONDUIT_JOB.txt"
"""
"""Each run appends one line to its job's own file: the slot (from the trigger file), the run
id and the folder it ran in (which says the node). Shell builtins only: 200 a second. The
jobs allow overlap, so each slot has a run of its own even when the machine is slow to see
the one before end (under the default ``queue`` a slot meeting a run going would join the
next run, recorded as ran, with no line of its own)."""


def many_jobs(out: Path, count: int = MANY) -> str:
    """``count`` one-second jobs, ``j000`` on, each recording its runs in ``out``."""
    record = "".join(f"      {line}\n" for line in RECORD.replace("OUT", str(out)).splitlines())
    jobs = [f"  j000:\n    every: 1s\n    overlap: allow\n    run: &record |\n{record}"]
    jobs += [f"  j{n:03d}: {{every: 1s, overlap: allow, run: *record}}\n"
             for n in range(1, count)]
    return "".join(jobs)


def whole_second(when: datetime) -> str:
    return when.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_three_daemons_run_every_slot_of_200_one_second_jobs_exactly_once(
        cluster: Cluster, tmp_path: Path) -> None:
    """Three daemons, 200 ``every: 1s`` jobs, 45 s of slots: each job's output file, its slot
    ledger and its runs agree, one line, one ledger row and one run per second from two
    seconds after all three serve to the last settled slot, none twice, none missing;
    every daemon ran some. (Before that, the first firings may come a second late while
    three daemons start on two cores: an interval job's next slot then counts from the
    late firing, as the time rules say, and is checked for doubles only.)"""
    out = tmp_path / "out"
    out.mkdir()
    names = ("n1", "n2", "n3")
    nodes = [cluster.serve(cluster.node(name, many_jobs(out))) for name in names]
    cluster.wait_serving(*nodes)
    begun = time.monotonic()
    steady = whole_second(cluster.now() + timedelta(seconds=2))
    cluster.wait_for(lambda: cluster.query(
        "SELECT count(*) FROM slots WHERE slot > (SELECT min(slot) FROM slots) + interval '45s'"
    )[0][0] >= MANY, "45 s of slots", 70)
    # On a slow machine the launches fall behind the firings: the check ends before the
    # first slot whose run had not ended at the stop, so wait until the first 24 s are done.
    cluster.wait_for(lambda: cluster.query(
        "SELECT count(*) FROM slots s JOIN events e ON e.seq = s.event_seq "
        "LEFT JOIN runs r ON r.id = e.run_id "
        "WHERE s.slot <= %s::timestamptz + interval '24s' "
        "AND (r.id IS NULL OR r.state <> 'ended')", steady) == [(0,)],
        "the runs of the first 24 s of slots ended", 90)
    settled = stop_all(cluster)
    loaded = time.monotonic() - begun
    assert len(_seconds(steady, settled)) >= 20, (steady, settled)
    ran_on, late = each_slot_once(cluster, out, MANY, steady, settled)
    assert set(names) == set(ran_on), ran_on
    print(f"{sum(ran_on.values())} slots checked ({steady} to {settled}) over {loaded:.0f}s "
          f"of load; per node {dict(sorted(ran_on.items()))}; latest firing "
          f"{late.total_seconds():.2f}s after its slot")


def stop_all(cluster: Cluster) -> str:
    """SIGTERM every daemon and wait for each to exit 0; the last slot whose run has surely
    ended and been recorded (slots from seconds before the stop may not have)."""
    stopped_at = cluster.now()
    for node in cluster.nodes.values():
        node.signal(signal.SIGTERM)
    for node in cluster.nodes.values():
        assert node.process is not None
        assert 0 == node.process.wait(timeout=30), node.log()
    last = stopped_at - timedelta(seconds=4)
    # On a loaded machine launches fall behind: a run started before the stop may not have
    # ended (and been recorded) by then; it is left for the next daemon to adopt, so the
    # check ends before the first slot whose run had not ended.
    (unended,) = cluster.query(
        "SELECT min(s.slot) FROM slots s JOIN events e ON e.seq = s.event_seq "
        "JOIN runs r ON r.id = e.run_id WHERE r.state <> 'ended'")[0]
    if unended is not None:
        last = min(last, unended - timedelta(seconds=1))
    return whole_second(last)


LATE_SHARE = 0.10
"""The share of slots whose firing may come so late (a second or more, on a machine busy
with more than the test, or as slow as some of this kind are) that the next second was no
slot, or was recorded missed for it."""


def each_slot_once(cluster: Cluster, out: Path, jobs: int, steady: str,
                   settled: str) -> tuple[Counter[str], timedelta]:
    """Check the ``jobs`` jobs of :func:`many_jobs` against their output files: no slot ran
    twice, every line's slot is in the ledger, and every second from ``steady`` to
    ``settled`` is in the ledger as ran, with one run that succeeded, on the node in
    whose folder the line was written. How many slots each node ran, and the latest any
    of them fired after its slot (by the database's clock).

    A second is no slot only where the time rules say so: an interval job's next slot is
    ``every`` after its slot, or after the firing if that came later, so a second that
    had passed when the slot before it fired was never a slot. Those are counted, and
    allowed on at most :data:`LATE_SHARE` of the slots."""
    ledger = cluster.rows(
        "SELECT s.job, s.slot, s.fate, s.reason, s.recorded_at, r.id AS run, r.node, "
        "r.outcome "
        "FROM slots s LEFT JOIN events e ON e.seq = s.event_seq "
        "LEFT JOIN runs r ON r.id = e.run_id ORDER BY s.job, s.slot")
    by_job: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in ledger:
        by_job[row["job"]].append(row)
    runs_per_event = cluster.query(
        "SELECT count(*) FROM runs GROUP BY trigger_seq HAVING count(*) > 1")
    assert [] == runs_per_event, "an event started two runs"
    ran_on: Counter[str] = Counter()
    problems: list[str] = []
    expected = _seconds(steady, settled)
    late_gaps = 0
    for n in range(jobs):
        job = f"j{n:03d}"
        lines = [line.split() for line in (out / f"{job}.txt").read_text().splitlines()]
        slots = [slot for slot, _, _ in lines]
        if len(set(slots)) != len(slots):
            problems.append(f"{job}: a slot ran twice: {Counter(slots).most_common(2)}")
        recorded = {whole_second(row["slot"]): row for row in by_job[job]}
        unrecorded = [slot for slot in slots if slot not in recorded]
        if unrecorded:
            problems.append(f"{job}: ran slots the ledger lacks: {unrecorded[:3]}")
        fired_at = sorted((whole_second(row["slot"]), row["recorded_at"])
                          for row in by_job[job])
        skipped = [slot for slot in expected if (slot not in recorded
                   and _passed_when_the_slot_before_fired(slot, fired_at))
                   or _missed_for_a_late_firing(recorded.get(slot))]
        late_gaps += len(skipped)
        missing = [slot for slot in expected if slot not in skipped and (
            slot not in recorded or recorded[slot]["fate"] != "ran")]
        if missing:
            problems.append(f"{job}: slots not run between {steady} and {settled}: "
                            f"{[(s, recorded.get(s, {}).get('reason')) for s in missing[:3]]}")
        written = {slot: (run, folder) for slot, run, folder in lines}
        for slot in expected:
            fired = recorded.get(slot)
            if slot in skipped:  # no slot, or one missed for a late firing: nothing ran
                if slot in written:
                    problems.append(f"{job} {slot}: ran, though its slot was not run")
                continue
            if fired is None:
                continue
            if written.get(slot, ("", ""))[0] != fired["run"] or fired["outcome"] != "success":
                problems.append(f"{job} {slot}: the run {fired['run']} ({fired['outcome']}) "
                                f"is not the one that wrote {written.get(slot)}")
            elif Path(written[slot][1]).name != fired["node"]:
                problems.append(f"{job} {slot}: ran in {written[slot][1]}, "
                                f"recorded on {fired['node']}")
            else:
                ran_on[fired["node"]] += 1
    late = max(row["recorded_at"] - row["slot"] for row in ledger
               if steady <= whole_second(row["slot"]) <= settled)
    assert [] == problems[:20], f"{len(problems)} problems; latest firing {late}"
    assert late_gaps <= LATE_SHARE * jobs * len(expected), \
        f"{late_gaps} seconds were no slot, their slot before having fired late"
    if late_gaps:
        print(f"{late_gaps} seconds were no slot: the slot before fired a second late")
    return ran_on, late


def _missed_for_a_late_firing(row: dict[str, Any] | None) -> bool:
    """A second the ledger records as missed because the job's timer fired a second or more
    late (an interval job runs once, not a burst: the time rules), with that reason: no slot
    lost, a machine too busy to fire on time."""
    return row is not None and row["fate"] == "missed" and "fired" in (row["reason"] or "") \
        and "late" in (row["reason"] or "")


def _passed_when_the_slot_before_fired(second: str, fired_at: list[tuple[str, datetime]]
                                       ) -> bool:
    before = [at for slot, at in fired_at if slot < second]
    return bool(before) and whole_second(before[-1]) >= second


def _seconds(first: str, last: str) -> list[str]:
    """Every whole second from ``first`` to ``last`` (both included), as slot names."""
    start = datetime.strptime(first, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    end = datetime.strptime(last, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return [whole_second(start + timedelta(seconds=n))
            for n in range(int((end - start).total_seconds()) + 1)]


def trapped_job(out: Path, go: Path) -> str:
    """A job whose attempts each write their start (with the folder, hence the node), wait
    for the file ``go``, and write their end; one ended by SIGTERM writes ``killed N``."""
    return f"""\
  long:
    run: >-
      trap 'echo "killed $CRONDUIT_ATTEMPT" >> {out}; exit 143' TERM;
      echo "start $CRONDUIT_ATTEMPT $PWD" >> {out};
      while [ ! -e {go} ]; do sleep 0.1; done;
      echo "end $CRONDUIT_ATTEMPT" >> {out}
    every: 1h
    retry: {{attempts: 2, backoff: 1s}}
{TICK}"""


def test_a_daemon_frozen_past_its_lease_writes_nothing_stale_and_its_run_ends_first(
        cluster: Cluster, tmp_path: Path) -> None:
    """SIGSTOP the daemon whose run is going, past its lease: another node records the run
    lost and retries it. The frozen daemon's supervisor, not frozen, ended the first attempt
    (its TERM trap wrote ``killed 1``) before the retry started elsewhere. On SIGCONT the
    daemon finds its lease lost, takes its node again with a new epoch, and changes
    nothing it wrote about under the old one: the run keeps the survivor's record, and no
    run of its node was created while it was fenced."""
    out, go = tmp_path / "long.txt", tmp_path / "go"
    victim = cluster.serve(cluster.node("victim", trapped_job(out, go)))
    cluster.wait_for(lambda: [(r["node"], r["state"], r["pid"] is not None)
                              for r in cluster.runs("long")] == [("victim", "running", True)],
                     "the run to go on the victim")
    survivor = cluster.serve(cluster.node("survivor", trapped_job(out, go)))
    cluster.wait_serving(survivor)
    victim.signal(signal.SIGSTOP)
    frozen = time.monotonic()
    held = cluster.node_row("victim")
    assert held is not None

    cluster.wait_for(lambda: [(r["node"], r["attempts"], r["pid"] is not None)
                              for r in cluster.runs("long")] == [("survivor", 2, True)],
                     "the retry to go on the survivor", TAKEOVER_BOUND + 2)
    retried = time.monotonic() - frozen
    [taken] = cluster.runs("long")
    lost = cluster.node_row("victim")
    assert lost is not None
    assert "survivor" == lost["retired_by"]
    fenced_from = lost["expires_at"]

    victim.signal(signal.SIGCONT)
    cluster.wait_for(lambda: "lease taken again" in victim.log(), "the victim to take its "
                     "node again", 20)
    again = cluster.node_row("victim")
    assert again is not None
    assert (held["epoch"] + 1, None) == (again["epoch"], again["retired_at"])
    renewed = again["renewed_at"]
    cluster.wait_for(lambda: (row := cluster.node_row("victim")) is not None
                     and row["renewed_at"] > renewed, "the victim to renew its new lease")
    # Two turns of its loop under the new epoch: what it kept from before the freeze (the
    # first attempt's end, its launches) has been acted on by now.
    cluster.wait_for(lambda: any(r["node"] == "victim" and r["created_at"] > renewed
                                 for r in cluster.runs("tick")),
                     "the victim to run ticks again")
    assert [taken] == cluster.runs("long"), "the frozen daemon changed the survivor's run"
    stale = cluster.query("SELECT id, job, created_at FROM runs WHERE node = 'victim' "
                          "AND created_at >= %s AND created_at < %s",
                          fenced_from, again["started_at"])
    assert [] == stale
    assert f"node victim: lease taken again (epoch {held['epoch'] + 1})" in victim.log()

    go.touch()
    cluster.wait_for(lambda: [(r["state"], r["outcome"]) for r in cluster.runs("long")]
                     == [("ended", "success")], "the retry to succeed")
    [done] = cluster.runs("long")
    assert ("survivor", 2) == (done["node"], done["attempts"])
    print(f"retried on the survivor {retried:.1f}s after the SIGSTOP "
          f"(bound {TAKEOVER_BOUND:g}s)")
    lines = out.read_text().splitlines()
    assert f"start 1 {victim.folder}" == lines[0]
    assert "killed 1" in lines, f"the victim's supervisor did not end attempt 1: {lines}"
    assert lines.index("killed 1") < lines.index(f"start 2 {survivor.folder}"), lines
    assert retried <= TAKEOVER_BOUND


SKEWED = 20
"""One-second jobs in the clock-skew test."""


def test_daemons_whose_clocks_are_ten_minutes_off_fire_every_slot_once_on_time(
        cluster: Cluster, tmp_path: Path) -> None:
    """Beside a daemon on the real clock, one whose wall clock is 10 minutes ahead and one
    10 minutes behind (libfaketime; the one ahead has its monotonic clock moved too, as
    libfaketime does by default): for 20 s of one-second slots, every slot fires once, on
    time by the database's clock, all three fire some, and none loses its lease. A daemon
    that compared due times or leases on its own clock would fire 10 minutes early, or
    never, or see its lease expired."""
    library = libfaketime()
    out = tmp_path / "out"
    out.mkdir()
    skews = {"exact": {}, "ahead": {"FAKETIME": "+10m"},
             "behind": {"FAKETIME": "-10m", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}}
    nodes = []
    for name, skew in skews.items():
        env = {"LD_PRELOAD": library, "FAKETIME_NO_CACHE": "1", **skew} if skew else {}
        nodes.append(cluster.serve(cluster.node(name, many_jobs(out, SKEWED)), env=env))
    cluster.wait_serving(*nodes)
    faked = {node.name for node in nodes
             if library in Path(f"/proc/{node.pid}/maps").read_text()}
    assert {"ahead", "behind"} == faked, "libfaketime is not loaded where it should be"
    steady = whole_second(cluster.now() + timedelta(seconds=2))
    # A second's slots tend to fire in one batch on one daemon: wait until each has had some
    # whose slot is old enough to fall inside the window checked (it ends seconds before the
    # stop), not only a run in the last seconds before it.
    cluster.wait_for(lambda: cluster.query(
        "SELECT count(*) FROM slots WHERE slot >= %s::timestamptz + interval '20s'", steady
    )[0][0] >= SKEWED and cluster.query(
        "SELECT count(DISTINCT r.node) FROM slots s JOIN events e ON e.seq = s.event_seq "
        "JOIN runs r ON r.id = e.run_id WHERE r.state = 'ended' AND s.slot >= %s "
        "AND s.slot <= now() - interval '6s'", steady) == [(len(skews),)],
        "20 s of slots, some run on each daemon", 120)
    settled = stop_all(cluster)
    ran_on, late = each_slot_once(cluster, out, SKEWED, steady, settled)
    assert set(skews) == set(ran_on), ran_on
    assert timedelta(0) <= late < timedelta(seconds=1), "a slot fired late, or early"
    early = cluster.query("SELECT count(*) FROM slots WHERE recorded_at < slot")
    assert [(0,)] == early
    for node in nodes:
        stamped = datetime.fromisoformat(node.log().split(" ", 1)[0])
        assert abs(stamped - cluster.now()) < timedelta(minutes=2), \
            f"{node.name} logs on its own clock: {stamped}"
        row = cluster.node_row(node.name)
        assert row is not None
        assert (1, None) == (row["epoch"], row["retired_at"]), row
        assert "lease" not in node.log().replace("lease taken (epoch 1", ""), node.log()
    print(f"{sum(ran_on.values())} slots on skewed clocks; per node "
          f"{dict(sorted(ran_on.items()))}; latest firing {late.total_seconds():.2f}s "
          "after its slot")


HOOK_SECRET = "hook-secret-scale-out"


def outage_jobs(out: Path) -> str:
    """A webhook job and a one-second timer, each run writing a line that names it (a
    tick's line also has its slot and when it started, by the machine's clock)."""
    return f"""\
  poke:
    run: 'echo "$CRONDUIT_RUN_ID" >> {out}/pokes.txt'
    webhook: true
    overlap: allow
  tick:
    run: |
      read -r t < "$CRONDUIT_TRIGGER_FILE"
      s=${{t#*'"slot": "'}}
      echo "$CRONDUIT_RUN_ID ${{s%%'"'*}} $(date -u +%s.%N)" >> {out}/ticks.txt
    every: 1s
    overlap: allow
"""


class Webhooks:
    """Webhooks posted to each daemon from a thread of its own, one after another, each
    answer kept."""

    def __init__(self, urls: list[str]) -> None:
        self.answers: list[tuple[float, str, int, str | None]] = []
        """(when, daemon, status, delivery id of a 202) for each webhook posted."""
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._post, args=(url,), daemon=True)
                         for url in urls]

    def __enter__(self) -> Webhooks:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def _post(self, url: str) -> None:
        token = webhook_token(HOOK_SECRET, "poke")
        with httpx.Client(timeout=30) as client:
            for n in range(10_000):  # bounded: ends with the test, or at this count
                if self._stop.is_set():
                    return
                answer = client.post(f"{url}/hooks/poke/{token}", content=b"{}",
                                     headers={"Idempotency-Key": f"{url}-{n}"})
                delivery = answer.json().get("delivery_id") if answer.status_code == 202 \
                    else None
                self.answers.append((time.monotonic(), url, answer.status_code, delivery))
                time.sleep(0.02)

    def statuses(self, since: float = 0.0) -> Counter[int]:
        return Counter(status for at, _, status, _ in list(self.answers) if at >= since)


def test_a_postgresql_restart_under_load_loses_nothing_and_runs_nothing_twice(
        tmp_path: Path) -> None:
    """Two daemons on a server of the test's own, webhooks arriving all along and a timer
    every second; the server stops (a fast shutdown) and comes back once webhooks are
    answered 503. Every answer is 202 or 503, never 202 without a commit: each 202's
    delivery is in the events table and ran once; the daemons reconnect by themselves and
    carry on (ticks and 202s after the restart on both); each logs a line as the outage
    begins and one as it ends, not one per failed attempt."""
    out = tmp_path / "out"
    out.mkdir()
    with private_server() as server:
        with psycopg.connect(server.url, autocommit=True) as db:
            db.execute("CREATE SCHEMA mn_restart")
        with cluster_in(tmp_path, url_in("mn_restart", server.url), "30s") as cluster:
            settings = "  webhook_secret: HOOK_KEY\n"
            nodes = [cluster.serve(cluster.node(name, outage_jobs(out), settings=settings),
                                   env={"HOOK_KEY": HOOK_SECRET}) for name in ("w1", "w2")]
            cluster.wait_serving(*nodes)
            with Webhooks([node.url() for node in nodes]) as hooks:
                cluster.wait_for(lambda: hooks.statuses()[202] >= 20, "webhooks accepted")
                server.stop()
                down = time.monotonic()
                cluster.wait_for(lambda: all(sum(status == 503 and url == node.url()
                                                 for _, url, status, _ in hooks.answers) >= 1
                                             for node in nodes),
                                 "both daemons to answer 503", 60)
                time.sleep(max(0.0, 3.0 - (time.monotonic() - down)))  # down 3 s at least
                outage = time.monotonic() - down
                server.start()
                up = time.monotonic()
                cluster.wait_for(lambda: all(any(at > up and status == 202 and url == node.url()
                                                 for at, url, status, _ in hooks.answers)
                                             for node in nodes),
                                 "both daemons to accept webhooks again", 40)
                recovered = time.monotonic() - up
            stopped = time.monotonic()  # no webhook is posted from here on
            restarted_at = cluster.now()
            cluster.wait_for(lambda: cluster.query(
                "SELECT count(DISTINCT node) FROM runs WHERE job = 'tick' AND created_at > %s "
                "AND state = 'ended'", restarted_at) == [(2,)],
                "both daemons to run ticks after the restart", 30)
            accepted = [delivery for _, _, status, delivery in hooks.answers if status == 202]
            cluster.wait_for(lambda: len(lines(out / "pokes.txt")) >= len(accepted),
                             "every accepted webhook to run", 60,
                             explain=lambda: unran(cluster, accepted, out / "pokes.txt"))
            drained = time.monotonic() - stopped
            stop_all(cluster)

            assert {202, 503} >= set(hooks.statuses()), hooks.statuses()
            stored = {row[0] for row in cluster.query(
                "SELECT delivery_id FROM events WHERE job = 'poke'")}
            assert [] == [d for d in accepted if d not in stored], "a 202 without a commit"
            assert len(set(accepted)) == len(accepted)
            pokes = lines(out / "pokes.txt")
            ticks = lines(out / "ticks.txt")
            assert len(set(pokes)) == len(pokes), "a webhook's run ran twice"
            assert len({tick.split()[0] for tick in ticks}) == len(ticks), "a tick ran twice"
            early = [tick for tick in ticks if float(tick.split()[2]) < datetime.strptime(
                tick.split()[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()]
            assert [] == early, "ticks started before their slot"
            assert len(pokes) == len(accepted), (len(pokes), len(accepted))
            doubled = cluster.query("SELECT trigger_seq FROM runs GROUP BY trigger_seq "
                                    "HAVING count(*) > 1")
            assert [] == doubled
            for node in nodes:
                log = node.log()
                foreign = [line for line in log.splitlines() if not STAMPED.match(line)]
                assert [] == foreign[:5], f"{node.name} logged lines not its own"
                outage_lines = [line for line in log.splitlines() if "unavailable" in line]
                back = [line for line in log.splitlines() if "again after" in line]
                # The engine and the HTTP acceptor each say so once as the outage begins
                # (once more if its reason changes) and once as it ends.
                assert 2 <= len(outage_lines) <= 4, "\n".join(outage_lines)
                assert 2 == len(back), "\n".join(back)
    print(f"{hooks.statuses()} answers; 503s for {outage:.1f}s of outage; both accepting "
          f"again {recovered:.1f}s after the server started; every accepted webhook's run "
          f"had written its line {drained:.1f}s after the last was posted")


def unran(cluster: Cluster, accepted: list[str | None], pokes: Path) -> str:
    """What each accepted delivery whose run wrote no line became: its event's state and
    its run's, with when each step was recorded, for a failure's message."""
    ran = set(lines(pokes))
    rows = cluster.rows(
        "SELECT e.delivery_id, e.seq, e.state AS event, e.accepted_at, e.run_id, "
        "r.state AS run, r.node, r.attempts, r.pid, r.created_at, r.started_at, "
        "r.finished_at, r.outcome, r.reason, r.attempt_dir "
        "FROM events e LEFT JOIN runs r ON r.id = e.run_id WHERE e.job = 'poke' "
        "ORDER BY e.seq")
    found = {row["delivery_id"]: row for row in rows}
    missing = [delivery for delivery in accepted if delivery not in found]
    stranded = [found[delivery] for delivery in accepted
                if delivery in found and found[delivery]["run_id"] not in ran]
    extra = [row["delivery_id"] for row in rows if row["delivery_id"] not in accepted]
    states = Counter((row["event"], row["run"]) for row in rows)
    return (f"{len(accepted)} accepted, {len(ran)} ran; (event, run) states {dict(states)}; "
            f"accepted but not stored: {missing[:5]}; stored but not accepted: {extra[:5]}; "
            f"{len(stranded)} accepted without a line of their run:\n"
            + "\n".join(str(row) for row in stranded[:10]))


STAMPED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ")
"""How every line the daemon itself logs begins."""


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_a_daemon_cut_off_from_the_database_has_its_run_ended_and_taken_over(
        tmp_path: Path) -> None:
    """Two daemons on hosts of their own (network namespaces) and the database on a third;
    the link of the daemon whose run is going is cut, so its packets are lost. Its
    supervisor ends the run before its lease runs out (``killed 1``, before the retry's
    start), the other daemon records it lost and retries it within lease + 10 s; when the
    link comes back, the cut-off daemon takes its node again with a new epoch and changes
    nothing it wrote about under the old one."""
    out, go = tmp_path / "long.txt", tmp_path / "go"
    with hosts(2) as network:
        listen = ",".join(network.database_address(i) for i in range(2))
        with private_server(listen, network.wrap(network.database)) as server:
            with psycopg.connect(server.socket_conninfo, autocommit=True) as db:
                db.execute("CREATE SCHEMA mn_partition")
            queries = f"{server.socket_conninfo} options=-csearch_path=mn_partition"
            with cluster_in(tmp_path, queries, f"{LEASE:g}s") as cluster:
                nodes = []
                for index, name in enumerate(("left", "right")):
                    url = url_in("mn_partition", server.url_at(network.database_address(index)))
                    nodes.append(cluster.node(name, trapped_job(out, go), url=url))
                left = cluster.serve(nodes[0], wrap=network.wrap(network.daemons[0]))
                cluster.wait_for(lambda: [(r["node"], r["state"], r["pid"] is not None)
                                          for r in cluster.runs("long")]
                                 == [("left", "running", True)], "the run to go on the left")
                right = cluster.serve(nodes[1], wrap=network.wrap(network.daemons[1]))
                cluster.wait_serving(right)
                held = cluster.node_row("left")
                assert held is not None

                network.cut(0)
                cut = time.monotonic()
                cluster.wait_for(lambda: [(r["node"], r["attempts"], r["pid"] is not None)
                                          for r in cluster.runs("long")]
                                 == [("right", 2, True)], "the retry to go on the right",
                                 TAKEOVER_BOUND + 2)
                retried = time.monotonic() - cut
                [taken] = cluster.runs("long")
                lost = cluster.node_row("left")
                assert lost is not None
                assert "right" == lost["retired_by"]

                network.mend(0)
                cluster.wait_for(lambda: "lease taken again" in left.log(),
                                 "the left to take its node again", 60)
                again = cluster.node_row("left")
                assert again is not None
                assert (held["epoch"] + 1, None) == (again["epoch"], again["retired_at"])
                cluster.wait_for(lambda: any(r["node"] == "left"
                                             and r["created_at"] > again["started_at"]
                                             for r in cluster.runs("tick")),
                                 "the left to run ticks again", 30)
                assert [taken] == cluster.runs("long"), "the cut-off daemon changed the run"
                stale = cluster.query("SELECT id FROM runs WHERE node = 'left' AND "
                                      "created_at >= %s AND created_at < %s",
                                      lost["expires_at"], again["started_at"])
                assert [] == stale
                go.touch()
                cluster.wait_for(lambda: [(r["state"], r["outcome"])
                                          for r in cluster.runs("long")]
                                 == [("ended", "success")], "the retry to succeed")
                lines = out.read_text().splitlines()
    print(f"retried on the right {retried:.1f}s after the cut (bound {TAKEOVER_BOUND:g}s)")
    assert f"start 1 {left.folder}" == lines[0]
    assert "killed 1" in lines, f"the left's supervisor did not end attempt 1: {lines}"
    assert lines.index("killed 1") < lines.index(f"start 2 {right.folder}"), lines
    assert retried <= TAKEOVER_BOUND


def sessions(cluster: Cluster, *frozen: Node) -> str:
    """The daemons' database sessions (how long each has been in its state, what it waits
    on), the locks not granted, the locks held on ``nodes`` rows, the nodes' leases by the
    database's clock and the process state of each ``frozen`` daemon: what a takeover that
    did not come in time was held up by."""
    rows = cluster.query(
        "SELECT application_name, pid, state, wait_event_type, wait_event, "
        "now() - xact_start, clock_timestamp() - state_change, left(query, 120) "
        "FROM pg_stat_activity WHERE application_name IN ('victim', 'survivor') ORDER BY 1, 2")
    waiting = cluster.query(
        "SELECT a.application_name, l.locktype, l.relation::regclass::text, l.mode, "
        "pg_blocking_pids(l.pid) FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
        "WHERE NOT l.granted")
    row_locks = cluster.query(
        "SELECT a.application_name, a.pid, l.mode FROM pg_locks l "
        "JOIN pg_stat_activity a USING (pid) WHERE l.relation = 'nodes'::regclass")
    leases = cluster.query(
        "SELECT name, epoch, expires_at - clock_timestamp(), retired_at, retired_by "
        "FROM nodes ORDER BY name")
    processes = []
    for node in frozen:
        status = Path(f"/proc/{node.pid}/status")
        state = next((line for line in status.read_text().splitlines()
                      if line.startswith("State:")), "?") if status.exists() else "gone"
        processes.append(f"{node.name} (pid {node.pid}): {state}")
    return "\n".join([
        "sessions:", *map(str, rows), "waiting for locks:", *map(str, waiting),
        "locks on nodes:", *map(str, row_locks), "leases:", *map(str, leases),
        "processes:", *processes])


def test_a_daemon_frozen_inside_a_transaction_is_still_taken_over(cluster: Cluster,
                                                                   tmp_path: Path) -> None:
    """SIGSTOP the daemon at a moment one of its transactions is open (its session idle
    in transaction, as the database sees it): the locks it holds (its node's row, the
    timers it claimed) must not keep the other daemon from sweeping the node, nor from
    firing those timers, beyond the bound: within lease + 10 s the node is retired and
    every job has fired on the survivor."""
    out = tmp_path / "out"
    out.mkdir()
    jobs = many_jobs(out, SKEWED)
    victim = cluster.serve(cluster.node("victim", jobs), env={"PGAPPNAME": "victim"})
    survivor = cluster.serve(cluster.node("survivor", jobs), env={"PGAPPNAME": "survivor"})
    cluster.wait_serving(victim, survivor)

    def open_transactions() -> int:
        [(count,)] = cluster.query(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'victim' "
            "AND state = 'idle in transaction'")
        return int(count)

    deadline = time.monotonic() + 30
    while True:
        victim.signal(signal.SIGSTOP)
        if open_transactions():
            break
        victim.signal(signal.SIGCONT)
        assert time.monotonic() < deadline, "never caught the daemon inside a transaction"
        time.sleep(0.003)
    frozen, frozen_at = time.monotonic(), cluster.now()
    cluster.wait_for(lambda: (row := cluster.node_row("victim")) is not None
                     and row["retired_by"] == "survivor", "the survivor to sweep the victim",
                     TAKEOVER_BOUND, explain=lambda: sessions(cluster, victim))
    cluster.wait_for(lambda: cluster.query(
        "SELECT count(DISTINCT job) FROM runs WHERE node = 'survivor' AND created_at > %s",
        frozen_at) == [(SKEWED,)], "every job to fire on the survivor",
        TAKEOVER_BOUND - (time.monotonic() - frozen), explain=lambda: sessions(cluster, victim))
    print(f"swept and every job fired {time.monotonic() - frozen:.1f}s after freezing the "
          "daemon inside a transaction")


def talking_job(go: Path) -> str:
    """A job that runs on node ``b`` only: it says ``first``, waits for ``go`` to exist,
    then says ``second``."""
    return f"""\
  talk:
    run: >-
      echo first;
      while [ ! -e {go} ]; do sleep 0.05; done;
      echo second
    every: 1h
    nodes: [b]
"""


def test_a_run_going_on_another_host_is_followed_live_through_any_daemon(
        cluster: Cluster, tmp_path: Path) -> None:
    """Node a's API follows a run going on node b: b's daemon is asked for the log and its
    lines come through a as b writes them (``first`` before the run is let go on; the tail
    stored with the run comes only as it ends), then the end."""
    go = tmp_path / "go"
    b = cluster.serve(cluster.node("b", talking_job(go)))
    cluster.wait_for(lambda: [(r["node"], r["state"]) for r in cluster.runs("talk")]
                     == [("b", "running")], "the run to go on node b")
    a = cluster.serve(cluster.node("a", talking_job(go)))
    cluster.wait_serving(a, b)
    [run] = cluster.runs("talk")
    seen: list[str] = []
    deadline = time.monotonic() + 20  # a follow that is not relayed says only keep-alives
    with httpx.Client(timeout=30) as client, client.stream(
            "GET", f"{a.url()}/v1/runs/{run['id']}/log", params={"follow": "1"}) as answer:
        assert 200 == answer.status_code
        for line in answer.iter_lines():
            seen.append(line)
            assert time.monotonic() < deadline, f"no line through node a: {seen}"
            if line == "data: first":
                assert not go.exists()
                assert [("running", None)] == [(r["state"], r["outcome"])
                                               for r in cluster.runs("talk")]
                go.touch()
            if line.startswith("data: {"):
                break
    assert ["data: first", "data: second", "event: end"] == [
        line for line in seen if line and not line.startswith(":")][:3]
    assert "success" in seen[-1], seen
