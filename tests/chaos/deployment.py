"""The chaos deployment: one folder with a config of mixed jobs, the daemons served on it, and
every process that belongs to it, found through ``/proc`` (no psutil).

Each job runs ``job.sh``, which appends to its own output file, ``out/<job>.lines``, one line
when it starts and one just before it exits::

    start <run id> <attempt> <pid> <delivery id of its trigger>
    end <run id> <attempt> <the status it exits with>

so the checker can tell, from the jobs' own words, what ran and how it ended.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SECRETS = {
    "CHAOS_HOOK": "chaos-webhook-secret",
    "CHAOS_GITHUB": "chaos-github-secret",
    "CHAOS_API": "chaos-api-token",
}
"""The secrets the config names, given to the daemon and the CLI through the environment."""

JOB_SCRIPT = r"""# A chaos job: $1 its name, $2 seconds to sleep, $3 how it exits (ok, mixed, retry,
# tempfail). The exit status is read from the run id's last hex digit, so it varies from run
# to run but is the same for every attempt of one run.
out="out/$1.lines"
finish() {
    printf 'end %s %s %s\n' "$CRONDUIT_RUN_ID" "$CRONDUIT_ATTEMPT" "$1" >>"$out"
    exit "$1"
}
trap 'kill "$nap" 2>/dev/null; finish 143' TERM
IFS= read -r trigger <"$CRONDUIT_TRIGGER_FILE"
delivery=${trigger#*\"delivery_id\": \"}
delivery=${delivery%%\"*}
printf 'start %s %s %s %s\n' "$CRONDUIT_RUN_ID" "$CRONDUIT_ATTEMPT" "$$" "$delivery" >>"$out"
if [ "$2" != 0 ]; then
    sleep "$2" &
    nap=$!
    wait "$nap"
fi
case "$3" in
mixed)
    case "$CRONDUIT_RUN_ID" in
    *c) finish 1 ;;
    *d) finish 3 ;;
    *e) finish 2 ;;
    *) finish 0 ;;
    esac ;;
retry)  # attempts before the one the run id names fail; *f fails all three
    case "$CRONDUIT_RUN_ID" in
    *[0-4]) n=1 ;;
    *[5-9a]) n=2 ;;
    *f) n=4 ;;
    *) n=3 ;;
    esac
    if [ "$CRONDUIT_ATTEMPT" -lt "$n" ]; then finish 1; fi
    finish 0 ;;
tempfail)  # asks for a retry in a second, once
    if [ "$CRONDUIT_ATTEMPT" = 1 ]; then
        echo 1 >"$CRONDUIT_RETRY_AFTER_FILE"
        finish 75
    fi
    finish 0 ;;
*) finish 0 ;;
esac
"""


@dataclass(frozen=True)
class JobSpec:
    """One job of the chaos config: how its script sleeps and exits, and its other keys."""

    name: str
    sleep: str
    exits: str
    keys: str
    """The rest of the job's YAML flow mapping, timing first (dropped by the drain)."""
    timing: str = ""
    """``every: 2s`` or ``cron: ...``: replaced by ``timing_b`` in variant b, removed to drain."""
    timing_b: str = ""


JOBS = (
    JobSpec("tick", "0", "mixed", "", "every: 2s", "every: 3s"),
    JobSpec("tick-skip", "4", "ok", "overlap: skip", "every: 3s"),
    JobSpec("cron-all", "0", "mixed", "catch_up: {window: 10m, mode: all, max_runs: 3}",
            "cron: '* * * * *'"),
    JobSpec("cron-latest", "0", "ok", "catch_up: {window: 10m, mode: latest}",
            "cron: '* * * * *'"),
    JobSpec("cron-never", "0", "ok", "catch_up: false", "cron: '* * * * *'"),
    JobSpec("retry", "0", "retry", "retry: {attempts: 3, backoff: 1s, max_backoff: 2s}",
            "every: 4s"),
    JobSpec("tempfail", "0", "tempfail", "webhook: true, overlap: {timer: queue, default: skip}",
            "every: 5s"),
    JobSpec("deadline", "6", "ok", "timeout: 3s", "every: 7s"),
    JobSpec("chained", "0", "mixed", "on: {after: {job: retry, outcomes: [success, failure]}}"),
    JobSpec("slow", "5", "mixed", "webhook: true, timeout: 60s"),
    JobSpec("hook-queue", "1", "mixed", "webhook: true"),
    JobSpec("hook-skip", "1", "ok", "webhook: true, overlap: skip"),
    JobSpec("hook-allow", "1.5", "mixed", "webhook: true, overlap: {default: allow, "
            "max_parallel: 3}"),
    JobSpec("hook-replace", "2", "ok", "webhook: true, overlap: replace"),
    JobSpec("push-main", "0.5", "mixed", "on: {events: [push], branches: [main]}"),
    JobSpec("push-docs", "0.5", "ok", "on: {events: [push], paths: ['docs/**']}, "
            "overlap: allow"),
    JobSpec("manual", "0.3", "mixed", ""),
)
WEBHOOK_JOBS = tuple(job.name for job in JOBS if "webhook: true" in job.keys)
MANUAL_JOBS = ("manual", "slow", "hook-queue")


