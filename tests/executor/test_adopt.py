"""Surviving the daemon: a restarted daemon adopts, settles or launches, and never runs twice."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from cronduit.executor import (
    Attempt,
    AttemptConflict,
    Exited,
    NotStarted,
    Running,
    Settled,
    Vanished,
    inspect,
    launch,
)
from cronduit.executor.files import read_record
from tests.helpers.logs import read_log
from tests.helpers.processes import (
    alive,
    eventually,
    finish,
    group_killed_afterwards,
    spec_for,
    start_time_of,
)
from tests.helpers.spawn import supervisor_pid

FAKE_DAEMON = """
import json, os, sys, time
from pathlib import Path
from cronduit.executor import LaunchSpec, launch
folder = Path(sys.argv[1])
spec = LaunchSpec(
    run_id="r1", attempt=1, argv=None, shell="sleep 1; echo after the daemon; exit 7",
    cwd=folder, env={"PATH": os.environ["PATH"]},
    attempt_file=folder / "attempt-1", log_path=folder / "log",
)
attempt = launch(spec)
print(json.dumps({"pid": attempt.pid, "start_time": attempt.start_time}), flush=True)
time.sleep(60)
"""

FAKE_DAEMON_KILLED_BEFORE_SPAWN = """
import fcntl, os, sys, time
path = sys.argv[1] + "/attempt-1"
record = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
fcntl.flock(record, fcntl.LOCK_EX)
print("claimed", flush=True)
time.sleep(60)
"""


def _run_until_sigkill(script: str, folder: Path) -> str:
    """Run a fake daemon, read the line it prints, then SIGKILL it; return that line."""
    daemon = subprocess.Popen(
        [sys.executable, "-c", script, str(folder)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert daemon.stdout is not None
        line = daemon.stdout.readline()
    finally:
        daemon.send_signal(signal.SIGKILL)
        daemon.communicate()
    return line


def test_a_run_outlives_a_sigkilled_daemon_and_is_adopted(tmp_path: Path) -> None:
    """After the daemon dies the job goes on; the next daemon adopts it and gets its status."""
    recorded = json.loads(_run_until_sigkill(FAKE_DAEMON, tmp_path))
    attempt = Attempt(recorded["pid"], recorded["start_time"], tmp_path / "attempt-1")
    with group_killed_afterwards(attempt.pid):
        state = inspect(attempt.attempt_file, expected_start_time=attempt.start_time)
        assert Running(attempt) == state
        assert Exited(7) == finish(attempt)
    assert b"after the daemon\n" == read_log(tmp_path / "log")


def test_a_daemon_killed_before_spawning_leaves_an_attempt_that_runs_once(
    tmp_path: Path,
) -> None:
    """Lock taken, nothing sent to the supervisor yet: the lock is free again, nothing started,
    launch runs it once."""
    assert "claimed\n" == _run_until_sigkill(FAKE_DAEMON_KILLED_BEFORE_SPAWN, tmp_path)
    spec = replace(spec_for(tmp_path, shell="echo ran"), attempt_file=tmp_path / "attempt-1")
    assert NotStarted() == inspect(spec.attempt_file)
    assert Exited(0) == finish(launch(spec))
    with pytest.raises(AttemptConflict):
        launch(spec)
    assert b"ran\n" == read_log(spec.log_path)


def test_a_job_killed_by_sigkill_is_recorded_with_status_137(tmp_path: Path) -> None:
    """The supervisor is not in the job's group: it records even a KILL, as a shell would."""
    attempt = launch(spec_for(tmp_path, shell="sleep 30"))
    with group_killed_afterwards(attempt.pid):
        os.kill(attempt.pid, signal.SIGKILL)
        assert Exited(137) == finish(attempt)
        assert Exited(137) == inspect(attempt.attempt_file, attempt.start_time)


def test_a_job_whose_supervisor_was_killed_is_watched_and_then_vanishes(tmp_path: Path) -> None:
    """Killed, the supervisor frees the lock while its job runs on: a restarted daemon still
    sees the job running (pid and start time), and once it ends the attempt has vanished,
    since nobody was left to record its status. It is never launched again."""
    attempt = launch(spec_for(tmp_path, shell="sleep 0.5; exit 3"))
    with group_killed_afterwards(attempt.pid):
        supervisor = supervisor_pid()
        assert supervisor is not None
        os.kill(supervisor, signal.SIGKILL)
        assert eventually(lambda: not alive(supervisor))
        running = inspect(attempt.attempt_file, attempt.start_time)
        ended = finish(attempt)
    assert (Running(attempt), Vanished(attempt.pid)) == (running, ended)
    assert Vanished(attempt.pid) == inspect(attempt.attempt_file, attempt.start_time)
    with pytest.raises(AttemptConflict):
        launch(spec_for(tmp_path, shell="echo twice"))


def test_an_ended_attempt_reads_the_same_after_a_restart(tmp_path: Path) -> None:
    """Inspecting an attempt that ended gives the status its waiter saw."""
    attempt = launch(spec_for(tmp_path, shell="exit 4"))
    assert [Exited(4), Exited(4)] == [finish(attempt), inspect(attempt.attempt_file)]


def test_an_attempt_with_no_file_has_not_started(tmp_path: Path) -> None:
    """No attempt file: no launch ever got far enough to start anything."""
    assert NotStarted() == inspect(tmp_path / "attempt-1")


def test_a_recorded_start_time_that_differs_is_never_adopted(tmp_path: Path) -> None:
    """A held lock whose recorded pid now has another start time is not our job."""
    attempt = launch(spec_for(tmp_path, shell="sleep 30"))
    with group_killed_afterwards(attempt.pid):
        state = inspect(attempt.attempt_file, expected_start_time=attempt.start_time - 1)
        os.killpg(attempt.pid, signal.SIGKILL)
        finish(attempt)
    assert Vanished(attempt.pid) == state


