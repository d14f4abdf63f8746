"""The supervisor: one small process that starts every attempt's job and records how it ended.

It runs in a session of its own, so a daemon killed with SIGKILL (or its whole process group)
leaves it running: it goes on recording the exits of the jobs it started, and quits once the
daemon is gone and its last job has ended. The daemon is gone as soon as anything at all goes
wrong with the channel: an end of file, a reset (a daemon killed with answers it had not read
yet), a broken pipe on an answer; none of them ever ends the supervisor early. A restarted
daemon starts a new supervisor and adopts the old one's jobs from their attempt files
(:mod:`.adopt`).

Why one process for all attempts rather than a wrapper shell per attempt (what cronduit did
first): starting a program costs about 0.75 ms of CPU here, mostly ``exec`` and the dynamic
loader, and a wrapper made that two programs per run; the supervisor starts the job itself,
from a few threads at once. It is plain Python with no dependencies, so it is written
here, not taken from a library: what it must do (hold each attempt's lock for as long as the
job may be recorded, write the record in this order) is cronduit's own contract.

For each attempt the daemon sends, over a Unix socket, the job's argument list, folder and
environment, with two descriptors: the attempt file, opened and locked (:mod:`.spawn`), and
the run's log. The supervisor then

1. appends ``-`` to the attempt file: from this byte on the attempt counts as started and is
   never launched again, whatever happens next;
2. starts the job in its own session (its pid is its process group), standard input from
   ``/dev/null``, output and errors to the log, and appends the job's pid;
3. keeps the attempt file open, and so its lock held, until the job has exited and its exit
   status (128 + N after signal N, as a shell reports it) is appended; it then tells the
   daemon the record is complete (a ``recorded`` message, :mod:`.recorded`), so the daemon
   need not poll the lock.

A disk with no room for a line (``ENOSPC``, ``EDQUOT``) loses nothing: the line is kept, in
order behind any other of that file, and written again every :data:`RETRY_WRITES` seconds
until it fits, and the file stays open (its lock held, so the daemon waits) until then.

A job started under the node's lease (the request names the lease file) is stopped when the
lease ends, SIGTERM then SIGKILL, by a thread that watches the file (:mod:`.lease_watch`):
with the state in PostgreSQL, another daemon is about to take the run over.

While the job runs, the supervisor keeps its log under the cap the request names
(``max_log``, from ``settings.max_log``), cutting out the middle in place (:mod:`.logcap`),
and cuts it down to the cap one last time before it appends the exit status.

A job that cannot be started at all (a missing folder, no process to be had) never ran: its
attempt file is emptied again, the reason goes to the log and back to the daemon, which
records the attempt as not started. A program that cannot be executed is handled as a shell
would (:func:`_shell_fallback`).
"""

from __future__ import annotations

import array
import contextlib
import errno
import marshal
import os
import resource
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from cronduit.executor.lease_watch import LeaseWatch
from cronduit.executor.logcap import CappedLog, LogCaps
from cronduit.executor.procfs import identity

STARTED_MARK = b"-\n"
"""The attempt file's first line, written before the job is started."""

_HEADER = struct.Struct("!I")
RETRY_WRITES = 0.5
"""Seconds between tries of a line the disk had no room for."""
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT})
"""Why a write may succeed later, once space is given back."""

Write = Callable[[int, bytes], int]


