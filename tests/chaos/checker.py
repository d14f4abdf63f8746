"""The invariant checker: after the drain, read the store and the jobs' own output files and
count what went wrong.

* **lost**: a trigger a daemon said it accepted (202, 201, or ``job run`` printing its
  delivery id) that is not in the store; or any event in the store that no ended run
  consumed (still new or waiting, unmatched although its job exists, or linked to a run that
  is missing or not ended).
* **doubled**: one delivery id in the start lines of two different runs (a slot, webhook,
  push or manual request executed twice); or two timer events for one slot.
* **relaunched**: one attempt (run id and attempt number) started twice, or ended twice.
* **misrecorded**: a run whose record disagrees with what its job wrote: an exit status other
  than the one its job said it exits with, an outcome that contradicts the exit status, a
  skipped run that ran, an attempt the record does not count, an earlier attempt that
  succeeded although the run was retried, a run the store does not have, a run not ended,
  or a timer event without its slot in the ledger.
* **unknowable** (counted apart, not an error): a run recorded without an exit status (as
  vanished; or as timed out or cancelled, when cronduit had asked it to stop) whose attempt
  was held by a supervisor the harness itself SIGKILLed. cronduit documents that it cannot learn
  such a job's exit status (docs/runs.md, "Surviving the daemon"); the harness knows which
  attempts those are because it froze the supervisor and read which attempt files it held
  open before killing it.

Plus ``PRAGMA integrity_check`` and no ``Traceback`` in any daemon log.
"""

from __future__ import annotations

import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from tests.chaos.load import Accepted

KILLED = (137, 143)
"""Exit statuses of a job that TERM or KILL ended before it could say (128 + 15, 128 + 9)."""
STOPPED = ("timeout", "cancelled")
NEVER_STARTED = ("deadline passed before the process started", "could not start")
"""How the reason of a run whose process never started begins."""


@dataclass
class Findings:
    """What the checker found, each finding one line that says which run or trigger and why."""

    accepted: int = 0
    lost: list[str] = field(default_factory=list)
    doubled: list[str] = field(default_factory=list)
    relaunched: list[str] = field(default_factory=list)
    misrecorded: list[str] = field(default_factory=list)
    unknowable: list[str] = field(default_factory=list)
    integrity: str = ""
    tracebacks: list[str] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    attempts: int = 0


@dataclass(frozen=True)
class _Run:
    id: str
    job: str
    state: str
    outcome: str | None
    reason: str
    exit_status: int | None
    attempts: int


@dataclass
class _Lines:
    """What the jobs wrote: per attempt, its start lines (pid, delivery id) and end statuses."""

    starts: dict[tuple[str, int], list[tuple[str, str]]] = field(
        default_factory=lambda: defaultdict(list))
    ends: dict[tuple[str, int], list[int]] = field(default_factory=lambda: defaultdict(list))
    malformed: list[str] = field(default_factory=list)


def check(database: Path, outputs: Path, logs: Path, accepted: Accepted,
          unknowable: set[tuple[str, int]]) -> Findings:
    """Every count, from the store at ``database``, the ``*.lines`` files in ``outputs`` and
    the daemon logs in ``logs``; ``unknowable``: the attempts the harness made unknowable."""
    found = Findings()
    lines = read_lines(outputs.glob("*.lines"))
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)) as db:
        found.integrity = "; ".join(row[0] for row in db.execute("PRAGMA integrity_check"))
        runs = {row[0]: _Run(*row) for row in db.execute(
            "SELECT id, job, state, outcome, reason, exit_status, attempts FROM runs")}
        _check_events(db, runs, accepted, found)
        _check_slots(db, found)
    _check_lines(lines, runs, found)
    for run in runs.values():
        _check_run(run, lines, unknowable, found)
    found.tracebacks = [f"{log.name}: Traceback" for log in sorted(logs.glob("*.log"))
                        if b"Traceback" in log.read_bytes()]
    return found


def read_lines(files: Iterable[Path]) -> _Lines:
    lines = _Lines()
    for path in files:
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) == 5 and words[0] == "start" and words[2].isdigit():
                lines.starts[(words[1], int(words[2]))].append((words[3], words[4]))
            elif len(words) == 4 and words[0] == "end" and words[2].isdigit() \
                    and words[3].isdigit():
                lines.ends[(words[1], int(words[2]))].append(int(words[3]))
            else:
                lines.malformed.append(f"{path.name}: {line!r}")
    return lines


def _check_events(db: sqlite3.Connection, runs: dict[str, _Run], accepted: Accepted,
                  found: Findings) -> None:
    events = {row[0]: row[1:] for row in db.execute(
        "SELECT delivery_id, job, kind, state, run_id FROM events")}
    missing = [delivery for delivery in accepted.triggers if delivery not in events]
    found.accepted = len(events) + len(missing)
    for delivery in missing:
        found.lost.append(f"{delivery}: accepted ({accepted.triggers[delivery]}) but not in "
                          "the store")
    deliveries = {row[0] for row in db.execute("SELECT delivery_id FROM deliveries")}
    for delivery in sorted(accepted.deliveries - deliveries):
        found.lost.append(f"github delivery {delivery}: answered 202 but not recorded")
    for delivery, (job, kind, state, run_id) in events.items():
        run = runs.get(run_id) if run_id else None
        if state != "consumed" or run is None or run.state != "ended" or run.job != job:
            found.lost.append(f"{delivery} ({kind}, {job}): {state}, run "
                              f"{run_id or '-'} {'missing' if run is None else run.state}")


