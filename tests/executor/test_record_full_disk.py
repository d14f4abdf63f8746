"""Exit statuses when the disk has no room for them: the supervisor keeps the line and the
lock until it can write it, and the daemon waits for it, however long that takes."""

from __future__ import annotations

import asyncio
import fcntl
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cronduit.executor import Attempt, Exited, exits, wait
from cronduit.executor.adopt import record_complete
from cronduit.executor.files import read_record
from cronduit.executor.procfs import identity
from tests.helpers.processes import ENV, eventually, group_killed_afterwards

# A supervisor whose writes to attempt files fail with ENOSPC while the file named by its
# second argument exists (each failure leaves a line in the third), as on a full disk.
_FULL_DISK_SUPERVISOR = """
import errno, os, socket, sys
from cronduit.executor import supervisor

full, tries = sys.argv[2], sys.argv[3]

def write(fd, data):
    if os.path.exists(full):
        with open(tries, "a") as log:
            log.write("ENOSPC\\n")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return os.write(fd, data)

supervisor.Supervisor(socket.socket(fileno=int(sys.argv[1])), write=write).serve()
"""


def test_an_exit_status_the_disk_has_no_room_for_is_written_once_there_is(
        tmp_path: Path) -> None:
    """The job ends while the disk is full: its status is tried again and again, the lock
    stays held (the record is not complete), and once there is room the status is there."""
    from cronduit.executor import supervisor  # noqa: PLC0415 - the message format

    full, tries = tmp_path / "full", tmp_path / "tries"
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with theirs:
        process = subprocess.Popen(
            [sys.executable, "-c", _FULL_DISK_SUPERVISOR, str(theirs.fileno()), str(full),
             str(tries)], pass_fds=(theirs.fileno(),), start_new_session=True,
            stdin=subprocess.DEVNULL)
    record, go = tmp_path / "attempt-1", tmp_path / "go"
    with group_killed_afterwards(process.pid):
        attempt = os.open(record, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(attempt, fcntl.LOCK_EX)
        log = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        request = {"argv": ["/bin/sh", "-c", f"while [ ! -e {go} ]; do sleep 0.01; done; exit 7"],
                   "cwd": str(tmp_path), "env": ENV}
        supervisor.send(ours, request, [attempt, log])
        os.close(attempt)
        os.close(log)
        answered = supervisor.receive(ours)
        assert answered is not None
        pid = answered[0]["pid"]
        assert eventually(lambda: read_record(record).pid is not None)
        full.touch()
        go.touch()  # the job exits now, on a full disk
        assert eventually(lambda: tries.exists() and len(tries.read_text().split()) >= 3)
        assert (None, False) == (read_record(record).status, record_complete(record))
        ours.setblocking(False)
        with pytest.raises(BlockingIOError):  # no word yet: the record is not complete
            ours.recv(1, socket.MSG_PEEK)
        ours.setblocking(True)
        full.unlink()
        assert eventually(lambda: record_complete(record))
        word = supervisor.receive(ours)  # and the word comes once it is
        assert word is not None
        assert (pid, answered[0]["start_time"]) == (word[0]["recorded"], word[0]["start_time"])
        ours.close()
        process.wait(timeout=10)
    assert 7 == read_record(record).status


def test_waiting_for_an_attempt_outlasts_the_record_patience_while_the_lock_is_held(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A supervisor that holds the lock past RECORD_PATIENCE is waiting for room for the
    status: the daemon keeps looking, and reads the status once it is written."""
    monkeypatch.setattr(exits, "RECORD_PATIENCE", 0.05)
    monkeypatch.setattr(exits, "PATIENT_LOOK", 0.01)
    looks = 0

    def counted(path: Path) -> bool:
        nonlocal looks
        looks += 1
        return record_complete(path)

    monkeypatch.setattr(exits, "record_complete", counted)
    record = tmp_path / "attempt-1"
    held = os.open(record, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)
    job = subprocess.Popen(["sleep", "0.1"])
    found = identity(job.pid)
    assert found is not None
    os.write(held, b"-\n%d\n" % job.pid)

    async def scenario() -> object:
        waiting = asyncio.create_task(wait(Attempt(job.pid, found.start_time, record)))
        async with asyncio.timeout(10):
            while looks < 20 and not waiting.done():  # far past the patience's 8 looks
                await asyncio.sleep(0.005)
        assert not waiting.done()
        os.write(held, b"7\n")
        os.close(held)
        return await waiting

    assert Exited(7) == asyncio.run(scenario())
    job.wait()