def send(channel: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    """One length-prefixed message, with descriptors riding on its first bytes.

    ``marshal``, not JSON: both ends are the same interpreter (the daemon starts the
    supervisor with its own), the socket is theirs alone, and encoding a job's environment
    as JSON was a fourteenth of a launch.
    """
    body = marshal.dumps(message)
    data = _HEADER.pack(len(body)) + body
    sent = socket.send_fds(channel, [data], fds) if fds else channel.send(data)
    if sent < len(data):
        channel.sendall(data[sent:])


def receive(channel: socket.socket, max_fds: int = 0) -> tuple[dict[str, Any], list[int]] | None:
    """The next message and the descriptors sent with it; None once the other side is gone.

    Gone however it went: an end of file, or any error of the socket. A peer that closes
    with data of ours still unread in its socket (a daemon killed before reading answers)
    resets the connection, and that comes as ``ConnectionResetError``, not as an end of file.
    """
    fds = list[int]()
    try:
        start = b""
        if max_fds:  # the descriptors ride on the first bytes
            start, fds = _receive_fds(channel, _HEADER.size, max_fds)
        head = _receive_exactly(channel, start, _HEADER.size)
        if head is not None:
            body = _receive_exactly(channel, b"", _HEADER.unpack(head)[0])
            if body is not None:
                return marshal.loads(body), fds
    except OSError:
        pass
    for fd in fds:  # a message cut short: nothing of it is acted on
        os.close(fd)
    return None


def _receive_exactly(channel: socket.socket, start: bytes, size: int) -> bytes | None:
    """``start`` read on to ``size`` bytes; None if the other side went away first."""
    data = bytearray(start)
    while len(data) < size:
        chunk = channel.recv(min(size - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _receive_fds(channel: socket.socket, size: int, max_fds: int) -> tuple[bytes, list[int]]:
    """``socket.recv_fds``, but close-on-exec from the start: the standard library's drops
    its ``flags`` (Python 3.11), and a descriptor left open would leak into every job."""
    fds = array.array("i")
    data, ancillary, _, _ = channel.recvmsg(size, socket.CMSG_LEN(max_fds * fds.itemsize),
                                            socket.MSG_CMSG_CLOEXEC)
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


SPAWNERS = 4
"""Threads starting jobs at once: each start waits for the new process to ``exec`` (the
spawning thread is suspended until then, as with ``vfork``), and on two or more cores the
waits overlap."""


class Supervisor:
    """The supervisor's state: the channel to the daemon and the jobs it has not seen end.

    Each job is watched through a pidfd and reaped by its own pid, never with
    ``waitpid(-1)``: a job that ends at once is still there (a zombie) when the thread that
    started it reads its start time, and no job being started holds up the others' records.
    """

    def __init__(self, channel: socket.socket, write: Write = os.write) -> None:
        self._channel: socket.socket | None = channel
        self._records = _Records(write)
        """The attempt files' lines, written, or kept until the disk has room."""
        """The daemon's channel; None once the daemon is gone."""
        self._devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        self._pool = ThreadPoolExecutor(SPAWNERS, thread_name_prefix="spawn")
        self._answers: deque[Future[dict[str, Any]]] = deque()
        """Answers in the order of the requests, which is the order the daemon reads them."""
        self._lock = threading.Lock()
        self._live: dict[int, tuple[int, int, int, subprocess.Popen[bytes],
                                    CappedLog | None]] = {}
        """Each running job by its pidfd: its pid and start time, its attempt file's
        descriptor (which holds the lock), its process, and its log when capped."""
        self._caps = LogCaps()
        self._finished_logs: list[CappedLog] = []
        """Logs cut for the last time, to close after this turn's words are sent."""
        self._leases = LeaseWatch()
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._poll = select.epoll()  # registered from the spawning threads too: epoll is safe

    def serve(self) -> None:
        """Answer the daemon and record exits until the daemon is gone and no job is left."""
        # A terminal's signals are the daemon's: caught and let be, not ignored, for a job
        # inherits what is ignored (a shell can then neither trap nor reset it) while
        # ``exec`` gives it the default of what is caught. A write to a daemon that is gone
        # must fail as EPIPE (Python's default, made explicit), never end the supervisor.
        for caught in (signal.SIGINT, signal.SIGHUP):
            signal.signal(caught, _let_be)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        _raise_open_files_limit()
        assert self._channel is not None
        self._poll.register(self._channel.fileno(), select.EPOLLIN)
        self._poll.register(self._wake_read, select.EPOLLIN)
        while (self._channel is not None or self._answers or self._running()
               or self._records.waiting()):
            timeout = RETRY_WRITES if self._records.waiting() else None
            for fd, _ in self._poll.poll(timeout):
                if self._channel is not None and fd == self._channel.fileno():
                    self._take_request()
                elif fd == self._wake_read:
                    with contextlib.suppress(BlockingIOError):  # drained
                        while os.read(self._wake_read, 4096):
                            pass
                else:
                    self._reap(fd)
            self._records.retry()
            self._send_answers()
            self._release_logs()

    def _release_logs(self) -> None:
        """Close the logs of the jobs reaped this turn, after their words were sent."""
        while self._finished_logs:
            self._caps.release(self._finished_logs.pop())

    def _running(self) -> bool:
        with self._lock:
            return bool(self._live)

    def _take_request(self) -> None:
        assert self._channel is not None
        received = receive(self._channel, max_fds=2)
        if received is None:
            self._daemon_gone()
            return
        request, fds = received
        if self._answers or self._more_requests():
            answer = self._pool.submit(self._start, request, fds)
            answer.add_done_callback(lambda _: _write_quietly(self._wake_write, b"."))
        else:
            answer = self._started_here(request, fds)
        self._answers.append(answer)

    def _more_requests(self) -> bool:
        """Whether another request is already on its way (a burst of launches)."""
        assert self._channel is not None
        try:
            return bool(self._channel.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except OSError:  # nothing there (EAGAIN), or a channel going: the next read says
            return False

    def _started_here(self, request: dict[str, Any], fds: list[int]) -> Future[dict[str, Any]]:
        """A lone request, started on this thread: handing it to a spawning thread (waking
        it, passing the interpreter's lock) cost a tenth of a millisecond before the job
        began, which a step of a durable execution waits for. A burst goes to the spawning
        threads, whose waits for ``exec`` overlap."""
        answer: Future[dict[str, Any]] = Future()
        try:
            answer.set_result(self._start(request, fds))
        except Exception as error:  # answered as the pool's failures are
            answer.set_exception(error)
        return answer

    def _send_answers(self) -> None:
        """Send the answers that are ready, in order, then a ``recorded`` word for each
        record closed (:mod:`.recorded`); once the daemon is gone, drop them.

        Dropped only once ready: an answer not ready is a job still being started, which
        the supervisor must still see registered, and so recorded, before it may exit.
        """
        while self._answers and self._answers[0].done():
            try:
                answer = self._answers.popleft().result()
            except Exception as error:  # said to the daemon; never the end of the supervisor
                answer = {"errno": errno.EIO, "strerror": f"{type(error).__name__}: {error}"}
            self._say(answer)
        for pid, start_time in self._records.closed():
            self._say({"recorded": pid, "start_time": start_time})

    def _say(self, message: dict[str, Any]) -> None:
        if self._channel is None:
            return
        try:
            send(self._channel, message)
        except OSError:  # EPIPE, a reset: the daemon is gone, whichever way it went
            self._daemon_gone()

    def _daemon_gone(self) -> None:
        """Start nothing more and answer no more; the jobs started go on being recorded."""
        if self._channel is None:
            return
        self._poll.unregister(self._channel.fileno())
        self._channel.close()
        self._channel = None

    def _start(self, request: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        record, log = fds
        capped = None
        lease = request.get("lease")
        try:
            os.write(record, STARTED_MARK)
            process = self._spawn(request["argv"], request["cwd"], request["env"], log)
            lease_log = None if lease is None else _dup_quietly(log)
            capped = self._cap(log, request.get("max_log"))  # keeps the log open from here
        except OSError as error:
            os.ftruncate(record, 0)  # nothing of the job ran: the attempt may be launched
            where = f": {error.filename}" if error.filename is not None else ""
            reason = f"cronduit: cannot start the job: {error.strerror}{where}\n"
            _write_quietly(log, reason.encode())
            os.close(record)
            return {"errno": error.errno, "strerror": error.strerror,
                    "filename": None if error.filename is None else str(error.filename)}
        finally:
            if capped is None:
                os.close(log)
        pid = process.pid
        found = identity(pid)  # only its own pidfd reaps it, and that is not watched yet
        assert found is not None
        self._records.append(record, b"%d\n" % pid)
        watch = os.pidfd_open(pid)
        if lease is not None:  # held before its pidfd is watched, and so before it is reaped
            self._leases.hold(watch, pid, lease_log, lease)
        with self._lock:
            self._live[watch] = (pid, found.start_time, record, process, capped)
        self._poll.register(watch, select.EPOLLIN)
        return {"pid": pid, "start_time": found.start_time}

    def _reap(self, watch: int) -> None:
        """Record the exit of the job whose pidfd became readable."""
        with self._lock:
            entry = self._live.pop(watch, None)
        self._poll.unregister(watch)
        ended_by_lease = self._leases.release(watch)
        os.close(watch)
        if entry is None:
            return
        pid, start_time, record, process, capped = entry
        if ended_by_lease:  # the zombie still names the group: nothing of it outlives the lease
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        if capped is not None:  # before the status: once that is written, the run may end
            self._caps.finish(capped)
            self._finished_logs.append(capped)  # let go once the daemon is told
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:  # reaped by someone else: its status is lost, not the rest
            self._records.close(record, (pid, start_time))  # vanished, which is the truth
            return
        code = os.waitstatus_to_exitcode(status)
        process.returncode = code  # reaped here, not by Popen
        self._records.append(record, b"%d\n" % (code if code >= 0 else 128 - code))
        # The lock goes with it, once the record is complete; the daemon is told then.
        self._records.close(record, (pid, start_time))

    def _cap(self, log: int, max_log: int | None) -> CappedLog | None:
        """Keep the job's log under ``max_log`` (None: no cap, a request from code).

        Nothing about the cap may fail the launch: the job runs by now, and an error here
        would have its attempt recorded as never started.
        """
        if max_log is None:
            return None
        try:
            return self._caps.watch(log, max_log)
        except Exception as error:  # the job runs uncapped rather than unrecorded
            reason = f"cronduit: max_log cannot be kept on this log: {error}\n"
            _write_quietly(log, reason.encode())
            return None

    def _spawn(self, argv: list[str], cwd: str, env: dict[str, str],
               log: int) -> subprocess.Popen[bytes]:
        env = {**env, "PWD": os.path.realpath(cwd)}  # as a shell would have set it
        try:
            return self._popen(argv, cwd, env, log)
        except OSError as error:
            if error.errno not in _SHELL_FALLBACKS or error.filename == cwd:
                raise
            # What a shell does with a program it cannot run: a script without a ``#!``
            # line runs under /bin/sh; a name it cannot find or execute ends the job with
            # 127 or 126 and says so in the log.
            return self._popen(_shell_fallback(argv, env, error), cwd, env, log)

    def _popen(self, argv: list[str], cwd: str, env: dict[str, str],
               log: int) -> subprocess.Popen[bytes]:
        # Popen rather than os.posix_spawn: it starts the job in its own folder without
        # changing the supervisor's, so several threads can start jobs at once.
        return subprocess.Popen(argv, cwd=cwd, env=env, stdin=self._devnull, stdout=log,
                                stderr=log, start_new_session=True)


_SHELL = "/bin/sh"
_SHELL_FALLBACKS = {errno.ENOENT: 127, errno.EACCES: 126, errno.ENOEXEC: 0}
"""Why a program could not be executed, and the exit status a shell would give (0: run it
as a shell script instead)."""
_SAY_AND_EXIT = 'printf "%s\\n" "$1" >&2; exit "$2"'


def _shell_fallback(argv: list[str], env: dict[str, str], error: OSError) -> list[str]:
    """The shell's arguments standing in for ``argv``, which failed with ``error``."""
    status = _SHELL_FALLBACKS[error.errno or 0]
    if status == 0:
        program = argv[0]
        if "/" not in program:
            program = shutil.which(program, path=env.get("PATH", os.defpath)) or program
        return [_SHELL, program, *argv[1:]]
    what = "not found" if status == 127 else "permission denied"
    return [_SHELL, "-c", _SAY_AND_EXIT, "cronduit", f"cronduit: {argv[0]}: {what}", str(status)]


def _let_be(signum: int, frame: object) -> None:
    """A terminal's SIGINT or SIGHUP, which the supervisor lives through."""


def _raise_open_files_limit() -> None:
    """Up to four descriptors per running job (its attempt file, its pidfd, its log and the
    lease watch's copy of that): lift the
    soft limit on open files to the hard one, or a thousand running jobs would be the end."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class _Records:
    """The attempt files' lines, each written at once or, when the disk has no room, kept in
    order and written again later; a file is closed (its lock released) only once all its
    lines are written. Used from the spawning threads and the serving one."""

    def __init__(self, write: Write) -> None:
        self._write = write
        self._lock = threading.Lock()
        self._unwritten: dict[int, bytes] = {}
        self._closing: dict[int, tuple[int, int]] = {}
        self._closed: list[tuple[int, int]] = []

    def append(self, record: int, line: bytes) -> None:
        """Write ``line`` at the end of ``record``, after any line still waiting there."""
        with self._lock:
            unwritten = self._unwritten.get(record, b"") + line
            self._keep(record, self._written(record, unwritten))

    def close(self, record: int, job: tuple[int, int]) -> None:
        """Close ``record`` once its lines are written; ``job`` (its pid and start time) is
        then among the :meth:`closed`."""
        with self._lock:
            if record in self._unwritten:
                self._closing[record] = job
            else:
                os.close(record)
                self._closed.append(job)

    def closed(self) -> list[tuple[int, int]]:
        """The jobs whose records were closed since the last call: complete, unlocked."""
        with self._lock:
            closed, self._closed = self._closed, []
        return closed

    def waiting(self) -> bool:
        """Whether some line waits for room."""
        with self._lock:
            return bool(self._unwritten)

    def retry(self) -> None:
        """Try the waiting lines again."""
        with self._lock:
            for record, unwritten in list(self._unwritten.items()):
                self._keep(record, self._written(record, unwritten))

    def _keep(self, record: int, rest: bytes) -> None:
        if rest:
            self._unwritten[record] = rest
            return
        self._unwritten.pop(record, None)
        job = self._closing.pop(record, None)
        if job is not None:
            os.close(record)
            self._closed.append(job)

    def _written(self, record: int, data: bytes) -> bytes:
        """Write what fits; what is left to write later (nothing, past any other error: a
        disk turned read-only or failing keeps what it has, as the record then reads)."""
        while data:
            try:
                data = data[self._write(record, data):]
            except OSError as error:
                return data if error.errno in _NO_ROOM else b""
        return b""


def _dup_quietly(fd: int) -> int | None:
    """A descriptor of the supervisor's own on ``fd``; None if there is none to be had (the
    job runs by now: nothing may fail its launch)."""
    try:
        return os.dup(fd)
    except OSError:
        return None


def _write_quietly(fd: int, data: bytes) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, data)


def main() -> None:
    """Entry point: the daemon runs it with its end of the channel's descriptor as argument."""
    fd = int(sys.argv[1])
    os.set_inheritable(fd, False)
    _signals_at_default()
    Supervisor(socket.socket(fileno=fd)).serve()


def _signals_at_default() -> None:
    """Unblock every signal and give each the daemon was started with ignored its default,
    before any thread starts: a job inherits both from the thread that starts it, and its
    shell could neither trap nor reset a signal ignored on entry. A daemon started with
    ``&`` from a script has SIGINT and SIGQUIT ignored; some service managers start
    processes with signals blocked. SIGPIPE and SIGXFSZ, which Python itself ignores, stay
    so here; ``Popen`` gives a job their defaults."""
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    for signum in signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP, signal.SIGPIPE,
                                            signal.SIGXFSZ}:
        if signal.getsignal(signum) == signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