def _check_slots(db: sqlite3.Connection, found: Findings) -> None:
    twice = db.execute("SELECT job, slot, count(*) FROM events WHERE kind = 'timer'"
                       " GROUP BY job, slot HAVING count(*) > 1")
    for job, slot, count in twice:
        found.doubled.append(f"slot {job} {slot}: {count} timer events")
    unledgered = db.execute(
        "SELECT e.delivery_id FROM events e LEFT JOIN slots s ON s.job = e.job"
        " AND s.slot = e.slot WHERE e.kind = 'timer' AND s.job IS NULL")
    for (delivery,) in unledgered:
        found.misrecorded.append(f"{delivery}: a timer event without its slot in the ledger")


def _check_lines(lines: _Lines, runs: dict[str, _Run], found: Findings) -> None:
    """Doubled and relaunched, from the start lines alone."""
    by_delivery: dict[str, set[str]] = defaultdict(set)
    for (run_id, attempt), starts in lines.starts.items():
        found.attempts += 1
        for _, delivery in starts:
            by_delivery[delivery].add(run_id)
        if len(starts) > 1:
            pids = ", ".join(pid for pid, _ in starts)
            found.relaunched.append(f"run {run_id} attempt {attempt}: started {len(starts)} "
                                    f"times (pids {pids})")
        if run_id not in runs:
            found.misrecorded.append(f"run {run_id} attempt {attempt}: ran, but the store has "
                                     "no such run")
    for (run_id, attempt), ends in lines.ends.items():
        if len(ends) > 1:
            found.relaunched.append(f"run {run_id} attempt {attempt}: ended {len(ends)} times")
    for delivery, run_ids in by_delivery.items():
        if len(run_ids) > 1:
            found.doubled.append(f"{delivery}: executed by {len(run_ids)} runs "
                                 f"({', '.join(sorted(run_ids))})")
    found.misrecorded.extend(f"malformed output line {line}" for line in lines.malformed)


def _check_run(run: _Run, lines: _Lines, unknowable: set[tuple[str, int]],
               found: Findings) -> None:
    """Misrecorded (or unknowable): the run's record against its job's own lines."""
    found.outcomes[run.outcome or run.state] += 1
    if run.state != "ended":
        found.misrecorded.append(f"run {run.id} ({run.job}): {run.state} after the drain")
        return
    ran = sorted(attempt for run_id, attempt in lines.starts if run_id == run.id)
    if run.outcome == "skipped":
        if ran:
            found.misrecorded.append(f"run {run.id} ({run.job}): skipped, but it ran")
        return
    for attempt in ran:
        if attempt > run.attempts:
            found.misrecorded.append(f"run {run.id} ({run.job}): attempt {attempt} ran, the "
                                     f"record counts {run.attempts}")
    for attempt in range(1, run.attempts):
        if 0 in lines.ends.get((run.id, attempt), []):
            found.misrecorded.append(f"run {run.id} ({run.job}): attempt {attempt} exited 0, "
                                     "yet the run was retried")
    problem = _last_attempt_problem(run, lines)
    if problem is None:
        return
    if run.exit_status is None and (run.id, run.attempts) in unknowable:
        found.unknowable.append(f"run {run.id} ({run.job}) attempt {run.attempts}: {problem}; "
                                "its supervisor was SIGKILLed by the harness while it ran")
        return
    found.misrecorded.append(f"run {run.id} ({run.job}) attempt {run.attempts}: {problem}")


def _last_attempt_problem(run: _Run, lines: _Lines) -> str | None:
    """What is wrong with the record of the run's last attempt, or None."""
    key = (run.id, run.attempts)
    recorded = f"recorded {run.outcome}, exit status {run.exit_status} ({run.reason or '-'})"
    ends = lines.ends.get(key)
    if ends:
        said = ends[-1]
        if run.exit_status != said:
            return f"the job exited {said}, {recorded}"
    elif run.exit_status is None:
        # Without a status, only a run whose process never started is as it should be: a
        # job stopped before its first line still has the status its signal gave it.
        if not run.reason.startswith(NEVER_STARTED) or key in lines.starts:
            return f"the job gave no exit status, {recorded}"
    elif run.exit_status not in KILLED or run.outcome not in STOPPED:
        return f"the job never said it exited, {recorded}"
    if run.outcome == "success" and run.exit_status != 0:
        return f"success with a non-zero status, {recorded}"
    if run.outcome == "failure" and run.exit_status == 0:
        return f"failure with status 0, {recorded}"
    return None
