"""The supervisor when its daemon disappears: however the channel ends, every job it started
has its real exit status recorded."""

from __future__ import annotations

import fcntl
import os
import select
import socket
import subprocess
import sys
from pathlib import Path

from cronduit.executor import supervisor
from cronduit.executor.adopt import record_complete
from cronduit.executor.files import read_record
from tests.helpers.processes import ENV, eventually, group_killed_afterwards


def test_a_daemon_gone_with_answers_unread_still_gets_every_exit_recorded(
    tmp_path: Path,
) -> None:
    """The daemon's end closes with answers unread, so the supervisor's next read fails with
    a reset, not an end of file: it records every job's exit status all the same."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    channel = os.fstat(theirs.fileno()).st_ino
    with theirs:
        process = subprocess.Popen(
            [sys.executable, "-c", _SUPERVISOR_MAIN, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),), start_new_session=True, stdin=subprocess.DEVNULL)
    go = tmp_path / "go"
    records = [tmp_path / f"attempt-{n}" for n in range(4)]
    with group_killed_afterwards(process.pid):
        for n, record in enumerate(records):
            _send_request(ours, record, f"while [ ! -e {go} ]; do sleep 0.01; done; exit {n}")
        assert eventually(lambda: all(read_record(r).pid is not None for r in records))
        assert eventually(lambda: bool(select.select([ours], [], [], 0)[0]))  # answers wait
        ours.close()
        # The jobs end once the supervisor has dealt with the reset (or died of it).
        assert eventually(lambda: not _holds_socket(process.pid, channel))
        go.touch()
        process.wait(timeout=10)
    assert [0, 1, 2, 3] == [read_record(record).status for record in records]


_SUPERVISOR_MAIN = "from cronduit.executor.supervisor import main; main()"


def _send_request(channel: socket.socket, record: Path, shell: str) -> None:
    """One launch request as the daemon sends it: the attempt file claimed, and a log."""
    attempt = os.open(record, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(attempt, fcntl.LOCK_EX)
    log = os.open(record.with_suffix(".log"), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    request = {"argv": ["/bin/sh", "-c", shell], "cwd": str(record.parent), "env": ENV}
    try:
        supervisor.send(channel, request, [attempt, log])
    finally:
        os.close(attempt)
        os.close(log)


def _holds_socket(pid: int, inode: int) -> bool:
    """Whether the live process ``pid`` still has the socket ``inode`` open."""
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:  # gone (or a zombie, whose descriptors are closed)
        return False
    return f"socket:[{inode}]" in links


ROUNDS = 8
BURST = 16


def test_a_daemon_killed_just_after_a_burst_of_launches_loses_no_exit_status(
    tmp_path: Path,
) -> None:
    """Time after time a daemon sends a burst of short jobs and is SIGKILLed a few
    milliseconds later, mid-answers: every job that started has its exit status recorded."""
    done = subprocess.run([sys.executable, "-c", _KILLED_DAEMONS, str(tmp_path), str(ROUNDS),
                           str(BURST)], capture_output=True, text=True, timeout=60, check=True)
    assert [-9] * ROUNDS == [int(code) for code in done.stdout.split()]
    records = sorted(tmp_path.glob("*/attempt-1"))
    assert eventually(lambda: all(record_complete(record) for record in records), 15)
    # One the supervisor never took up (it saw the daemon gone first) never started, and the
    # next daemon launches it; one that started must have its job's real exit status.
    started = {record.parent.name: read_record(record).status for record in records
               if read_record(record).started}
    assert {name: int(name.rpartition("-")[2]) % 7 for name in started} == started
    assert len(started) >= BURST  # most, in fact: the supervisor takes up what it received


_KILLED_DAEMONS = """
import os, random, signal, sys, time
from pathlib import Path
from cronduit.executor import LaunchSpec
from cronduit.executor.spawn import begin_launch

folder, rounds, burst = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
env = {"PATH": os.defpath}
for n in range(rounds):
    daemon = os.fork()
    if daemon == 0:  # a daemon: a burst of launches, a few answers read, then SIGKILL
        pending = [begin_launch(LaunchSpec(
            run_id=f"r{n}-{k}", attempt=1, argv=None, shell=f"exit {k % 7}", cwd=folder,
            env=env, attempt_file=folder / f"r{n}-{k}" / "attempt-1",
            log_path=folder / f"r{n}-{k}" / "log")) for k in range(burst)]
        chance = random.Random(n)
        for launch in pending[:chance.randrange(burst)]:
            launch.result()
        time.sleep(chance.random() * 0.003)
        os.kill(os.getpid(), signal.SIGKILL)
    print(os.waitstatus_to_exitcode(os.waitpid(daemon, 0)[1]), flush=True)
"""
