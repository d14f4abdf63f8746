"""Launching an attempt: claim its file, hand it locked to the supervisor, record who it is.

The order is what makes "never twice" hold through any crash of the daemon:

1. open the attempt file (created once, never truncated or replaced) and ``flock`` it;
2. refuse if it holds anything: the job ran already, whatever state it is in now;
3. send the descriptor to the supervisor (:mod:`.supervisor`), which marks the attempt
   started, starts the job and keeps the descriptor, and so the lock, until it has recorded
   the job's exit; the daemon then closes its own copy.

Killed before 3, the daemon leaves a free lock and an empty file: nothing ran, and the
attempt may be launched. Killed after, the lock is the supervisor's until the record is
complete.

The supervisor is started on the first launch, once per process, and again if it has died;
a daemon that restarts gets a new one, while the old one finishes recording its jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from cronduit.executor import recorded, supervisor
from cronduit.executor.files import RETRY_AFTER_VARIABLE, retry_after_path, step_log_path
from cronduit.executor.states import Attempt, AttemptConflict, LaunchSpec

_LOCK_PATIENCE = 0.05
"""How long launch waits out an inspector's momentary probe of the lock, in seconds."""


def launch(spec: LaunchSpec) -> Attempt:
    """Start the attempt's job through the supervisor; refuse an attempt already started.

    Raises :class:`AttemptConflict` when the attempt file is locked or holds anything (or the
    supervisor stopped after marking it started), and :class:`OSError` (a missing ``cwd``)
    when the job cannot be started, in which case nothing ran and the attempt is still not
    started.
    """
    return begin_launch(spec).result()


def begin_launch(spec: LaunchSpec) -> PendingLaunch:
    """Claim the attempt and send it to the supervisor without waiting for the answer.

    Many launches begun one after another and then awaited keep the supervisor busy from one
    thread: no pool of threads passing the interpreter's lock back and forth. Raises what
    :func:`launch` raises for a claim that fails.
    """
    attempt_file = spec.attempt_file.absolute()
    record = _claim(attempt_file)
    try:
        log = _open_log(spec.log_path)
    except BaseException:
        os.close(record)
        raise
    pending = PendingLaunch(spec, attempt_file, record, log)
    pending.send()
    return pending


class PendingLaunch:
    """A launch sent to the supervisor; :meth:`result` waits for its answer."""

    def __init__(self, spec: LaunchSpec, attempt_file: Path, record: int, log: int) -> None:
        self._attempt_file = attempt_file
        self._record = record
        self._log = log
        self._request = {
            "argv": list(spec.command),
            "cwd": str(spec.cwd),
            "env": {**spec.env, RETRY_AFTER_VARIABLE: str(retry_after_path(attempt_file))},
            "max_log": spec.max_log,
            "lease": None if spec.lease_file is None else str(spec.lease_file.absolute()),
        }
        self._sent: tuple[_Channel, _Waiter] | None = None

    def send(self) -> None:
        self._sent = _SUPERVISOR.send(self._request, self._record, self._log)

    def result(self) -> Attempt:
        """The started attempt; raises as :func:`launch` does. Closes the descriptors."""
        try:
            for again in (True, False):
                assert self._sent is not None
                channel, waiter = self._sent
                channel.wait(waiter)
                if waiter.answer is not None:
                    pid, start_time = _started(waiter.answer)
                    return Attempt(pid, start_time, self._attempt_file)
                _SUPERVISOR.drop(channel)
                if os.fstat(self._record).st_size:
                    raise AttemptConflict(f"{self._attempt_file}: the supervisor stopped "
                                          "while starting this attempt")
                if again:  # nothing reached it: a new supervisor gets the same request
                    self.send()
            raise OSError(errno.EIO, "the supervisor stopped before starting the job")
        finally:
            os.close(self._log)
            os.close(self._record)


