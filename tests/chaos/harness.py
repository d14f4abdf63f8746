"""The crash loop: serve, load, SIGKILL, restart, again and again; then drain and check.

Each round ends in one kill, of one of three targets:

* **the daemon** (most rounds): at a random moment of the load, or right after a 202 (the
  load generator signals the killer), or before HTTP is up (a moment after the start), or by
  the daemon itself at one of its crash points (``CRONDUIT_CRASH_AT``: fired, routed,
  launching, ended). While it is down the CLI asks for manual runs (``job run --queue
  --detach``), which the next daemon must run.
* **the supervisor** alone, while the daemon goes on;
* **both at once**.

Before killing a supervisor the harness freezes it (SIGSTOP) and reads which attempt files it
holds open: those attempts' exit statuses die with it, and cronduit records them as vanished
(documented). The checker counts them apart, as unknowable, rather than as misrecorded.

Reloads happen along the way: the config flips between two variants (a timing edit, an env
change) and the daemon is told by SIGHUP or by ``cronduit apply``.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from tests.chaos.checker import Findings, check
from tests.chaos.deployment import MANUAL_JOBS, Daemon, Deployment, Supervisor
from tests.chaos.load import Accepted, Load

CRASH_POINTS = ("fired", "routed", "launching", "ended")
START_TIMEOUT = 60.0
"""Seconds a daemon may take to listen on a busy machine before the harness gives up."""


@dataclass(frozen=True)
class Plan:
    """How many kills, and the odds of each kind."""

    kills: int
    seed: int
    between: tuple[float, float] = (0.5, 3.0)
    """Seconds of load before a kill: drawn from this range each round."""
    targets: tuple[tuple[str, float], ...] = (("daemon", 0.8), ("supervisor", 0.1),
                                              ("both", 0.1))
    crash_point: float = 0.15
    """Share of daemon starts given a crash point to kill themselves at."""
    before_http: float = 0.1
    """Share of daemon starts killed a moment later, before HTTP is up."""
    after_accept: float = 0.3
    """Share of daemon kills made right after the next 202 or 201."""
    reload: float = 0.3
    """Share of rounds with a reload (SIGHUP or cronduit apply) during the load."""
    cli_while_down: float = 0.3
    """Share of outages during which the CLI asks for a manual run."""
    outage: tuple[float, float] = (0.0, 0.5)
    """Seconds the daemon stays down between a kill and the next start."""
    long_outage: float = 0.0
    """Share of outages that last 61 to 190 s instead, so that minutely cron slots are
    missed and caught up (mode all, latest, never)."""
    random_kills: int = 0
    """The last this many kills are drawn from a fresh random seed (named in the report)."""
    drain_timeout: float = 120.0


@dataclass
class Report:
    """The kills made, what the checker found, and what was left behind."""

    kills: Counter[str]
    findings: Findings
    left_behind: list[str]
    unexpected: list[str]
    load: Counter[str]
    seconds: float
    seeds: str

    @property
    def kill_count(self) -> int:
        return sum(self.kills.values())

    def summary(self) -> str:
        found = self.findings
        return (f"{self.kill_count} kills, {found.accepted} accepted, {len(found.lost)} lost, "
                f"{len(found.doubled)} doubled, {len(found.relaunched)} relaunched, "
                f"{len(found.misrecorded)} misrecorded")

    def ok(self) -> bool:
        found = self.findings
        return not (found.lost or found.doubled or found.relaunched or found.misrecorded
                    or found.tracebacks or self.left_behind or self.unexpected) \
            and found.integrity == "ok"

    def text(self, examples: int = 20) -> str:
        """The summary line, then the other checks and up to ``examples`` of each finding."""
        found = self.findings
        kills = ", ".join(f"{count} {kind}" for kind, count in sorted(self.kills.items()))
        outcomes = ", ".join(f"{count} {name}" for name, count in sorted(found.outcomes.items()))
        lines = [self.summary(),
                 f"{len(found.unknowable)} unknowable (no exit status: their supervisor was "
                 "SIGKILLed by the harness while the job ran)",
                 f"PRAGMA integrity_check: {found.integrity}; {len(found.tracebacks)} logs with "
                 f"a traceback; {len(self.left_behind)} processes left behind; "
                 f"{len(self.unexpected)} unexpected answers",
                 f"kills: {kills}",
                 f"runs: {outcomes}; {found.attempts} attempts started",
                 f"seeds: {self.seeds}; took {self.seconds:.0f}s"]
        for name, items, shown in (
                ("lost", found.lost, examples), ("doubled", found.doubled, examples),
                ("relaunched", found.relaunched, examples),
                ("misrecorded", found.misrecorded, examples),
                ("unknowable", found.unknowable, 3), ("traceback", found.tracebacks, examples),
                ("left behind", self.left_behind, examples),
                ("unexpected", self.unexpected, examples)):
            lines += [f"  {name}: {item}" for item in items[:shown]]
            if len(items) > shown:
                lines.append(f"  {name}: ... and {len(items) - shown} more")
        return "\n".join(lines)


@dataclass
class _Round:
    """The running daemon, and the kills made so far."""

    daemon: Daemon | None = None
    kills: Counter[str] = field(default_factory=Counter)
    variant: str = "a"


class Chaos:
    """One crash loop in ``folder`` (which it fills), run by :meth:`run`."""

    def __init__(self, folder: Path, plan: Plan, say: Callable[[str], None] = print) -> None:
        self.deployment = Deployment(folder)
        self.plan = plan
        self.rng = random.Random(plan.seed)
        self.say = say
        self.accepted = Accepted()
        self.load = Load(random.Random(plan.seed + 1), self.accepted)
        self.unknowable: set[tuple[str, int]] = set()
        self.unexpected: list[str] = []
        self._applies: list[subprocess.Popen[bytes]] = []
        self._round = _Round()
        self._began = time.monotonic()
        self._seeds = str(plan.seed)
        self._journal_file = self.deployment.folder / "harness.log"

    def journal(self, line: str) -> None:
        """One line of what the harness did, in ``harness.log``, for a look afterwards."""
        with self._journal_file.open("a") as journal:
            journal.write(f"{time.monotonic() - self._began:9.3f} {line}\n")

    def run(self) -> Report:
        started = time.monotonic()
        self.deployment.prepare()
        self.load.start()
        try:
            while self._round.kills.total() < self.plan.kills:
                self._reseed()
                self._one_round()
            self.load.stop()
            left = self._drain()
        finally:
            self.load.stop()
            for apply in self._applies:
                with contextlib.suppress(OSError):
                    apply.kill()
                apply.wait()
            leftovers = self.deployment.kill_everything()
        findings = check(self.deployment.database, self.deployment.outputs,
                         self.deployment.logs, self.accepted, self.unknowable)
        return Report(self._round.kills, findings, left + leftovers,
                      self.unexpected + self.load.unexpected, self.load.counts,
                      time.monotonic() - started, self._seeds)

    def _reseed(self) -> None:
        fixed = self.plan.kills - self.plan.random_kills
        if self.plan.random_kills and self._round.kills.total() == fixed \
                and "then" not in self._seeds:
            seed = random.SystemRandom().randrange(2**32)
            self.rng.seed(seed)
            self._seeds += f", then {seed} after {fixed} kills"
            self.journal(f"reseeded with {seed}")

    # -- a round -----------------------------------------------------------------------------

    def _one_round(self) -> None:
        state = self._round
        if state.daemon is None or not state.daemon.alive():
            state.daemon = self._start()
            if state.daemon is None:
                return  # killed on its way up: that was the round's kill
        target = self._choose(self.plan.targets)
        window = self.rng.uniform(*self.plan.between)
        if target == "supervisor":
            self._load_for(window)
            self._kill_supervisor(state.daemon)
        else:
            self._kill_daemon(state.daemon, window, with_supervisors=target == "both")

    def _kill_supervisor(self, daemon: Daemon) -> None:
        """Kill the running daemon's supervisor; the daemon goes on (and starts another)."""
        if not daemon.alive():
            self._died_by_itself(daemon)
            return
        mine = [s for s in self.deployment.supervisors() if s.ppid == daemon.pid]
        for supervisor in mine:  # none yet if it has not started a job so far
            supervisor.stop()
            self._held(supervisor)
            supervisor.kill()
        if mine:
            self._count("supervisor", daemon)

    def _kill_daemon(self, daemon: Daemon, window: float, *, with_supervisors: bool) -> None:
        """After ``window`` seconds of load (or right after the next 202 or 201), kill the
        daemon, and with it every supervisor of the deployment if asked."""
        how = "daemon at random"
        if self.rng.random() < self.plan.after_accept:
            self.load.signal_accept.clear()
            self.load.armed = True
            self._load_for(window, until=self.load.signal_accept)
            self.load.armed = False
            if self.load.signal_accept.is_set():
                how = "daemon right after a 202/201"
        else:
            self._load_for(window)
        if not daemon.alive():
            self._died_by_itself(daemon)
            return
        supervisors = self.deployment.supervisors() if with_supervisors else []
        for supervisor in supervisors:
            supervisor.stop()
        for supervisor in supervisors:
            self._held(supervisor)
        daemon.kill()
        for supervisor in supervisors:
            supervisor.kill()
        self._count("daemon and supervisors at once" if with_supervisors else how, daemon)
        self._outage()

    def _died_by_itself(self, daemon: Daemon) -> None:
        """A daemon that ended on its own: at its crash point, or a fault to report."""
        daemon.popen.wait()
        if daemon.crash_at is not None and daemon.popen.returncode == -signal.SIGKILL:
            self._count(f"daemon at its crash point {daemon.crash_at}", daemon)
        else:
            tail = " | ".join(daemon.log.read_text(errors="replace").splitlines()[-3:])
            self.unexpected.append(f"{daemon.log.name}: the daemon exited "
                                   f"{daemon.popen.returncode} by itself: {tail}")
            if sum("by itself" in line for line in self.unexpected) >= 10:
                raise RuntimeError(f"daemons keep exiting by themselves; see {daemon.log}")
        self._outage()

    def _start(self) -> Daemon | None:
        """A new daemon, listening; None when this round's kill came first (before HTTP, or
        its own crash point on the way up)."""
        crash_at = self.rng.choice(CRASH_POINTS) if self.rng.random() < self.plan.crash_point \
            else None
        daemon = self.deployment.serve(crash_at)
        self.journal(f"{daemon.log.name} pid {daemon.pid} started"
                     + (f", to crash at {crash_at}" if crash_at else ""))
        if self.rng.random() < self.plan.before_http:
            time.sleep(self.rng.uniform(0.0, 0.6))
            if not daemon.alive():
                self._died_by_itself(daemon)
                return None
            up = daemon.address() is not None
            daemon.kill()
            self._count("daemon at random" if up else "daemon before HTTP was up", daemon)
            self._outage()
            return None
        address = daemon.wait_listening(START_TIMEOUT)
        if address is None:
            if daemon.alive():
                raise RuntimeError(f"{daemon.log}: not listening after {START_TIMEOUT:.0f}s")
            self._died_by_itself(daemon)
            return None
        self.load.address = address
        return daemon

    def _load_for(self, seconds: float, until: threading.Event | None = None) -> None:
        """Let the load run for ``seconds`` (or until the event ``until`` is set, or the daemon
        dies), with a reload at a random moment in some rounds."""
        daemon = self._round.daemon
        assert daemon is not None
        reload_at = self.rng.uniform(0, seconds) if self.rng.random() < self.plan.reload \
            else None
        end = time.monotonic() + seconds
        begin = time.monotonic()
        while time.monotonic() < end and daemon.alive():
            if until is not None and until.is_set():
                return
            if reload_at is not None and time.monotonic() - begin >= reload_at:
                self._reload(daemon)
                reload_at = None
            if until is not None:
                until.wait(0.005)  # wakes the moment the load sets it
            else:
                time.sleep(0.005)

    def _reload(self, daemon: Daemon) -> None:
        state = self._round
        state.variant = "b" if state.variant == "a" else "a"
        self.deployment.write_config(state.variant)
        by_signal = self.rng.random() < 0.5
        self.journal(f"reload to variant {state.variant} by {'SIGHUP' if by_signal else 'apply'}")
        if by_signal:
            with contextlib.suppress(ProcessLookupError):
                os.kill(daemon.pid, signal.SIGHUP)
            return
        self._applies = [apply for apply in self._applies if apply.poll() is None]
        self._applies.append(subprocess.Popen(
            [*self.deployment.cli_argv(), "apply", "-c", str(self.deployment.config)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.deployment.folder,
            env=self.deployment.environment()))

    def _outage(self) -> None:
        """The daemon is down: maybe ask for a manual run by the CLI, then wait a moment."""
        self.load.address = None
        if self.rng.random() < self.plan.cli_while_down:
            job = self.rng.choice(MANUAL_JOBS)
            done = self.deployment.cli("job", "run", job, "--queue", "--detach")
            delivery = done.stdout.split()[0] if done.stdout.split() else ""
            if done.returncode == 0 and delivery.startswith("manual/"):
                self.accepted.add(delivery, "cli")
                self.journal(f"job run {job} while down: {delivery}")
            else:
                self.unexpected.append(f"cronduit job run {job} --queue --detach: exit "
                                       f"{done.returncode}: {done.stderr.strip()[:300]}")
        if self.rng.random() < self.plan.long_outage:
            seconds = self.rng.uniform(61, 190)
            self.journal(f"a long outage: {seconds:.0f}s")
            time.sleep(seconds)
        else:
            time.sleep(self.rng.uniform(*self.plan.outage))

    def _held(self, supervisor: Supervisor) -> None:
        held = supervisor.attempts_held()
        self.unknowable |= held
        listed = " ".join(f"{run}/{attempt}" for run, attempt in sorted(held))
        self.journal(f"supervisor {supervisor.pid} (of {supervisor.ppid}) frozen, holding "
                     f"{listed or 'no attempt'}")

    def _choose(self, weighted: tuple[tuple[str, float], ...]) -> str:
        names = [name for name, _ in weighted]
        return self.rng.choices(names, [weight for _, weight in weighted])[0]

    def _count(self, kind: str, daemon: Daemon) -> None:
        self._round.kills[kind] += 1
        self.journal(f"kill: {kind} ({daemon.log.name})")
        total = self._round.kills.total()
        if total % 50 == 0 or total == self.plan.kills:
            self.say(f"{total} kills")

    # -- the drain ---------------------------------------------------------------------------

    def _drain(self) -> list[str]:
        """Stop the timers, let every accepted trigger run out, stop the daemon cleanly; the
        processes still there after a grace period (none should be)."""
        state = self._round
        if state.daemon is not None and state.daemon.alive():
            self._stop(state.daemon)
        self.deployment.write_config("drain")
        daemon = self.deployment.serve()
        self.journal(f"drain: {daemon.log.name} pid {daemon.pid} started, with no timers")
        address = daemon.wait_listening(START_TIMEOUT)
        if address is None:
            raise RuntimeError(f"{daemon.log}: the drain's daemon did not listen")
        self.load.finish_retries(address, timeout=60)
        self._wait_quiet(daemon)
        self.journal("drain: nothing waits and no run goes; SIGTERM")
        self._stop(daemon)
        for apply in self._applies:
            apply.wait(timeout=30)
        deadline = time.monotonic() + 15
        while self.deployment.processes() and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [f"pid {pid}" for pid in self.deployment.processes()]
        self.journal(f"drain: done, {len(left)} processes left")
        return left

    def _stop(self, daemon: Daemon) -> None:
        """SIGTERM, as a service manager stops it; a daemon still there 30 s later is a fault."""
        os.kill(daemon.pid, signal.SIGTERM)
        try:
            daemon.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.unexpected.append(f"{daemon.log.name}: still running 30s after SIGTERM")
            daemon.kill()

    def _wait_quiet(self, daemon: Daemon) -> None:
        """Until nothing waits and no run goes, for a second in a row (or the timeout)."""
        deadline = time.monotonic() + self.plan.drain_timeout
        quiet_since: float | None = None
        while time.monotonic() < deadline and daemon.alive():
            if self._busy() == (0, 0, 0):
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since >= 1.0:
                    return
            else:
                quiet_since = None
            time.sleep(0.2)
        self.say(f"the drain did not run out within {self.plan.drain_timeout:.0f}s: "
                 f"{self._busy()} (waiting triggers, runs going, run ends not chained)")

    def _busy(self) -> tuple[int, int, int]:
        with closing(sqlite3.connect(f"file:{self.deployment.database}?mode=ro", uri=True,
                                     timeout=30)) as db:
            row = db.execute(
                "SELECT (SELECT count(*) FROM events WHERE state IN ('new', 'waiting')),"
                " (SELECT count(*) FROM runs WHERE state <> 'ended'),"
                " (SELECT count(*) FROM run_ends WHERE chained = 0)").fetchone()
        return int(row[0]), int(row[1]), int(row[2])