def config_text(variant: str) -> str:
    """The config: variant ``a`` or ``b`` (a reload flips between them: a timing edit and an
    env change), or ``drain`` (no timings, so the timers stop and the work can run out)."""
    lines = ["settings:", "  state: state", "  listen: 127.0.0.1:0",
             "  webhook_secret: CHAOS_HOOK", "  github_secret: CHAOS_GITHUB",
             "  api_token: CHAOS_API", "jobs:"]
    for job in JOBS:
        keys = [f"command: [/bin/sh, job.sh, {job.name}, '{job.sleep}', {job.exits}]"]
        timing = job.timing_b if variant == "b" and job.timing_b else job.timing
        if timing and variant != "drain":
            keys.append(timing)
        if job.keys:
            keys.append(job.keys)
        if job.name == "hook-queue":
            keys.append(f"env: {{VARIANT: {variant}}}")
        lines.append(f"  {job.name}: {{{', '.join(keys)}}}")
    return "\n".join(lines) + "\n"


_LISTENING = re.compile(rb"listening on (http://[0-9.]+:[0-9]+)")


@dataclass
class Daemon:
    """One ``cronduit serve`` started by the harness, its output in its own log file."""

    popen: subprocess.Popen[bytes]
    log: Path
    crash_at: str | None
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def address(self) -> str | None:
        """The base URL it logged once it accepts connections; None before."""
        found = _LISTENING.search(self.log.read_bytes())
        return found.group(1).decode() if found else None

    def wait_listening(self, timeout: float) -> str | None:
        """The address once it listens; None if it died first or ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            address = self.address()
            if address is not None or not self.alive():
                return address
            time.sleep(0.02)
        return None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self.popen.wait()


class Deployment:
    """The chaos folder: config, job script, output files, daemon logs and the state."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()
        self.config = self.folder / "cronduit.yaml"
        self.state = self.folder / "state"
        self.database = self.state / "cronduit.db"
        self.outputs = self.folder / "out"
        self.logs = self.folder / "logs"
        self.daemons: list[Daemon] = []
        self._harness = _ancestry(os.getpid())
        """This process and those that started it (their command lines may name the folder)."""

    def prepare(self) -> None:
        for made in (self.outputs, self.logs):
            made.mkdir(parents=True, exist_ok=True)
        (self.folder / "job.sh").write_text(JOB_SCRIPT)
        self.write_config("a")

    def write_config(self, variant: str) -> None:
        """Replace the config at once (a daemon starting meanwhile reads one whole file)."""
        staged = self.config.with_suffix(".new")
        staged.write_text(config_text(variant))
        staged.replace(self.config)

    def environment(self, crash_at: str | None = None) -> dict[str, str]:
        env = {**os.environ, **SECRETS, "PYTHONUNBUFFERED": "1"}
        env.pop("CRONDUIT_CRASH_AT", None)
        if crash_at:
            env["CRONDUIT_CRASH_AT"] = crash_at
        return env

    def serve(self, crash_at: str | None = None) -> Daemon:
        log = self.logs / f"daemon-{len(self.daemons):04d}.log"
        with log.open("wb") as output:
            popen = subprocess.Popen(
                [*self.cli_argv(), "serve", "-c", str(self.config)],
                stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                cwd=self.folder, env=self.environment(crash_at))
        daemon = Daemon(popen, log, crash_at)
        self.daemons.append(daemon)
        return daemon

    @staticmethod
    def cli_argv() -> list[str]:
        return [sys.executable, "-m", "cronduit"]

    def cli(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """A ``cronduit`` command on this deployment's config."""
        return subprocess.run([*self.cli_argv(), *args, "-c", str(self.config)],
                              capture_output=True, text=True, cwd=self.folder, timeout=timeout,
                              env=self.environment(), check=False)

    def processes(self) -> list[int]:
        """Every process whose working folder is in the chaos folder, or whose command line
        names it: daemons, supervisors, jobs and anything a job left behind."""
        return [pid for pid in _pids() if pid not in self._harness and self._ours(pid)]

    def _ours(self, pid: int) -> bool:
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:  # gone, or not ours to look at
            return False
        inside = cwd == str(self.folder) or cwd.startswith(f"{self.folder}/")
        return inside or str(self.folder).encode() in cmdline

    def supervisors(self) -> list[Supervisor]:
        found = []
        for pid in self.processes():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            ppid = _parent(pid)
            if b"cronduit.executor.supervisor" in cmdline and ppid is not None:
                found.append(Supervisor(pid, ppid))
        return found

    def kill_everything(self) -> list[str]:
        """SIGKILL whatever is left of the deployment; the command lines of what was."""
        left = []
        for pid in self.processes():
            with contextlib.suppress(OSError):
                left.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                            .decode(errors="replace").strip())
                os.kill(pid, signal.SIGKILL)
        return left


@dataclass(frozen=True)
class Supervisor:
    """A cronduit supervisor process of the deployment, and its parent (its daemon, if alive)."""

    pid: int
    ppid: int

    def stop(self) -> None:
        """Freeze it, so what it holds can be read while nothing changes."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGSTOP)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def attempts_held(self) -> set[tuple[str, int]]:
        """The attempts whose files it holds open with no exit status written yet: those it
        started (or was about to) and has not recorded. Killed now, their statuses are lost.
        (One whose status is written, frozen just before it closed the file, is not among
        them: the next daemon must read that status.)"""
        held = set()
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{self.pid}/fd"):
                with contextlib.suppress(OSError):
                    path = f"/proc/{self.pid}/fd/{fd}"
                    found = _ATTEMPT_FILE.search(os.readlink(path))
                    # the record's lines: "-", the job's pid, its exit status
                    if found and Path(path).read_bytes().count(b"\n") < 3:
                        held.add((found.group(1), int(found.group(2))))
        return held


_ATTEMPT_FILE = re.compile(r"/runs/([0-9a-f]+)/attempt-([0-9]+)$")


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _ancestry(pid: int) -> set[int]:
    found = set()
    current: int | None = pid
    while current and current not in found:
        found.add(current)
        current = _parent(current)
    return found


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]