class _Waiter:
    """One launch waiting for its answer; answers come back in the order of the requests.

    A plain lock, taken at birth and released once, is the signal: cheaper than an Event,
    whose Python-level condition cost a twentieth of a launch.
    """

    def __init__(self) -> None:
        self._answered = threading.Lock()
        self._answered.acquire()
        self.settled = False
        self.answer: dict[str, Any] | None = None
        """None when the supervisor went away before answering."""

    def settle(self, answer: dict[str, Any] | None) -> None:
        self.answer = answer
        self.settled = True
        self._answered.release()

    def wait(self) -> None:
        self._answered.acquire()


class _Channel:
    """One supervisor process, the socket to it, and the launches waiting on their answers.

    Requests are pipelined: launches are sent as they come and each waits for its own answer,
    handed out in order, so the supervisor starts the next job while the last answer is on
    its way. Who reads the socket: a thread of its own, or, given an event loop (the
    daemon's, :func:`answer_on`), that loop. On the loop, the supervisor's word that a
    step's record is complete reaches the step's wait in one wake-up, not two (the reader
    thread's, then the loop's), between one step's end and the next step's start.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _SUPERVISOR_MAIN, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), start_new_session=True,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.socket = ours
        self.waiting: deque[_Waiter] = deque()
        self.broken = False
        self.loop = loop
        self._reader: threading.Thread | None = None
        if loop is None:
            self._reader = threading.Thread(target=self._read, name="cronduit-supervisor-answers",
                                            daemon=True)
            self._reader.start()
        else:  # add_reader belongs on the loop's own thread; answers meanwhile wait there
            loop.call_soon_threadsafe(loop.add_reader, ours.fileno(), self._drain)

    def wait(self, waiter: _Waiter) -> None:
        """Until ``waiter`` has its answer. On the loop that reads the socket, read it here:
        the loop cannot read while it waits."""
        if self.loop is not None and recorded.running_loop() is self.loop:
            while not waiter.settled:
                answered = supervisor.receive(self.socket)  # the answer is on its way
                if answered is None:
                    self._gone()
                    return
                self._dispatch(answered[0])
            return
        waiter.wait()

    def _read(self) -> None:
        while (answered := supervisor.receive(self.socket)) is not None:
            self._dispatch(answered[0])
        self._ended()

    def _drain(self) -> None:
        """On the loop: every message already there, without waiting for more."""
        while self._readable():
            answered = supervisor.receive(self.socket)
            if answered is None:
                self._gone()
                return
            self._dispatch(answered[0])

    def _readable(self) -> bool:
        try:
            self.socket.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        except OSError:  # the next read says the channel is gone
            return True
        return True  # a byte, or the end of the stream

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "recorded" in message:  # a word between the answers, not one of them
            recorded.hear((message["recorded"], message["start_time"]))
        else:
            self.waiting.popleft().settle(message)

    def _gone(self) -> None:
        """Read on the loop, the channel ended: stop watching it and let it go."""
        assert self.loop is not None
        with contextlib.suppress(Exception):  # a loop closed meanwhile watches nothing
            self.loop.remove_reader(self.socket.fileno())
        self._ended()
        self.socket.close()

    def _ended(self) -> None:
        self.broken = True
        while self.waiting:
            self.waiting.popleft().settle(None)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_RDWR)  # ends the reader, then the fd can go
        if self._reader is not None:
            self._reader.join(timeout=5)
            self.socket.close()
        elif self.loop is not None and not self.loop.is_running():
            # The loop would have read the end of the stream; stopped, it never will.
            self._gone()
        # A supervisor outlives its channel while its jobs run: a thread of its own reaps it
        # the moment it exits (no zombie until some later look), and holds it meanwhile.
        threading.Thread(target=self.process.wait, name="cronduit-supervisor-reaper",
                         daemon=True).start()


_SUPERVISOR_MAIN = "from cronduit.executor.supervisor import main; main()"


class _Link:
    """The channel to this process's supervisor, started when first needed."""

    def __init__(self) -> None:
        self._sending = threading.Lock()
        self._channel: _Channel | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop to read the channel on, while it runs (:func:`answer_on`)."""

    @property
    def pid(self) -> int | None:
        return None if self._channel is None else self._channel.process.pid

    def answer_on(self, loop: asyncio.AbstractEventLoop | None) -> None:
        with self._sending:
            self._loop = loop

    def send(self, request: dict[str, Any], record: int, log: int) -> tuple[_Channel, _Waiter]:
        """Send one request with its two descriptors; the waiter gets its answer."""
        waiter = _Waiter()
        with self._sending:
            channel = self._connected()
            channel.waiting.append(waiter)
            try:
                supervisor.send(channel.socket, request, [record, log])
            except OSError:
                channel.broken = True
                with contextlib.suppress(OSError):
                    channel.socket.shutdown(socket.SHUT_RDWR)  # the reader settles us
        return channel, waiter

    def _connected(self) -> _Channel:
        loop = self._loop if self._loop is not None and self._loop.is_running() else None
        channel = self._channel
        if channel is not None and (channel.broken or (channel.loop is not loop
                                                       and not channel.waiting)):
            channel.close()  # broken, or read where nobody reads any more: a new one
            self._channel = channel = None
        if channel is None:
            self._channel = channel = _Channel(loop)
        return channel

    def drop(self, channel: _Channel) -> None:
        with self._sending:
            if self._channel is channel:
                self._channel = None
        channel.close()


def answer_on(loop: asyncio.AbstractEventLoop | None) -> None:
    """Read the supervisor's answers and words on ``loop`` while it runs (the daemon's),
    rather than on a thread of their own; None: on a thread again."""
    _SUPERVISOR.answer_on(loop)


def _started(answer: dict[str, Any]) -> tuple[int, int]:
    if "pid" in answer:
        return answer["pid"], answer["start_time"]
    error = OSError(answer.get("errno") or 0, answer.get("strerror"))
    error.filename = answer.get("filename")
    raise error


_SUPERVISOR = _Link()


def _claim(attempt_file: Path) -> int:
    """Open and lock the attempt file, refusing an attempt that started before.

    Read-write for the supervisor's lines, in append mode so they follow each other whatever
    the shared offset, and never truncated: a record once written is never lost.
    """
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
    record = _open_in_folder(attempt_file, flags)
    try:
        _take_lock(record, attempt_file)
        if os.fstat(record).st_size:
            raise AttemptConflict(f"{attempt_file}: this attempt already started")
    except BaseException:
        os.close(record)
        raise
    return record


def make_ahead(attempt_file: Path) -> None:
    """Create an attempt's file and its step log, empty, before the attempt is launched.

    Creating a file costs 0.1-0.25 ms here, and a step attempt's launch creates two: made
    while the step before it runs, the launch that follows its end only opens them. An
    empty attempt file says "not started", as it does after a crash between the claim and
    the send, so one made for an attempt that never comes (the run failed instead) changes
    no record. Never into a run's folder that is gone (pruned meanwhile), and never
    truncating: a file that exists already, with whatever it holds, is left as it is.
    Quietly does nothing it cannot do: the launch creates what is missing.
    """
    for path in (attempt_file, step_log_path(attempt_file)):
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))


def _take_lock(record: int, attempt_file: Path) -> None:
    """Lock exclusively; an inspector's shared probe lasts microseconds, so wait that out."""
    deadline = time.monotonic() + _LOCK_PATIENCE
    while True:
        try:
            fcntl.flock(record, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise AttemptConflict(f"{attempt_file}: a running attempt holds the lock") from None
            time.sleep(0.001)


def _open_log(log_path: Path) -> int:
    """The run's log for the job's output, in append mode, under a shared lock.

    Every process that inherits the log shares that lock, so it is held while any of them
    may still write there: a free lock is what lets a pruned run's log be reused
    (:mod:`cronduit.executor.run_folders`).
    """
    log = _open_in_folder(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC)
    with contextlib.suppress(OSError):
        fcntl.flock(log, fcntl.LOCK_SH | fcntl.LOCK_NB)
    return log


def _open_in_folder(path: Path, flags: int) -> int:
    """Open ``path`` (mode 0600 if created), making its folder only when it is missing.

    The runner has nearly always made the run's folder already, so the open comes first:
    no ``mkdir`` or ``stat`` on the way to a launch that needs none.
    """
    try:
        return os.open(path, flags, 0o600)
    except FileNotFoundError:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return os.open(path, flags, 0o600)
