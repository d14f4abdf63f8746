"""The daemon's heartbeat names one process, by pid and start time: a pid reused by another
process is never taken for the daemon, nor signalled."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronduit.cli.context import ask_reload, nudge_daemon
from cronduit.daemon.heartbeat import DaemonInfo, own_start_time, read_daemon, write_heartbeat
from cronduit.executor.procfs import identity
from cronduit.store.sqlite import SqliteStore

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def heartbeat_of(pid: int, start_time: int | None) -> DaemonInfo:
    """A fresh heartbeat on this host for the process ``pid`` started at ``start_time``."""
    return DaemonInfo(pid=pid, host=socket.gethostname(), started_at=NOW.isoformat(),
                      heartbeat_at=NOW.isoformat(), dry_run=False, start_time=start_time)


def test_a_heartbeat_naming_its_process_by_pid_and_start_time_is_alive() -> None:
    """The daemon's own process, with the start time it recorded: running."""
    assert heartbeat_of(os.getpid(), own_start_time()).alive(NOW)


def test_a_heartbeat_whose_pid_another_process_now_holds_is_not_alive() -> None:
    """The pid lives, but with another start time: the daemon is gone and its pid reused."""
    assert not heartbeat_of(os.getpid(), own_start_time() + 1).alive(NOW)


def test_a_heartbeat_of_a_process_that_has_exited_is_not_alive() -> None:
    """A daemon that exited and waits to be reaped still has its pid, but is not running."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        found = identity(ended.pid)
        assert found is not None
        os.waitid(os.P_PID, ended.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped
        assert not heartbeat_of(ended.pid, found.start_time).alive(NOW)
    finally:
        ended.wait()


def test_an_older_heartbeat_without_a_start_time_is_read_and_goes_by_its_pid(
    tmp_path: Path,
) -> None:
    """What an older cronduit wrote has no start time: read as such, its live pid counts."""
    store = SqliteStore(tmp_path / "cronduit.db")
    try:
        older = asdict(heartbeat_of(os.getpid(), None))
        del older["start_time"]
        with store.transaction() as tx:
            tx.set_meta("daemon", json.dumps(older))
        info = read_daemon(store)
    finally:
        store.close()
    assert info is not None
    assert (None, True) == (info.start_time, info.alive(NOW))


def test_a_heartbeat_with_a_newer_cronduits_fields_is_read(tmp_path: Path) -> None:
    """A field this version does not know is left aside, not an error."""
    store = SqliteStore(tmp_path / "cronduit.db")
    try:
        written = heartbeat_of(os.getpid(), own_start_time())
        with store.transaction() as tx:
            tx.set_meta("daemon", json.dumps({**asdict(written), "pidfd_socket": "x"}))
        read = read_daemon(store)
        write_heartbeat(store, written)
        again = read_daemon(store)
    finally:
        store.close()
    assert (written, written) == (read, again)


@pytest.fixture
def blocking() -> Iterator[subprocess.Popen[str]]:
    """A process that blocks SIGUSR1 and SIGHUP, so a signal sent to it stays pending."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import signal, sys\n"
         "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGHUP})\n"
         "print('ready', flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdin is not None
    assert "ready\n" == process.stdout.readline()
    with process:  # closes its pipes, and waits for it once stdin is closed
        yield process
        process.stdin.close()


def pending(pid: int) -> set[signal.Signals]:
    """The signals sent to the process ``pid`` and not delivered yet (it blocks them)."""
    status = Path(f"/proc/{pid}/status").read_text()
    [mask] = [line.split()[1] for line in status.splitlines() if line.startswith("ShdPnd:")]
    return {signal.Signals(n) for n in range(1, 64) if int(mask, 16) >> (n - 1) & 1}


def test_job_run_wakes_the_daemons_process_and_never_one_that_took_its_pid(
    blocking: subprocess.Popen[str],
) -> None:
    """SIGUSR1 goes to the process the heartbeat names only if its start time matches."""
    found = identity(blocking.pid)
    assert found is not None
    info = heartbeat_of(blocking.pid, found.start_time)
    nudge_daemon(replace(info, start_time=found.start_time + 1))
    assert set() == pending(blocking.pid)
    nudge_daemon(info)
    assert {signal.SIGUSR1} == pending(blocking.pid)


def test_apply_refuses_to_signal_a_process_that_took_the_daemons_pid(
    blocking: subprocess.Popen[str], capsys: pytest.CaptureFixture[str],
) -> None:
    """SIGHUP is not sent to another process with the daemon's pid: exit 1, saying why."""
    found = identity(blocking.pid)
    assert found is not None
    with pytest.raises(SystemExit) as exited:
        ask_reload(heartbeat_of(blocking.pid, found.start_time + 1))
    assert (1, set()) == (exited.value.code, pending(blocking.pid))
    assert (f"cronduit: cannot signal the daemon (pid {blocking.pid}): "
            "the daemon's process is gone\n") == capsys.readouterr().err
