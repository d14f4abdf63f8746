"""What a job is given, whichever way its supervisor starts it.

A job started alone is started on the supervisor's serving thread; one of a burst, on a
spawning thread. Both must give it the same: its folder, exactly its variables, only its
three descriptors, its own session, and the default disposition of every signal a shell
may want to trap (none ignored).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cronduit.executor import Exited, LaunchSpec, launch
from cronduit.executor.spawn import begin_launch
from tests.helpers.logs import read_log
from tests.helpers.processes import ENV, finish

_REPORT = """
import json, os, subprocess
fds = []
for fd in os.listdir("/proc/self/fd"):
    try:
        os.readlink(f"/proc/self/fd/{fd}")
        fds.append(fd)
    except FileNotFoundError:
        pass  # the descriptor listdir used to read the folder, closed since
print(json.dumps({"cwd": os.getcwd(), "env": sorted(os.environ), "fds": sorted(fds),
                  "own_session": os.getsid(0) == os.getpid()}))
"""
_SIGNALS = 'exec grep -E "^Sig(Ign|Blk)" /proc/self/status'
"""What the job's own process ignores and blocks, as exec left it (the report above is a
Python program, which ignores SIGPIPE and SIGXFSZ itself as it starts)."""
BURST = 6


def _spec(tmp_path: Path, name: str, argv: tuple[str, ...]) -> LaunchSpec:
    work = tmp_path / "work dir"
    work.mkdir(exist_ok=True)
    folder = tmp_path / "runs" / name
    return LaunchSpec(run_id=name, attempt=1, argv=argv, shell=None, cwd=work,
                      env={**ENV, "CRONDUIT_JOB": "report"},
                      attempt_file=folder / "attempt-1", log_path=folder / "log",
                      max_log=None)


def _alone_and_burst(tmp_path: Path, argv: tuple[str, ...]) -> list[bytes]:
    """The logs of one job started alone, then of a burst of them begun before any answer
    is read (at least all but the first go to the spawning threads)."""
    alone = _spec(tmp_path, f"{argv[0]}-alone".replace("/", "_"), argv)
    assert Exited(0) == finish(launch(alone))
    burst = [_spec(tmp_path, f"{argv[0]}-{n}".replace("/", "_"), argv) for n in range(BURST)]
    begun = [begin_launch(spec) for spec in burst]
    assert [Exited(0)] * BURST == [finish(pending.result()) for pending in begun]
    return [read_log(spec.log_path) for spec in [alone, *burst]]


def test_a_job_alone_and_jobs_of_a_burst_get_the_same_folder_variables_and_descriptors(
        tmp_path: Path) -> None:
    expected = {"cwd": str((tmp_path / "work dir").resolve()),
                "env": sorted({*ENV, "CRONDUIT_JOB", "CRONDUIT_RETRY_AFTER_FILE", "PWD"}),
                "fds": ["0", "1", "2"], "own_session": True}
    logs = _alone_and_burst(tmp_path, (sys.executable, "-c", _REPORT))
    assert [expected] * (BURST + 1) == [json.loads(log) for log in logs]


def test_no_signal_is_ignored_or_blocked_in_a_job_however_it_was_started(
        tmp_path: Path) -> None:
    """Not SIGINT nor SIGHUP, which the supervisor lives through, nor SIGPIPE and SIGXFSZ,
    which Python ignores: a job's shell can trap each of them."""
    logs = _alone_and_burst(tmp_path, ("sh", "-c", _SIGNALS))
    assert [_NONE] * (BURST + 1) == logs


_NONE = b"SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
"""No signal blocked, none ignored."""


_STARTED_IGNORING = """
import signal, sys
from cronduit.executor import launch
from tests.helpers.processes import finish
from tests.executor.test_spawn_paths import _spec
from pathlib import Path
signal.signal(signal.SIGQUIT, signal.SIG_IGN)  # as a script's "&" leaves it
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2, signal.SIGTERM})
finish(launch(_spec(Path(sys.argv[1]), "ignoring", ("sh", "-c", sys.argv[2]))))
"""


def test_what_the_daemon_was_started_with_ignored_or_blocked_is_not_passed_on(
        tmp_path: Path) -> None:
    """A daemon started with SIGINT and SIGQUIT ignored (``cronduit serve &`` in a script)
    and SIGUSR2 and SIGTERM blocked: its jobs get them all at their defaults."""
    subprocess.run([sys.executable, "-c", _STARTED_IGNORING, str(tmp_path), _SIGNALS],
                   check=True, cwd=Path(__file__).parents[2], timeout=60)
    assert _NONE == read_log(tmp_path / "runs" / "ignoring" / "log")