def test_a_recycled_pid_is_never_taken_for_the_job(tmp_path: Path) -> None:
    """A pid line naming some other live process, the lock held by a stray, is not running."""
    attempt_file = tmp_path / "attempt-1"
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        with _stray_lock_holder(attempt_file):
            _append(attempt_file, f"{other.pid}\n")
            state = inspect(attempt_file, expected_start_time=start_time_of(other.pid) + 1)
    finally:
        other.kill()
        other.wait()
    assert Vanished(other.pid) == state


def test_a_free_lock_and_a_process_that_is_not_the_job_is_vanished(tmp_path: Path) -> None:
    """With the lock free, a live process under the recorded pid is not taken for the run
    unless it is the job itself (same start time, leading its own session)."""
    attempt_file = tmp_path / "attempt-1"
    attempt_file.write_text(f"{os.getpid()}\n")
    assert Vanished(os.getpid()) == inspect(attempt_file, start_time_of(os.getpid()))


def test_an_adopted_attempt_without_a_recorded_start_time_is_identified_by_its_lock(
    tmp_path: Path,
) -> None:
    """A daemon killed before recording the start time still adopts the right process."""
    attempt = launch(spec_for(tmp_path, shell="sleep 0.3"))
    assert Running(attempt) == inspect(attempt.attempt_file)
    finish(attempt)


def test_a_lock_held_by_a_process_that_never_says_who_it_is_is_a_conflict(
    tmp_path: Path,
) -> None:
    """With the lock held and no pid line in time, inspect refuses to guess."""
    with _stray_lock_holder(tmp_path / "attempt-1"), pytest.raises(AttemptConflict):
        inspect(tmp_path / "attempt-1", patience=0.05)


def test_a_job_being_started_is_waited_for_rather_than_judged(tmp_path: Path) -> None:
    """Lock held, pid line not yet written: inspect waits for the line and adopts."""
    attempt = launch(spec_for(tmp_path, shell="sleep 30"))
    with group_killed_afterwards(attempt.pid):
        # Empty the file as if the supervisor had not written the pid yet; put it back soon.
        assert eventually(lambda: _pid_written(attempt.attempt_file))
        line = attempt.attempt_file.read_text()
        os.truncate(attempt.attempt_file, 0)
        writer = threading.Timer(0.1, _append, [attempt.attempt_file, line])
        writer.start()
        state = inspect(attempt.attempt_file, attempt.start_time)
        writer.join()
        os.killpg(attempt.pid, signal.SIGKILL)
        finish(attempt)
    assert Running(attempt) == state


def test_a_torn_pid_line_under_a_held_lock_is_waited_for(tmp_path: Path) -> None:
    """Half a pid line is no pid yet: inspect waits for the newline as for an empty file."""
    attempt_file = tmp_path / "attempt-1"
    with _stray_lock_holder(attempt_file):
        _append(attempt_file, "12")
        with pytest.raises(AttemptConflict):
            inspect(attempt_file, patience=0.05)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"started": "123\n", "status": "4\n"}, Exited(4)),
        ({"started": "123\n"}, Vanished(123)),
        ({"started": ""}, Vanished(None)),
        ({}, Vanished(None)),
    ],
)
def test_an_attempt_folder_an_older_cronduit_left_is_settled_as_it_would_have(
    tmp_path: Path, files: dict[str, str], expected: Settled
) -> None:
    """Upgraded with runs going: ``started`` and ``status`` in a folder read as before."""
    folder = tmp_path / "attempt-1"
    folder.mkdir()
    (folder / "lock").touch()
    for name, text in files.items():
        (folder / name).write_text(text)
    assert expected == inspect(folder)


def test_an_attempt_an_older_cronduit_launched_is_adopted_while_it_runs(tmp_path: Path) -> None:
    """Its wrapper holds ``lock`` in the folder; the pid in ``started`` is adopted and awaited."""
    folder = tmp_path / "attempt-1"
    folder.mkdir()
    lock = os.open(folder / "lock", os.O_RDONLY | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        wrapper = subprocess.Popen(
            ["/bin/sh", "-c", _OLD_WRAPPER, "cronduit", str(folder)],
            stdin=lock,
            start_new_session=True,
        )
    finally:
        os.close(lock)
    with group_killed_afterwards(wrapper.pid):
        attempt = Attempt(wrapper.pid, start_time_of(wrapper.pid), folder)
        state = inspect(folder, attempt.start_time)
        (folder / "go").touch()
        wrapper.wait()
    assert (Running(attempt), Exited(6)) == (state, inspect(folder, attempt.start_time))


_OLD_WRAPPER = """
echo $$ >"$1/started"
while [ ! -e "$1/go" ]; do sleep 0.01; done
echo 6 >"$1/status"
"""


def _pid_written(attempt_file: Path) -> bool:
    """Whether the job's pid line is whole in ``attempt_file``."""
    return read_record(attempt_file).pid is not None


def _append(attempt_file: Path, text: str) -> None:
    """Append ``text`` as the supervisor does: never truncating what is there."""
    with attempt_file.open("a") as record:
        record.write(text)


@contextmanager
def _stray_lock_holder(attempt_file: Path) -> Iterator[None]:
    """Hold the attempt file's lock from another open file, as a stray process would."""
    attempt_file.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(attempt_file)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert "held\n" == holder.stdout.readline()
        yield
    finally:
        holder.kill()
        holder.communicate()
    assert eventually(lambda: _lock_is_free(attempt_file))


def _lock_is_free(path: Path) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


_HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""
