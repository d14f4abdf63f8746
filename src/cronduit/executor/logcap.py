"""Each running job's log kept under its cap (``settings.max_log``), by the supervisor.

A job writes straight into its run's log: no cronduit process sits between them, so the
job goes on when the daemon, or even the supervisor, is killed. A pipe read by cronduit
would give that up: once its reader died the job would be killed by SIGPIPE or would block.
So the log is cut from outside, in place, while the job goes on appending to it. The job's
descriptor is in append mode (:func:`~cronduit.executor.spawn._open_log`): each write
lands at the end of the file as it is at that moment, so the file may shrink under the job.

The supervisor, which outlives the daemon and watches every job it started, does the
cutting, from one thread (:class:`LogCaps`). Where and how much to cut is the core's
decision (:mod:`cronduit.core.logcap`); this module carries it out, the first way the
file's file system supports (measured on ext4 and tmpfs, see ``docs/runs.md``):

1. ``fallocate(FALLOC_FL_COLLAPSE_RANGE)`` (ext4, xfs) takes the bytes out: the file
   shrinks, the tail moves up behind the head. The range is punched first, which drops its
   pages at once; a collapse alone writes them to disk before throwing them away.
2. ``fallocate(FALLOC_FL_PUNCH_HOLE)`` (tmpfs, btrfs) frees the blocks but leaves a hole:
   the file keeps its length, the hole reads as NUL bytes, and cronduit's readers skip it
   (:mod:`.logs`).
3. Where neither works, the file is truncated to its head: the tail starts again empty, and
   bytes the job writes during the cut may be lost.

Python binds ``fallocate`` only as ``os.posix_fallocate``, which takes no mode flags, and
has no ``inotify`` binding at all: both are called from libc through :mod:`ctypes`.

A cut and a reader's read of the log exclude each other through POSIX record locks on its
first two bytes (:func:`held`; ``flock`` would not do: the job's own descriptor holds a
shared ``flock``, see :mod:`cronduit.executor.run_folders`), so a reader sees the log
before a cut or after it, never half cut.

When to look: a log that grows is looked at (one ``fstat``) after half the time its growth
would take to reach the cap, within 5 ms to 0.1 s (:func:`~cronduit.core.logcap.next_look`);
a log that stopped growing is left to ``inotify``, which wakes the thread at its next write,
so a quiet log costs nothing and a job that bursts out of silence is seen at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import heapq
import itertools
import os
import select
import stat
import struct
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from cronduit.core.logcap import (
    LATEST,
    MARKER_ROOM,
    SOONEST,
    bytes_to_cut,
    head_end,
    marker,
    marker_cut,
    next_look,
)

COLLAPSE = "collapse"
PUNCH = "punch"
TRUNCATE = "truncate"
WAYS = (COLLAPSE, PUNCH, TRUNCATE)
"""The ways to cut, best first; a log drops each one its file system refuses."""

_FALLOC_FL_KEEP_SIZE = 0x01
_FALLOC_FL_PUNCH_HOLE = 0x02
_FALLOC_FL_COLLAPSE_RANGE = 0x08
_IN_MODIFY = 0x00000002
_IN_ONESHOT = 0x80000000
_EVENT = struct.Struct("iIII")
_REFUSED = {errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL, errno.ENOSYS}
"""What a file system that cannot cut a file this way answers."""
_GATE = 0
_INSIDE = 1
LOCK_PATIENCE = 0.25
"""Seconds a cut waits for readers (or a reader for a cut) before going ahead unlocked: a
stuck reader must not leave a job writing without a cap, nor a stopped supervisor a reader
waiting for ever."""

_libc = ctypes.CDLL(None, use_errno=True)
_fallocate = getattr(_libc, "fallocate64", None) or _libc.fallocate
_fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]


def fallocate(fd: int, mode: int, offset: int, length: int) -> None:
    """libc's ``fallocate`` with its mode flags; raises :class:`OSError` as ``os`` does."""
    if _fallocate(fd, mode, offset, length) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


@contextlib.contextmanager
def held(fd: int, *, exclusive: bool, patience: float = LOCK_PATIENCE) -> Iterator[bool]:
    """A POSIX lock on the log for a cut (``exclusive``) or a read of one chunk; yields
    whether it was had.

    Two bytes of lock: the first is a gate, the second the log. A cut closes the gate, then
    waits for the readers inside to finish their chunk; a reader passes the gate (waiting
    while a cut waits or runs) and holds the log while it reads. Without the gate, a reader
    going chunk after chunk would keep a cut out. Each wait lasts ``patience`` at most, then
    the cut or the read goes ahead unlocked.
    """
    kind = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    gate = _lock(fd, kind, _GATE, patience)
    inside = _lock(fd, kind, _INSIDE, patience)
    if gate and not exclusive:
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, _GATE)
    try:
        yield gate and inside
    finally:
        for taken, start in ((inside, _INSIDE), (gate and exclusive, _GATE)):
            if taken:
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, start)


def _lock(fd: int, kind: int, start: int, patience: float) -> bool:
    """Lock one byte, waiting ``patience`` seconds at most; whether it was locked."""
    deadline = time.monotonic() + patience
    while True:
        try:
            fcntl.lockf(fd, kind | fcntl.LOCK_NB, 1, start)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.001)
        except OSError:  # a file system without record locks: the read or cut goes ahead
            return False


def hole_after(fd: int, offset: int, size: int) -> int:
    """The length of the hole at ``offset`` (a punched log's cut), 0 if data starts there."""
    if size <= offset:
        return 0
    try:
        return os.lseek(fd, offset, os.SEEK_DATA) - offset
    except OSError as error:
        return size - offset if error.errno == errno.ENXIO else 0  # ENXIO: a hole to the end


@dataclass(eq=False)
class CappedLog:
    """One job's log under its cap, as the supervisor holds it."""

    job_fd: int
    """The descriptor the job writes to (its open file, shared with the job, in append
    mode), kept open until the job has ended: its size is read through it."""
    cap: int
    block: int
    fd: int | None = None
    """The log opened anew, for reading and writing, not in append mode (the marker is
    written at a place of its own; a seek must not move the job's offset): opened at the
    first cut, so a log that stays within its cap costs no more than its ``fstat``."""
    ways: list[str] = field(default_factory=lambda: list(WAYS))
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held for a look or a cut: the thread that watches and the one that finishes."""
    kept: int = 0
    """Its size (less any hole) after the last look."""
    looked_at: float = field(default_factory=time.monotonic)
    rate: float = 0.0
    """How fast it grows, in bytes a second: the fastest of its recent looks."""
    cut_seconds: float = 0.0
    """How long its last cut took."""
    due: float | None = None
    """When it is to be looked at next; None while ``inotify`` watches it instead."""
    watch: int | None = None
    """Its ``inotify`` watch, while armed."""
    woken: bool = False
    """Written to while its watch was armed, and not looked at since."""
    finished: bool = False
    """Its job has ended and the last cut is made: no look cuts it again."""
    closed: bool = False

    def size(self) -> int:
        return os.fstat(self.job_fd).st_size

    def opened(self) -> int:
        """The descriptor to cut through, opened when first needed."""
        if self.fd is None:
            self.fd = os.open(f"/proc/self/fd/{self.job_fd}", os.O_RDWR | os.O_CLOEXEC)
        return self.fd

    def close(self) -> None:
        self.closed = True
        for fd in (self.fd, self.job_fd):
            if fd is not None:
                os.close(fd)


def open_capped(log: int, cap: int) -> CappedLog | None:
    """The job's log under ``cap``, given ``log``, the descriptor the job writes to, which
    is the capped log's to close from now on; None (and ``log`` left as it is) when it is
    no regular file, which cannot be cut."""
    info = os.fstat(log)
    if not stat.S_ISREG(info.st_mode):
        return None
    return CappedLog(log, cap, info.st_blksize or 4096, kept=info.st_size)


def cut(log: CappedLog, *, final: bool, coming: int = 0) -> tuple[int, int]:
    """Cut the log if it is (or, ``coming`` bytes later, will be) over its cap: its size
    (less any hole) before and after."""
    size = log.size()
    if size + max(coming, 0) <= log.cap:  # within the cap, whatever hole it has
        return size, size
    fd = log.opened()
    head = head_end(log.cap, log.block)
    hole = hole_after(fd, head, size)
    kept = size - hole
    amount = bytes_to_cut(kept, log.cap, log.block, final=final, coming=coming)
    if not amount:
        return kept, kept
    with held(fd, exclusive=True):
        before = marker_cut(os.pread(fd, MARKER_ROOM, head - MARKER_ROOM))
        total = _take_out(log, fd, head, hole, amount, before)
        if total is None:
            return kept, kept
        mark = marker(total, log.cap)
        os.pwrite(fd, mark, head - len(mark))
    return kept, kept - amount


def _take_out(log: CappedLog, fd: int, head: int, hole: int, amount: int,
              before: int) -> int | None:
    """Take ``amount`` bytes out after the head (and its hole) the first way that works: the
    count of bytes cut there so far, or None if the file system refused for now."""
    while log.ways:
        way = log.ways[0]
        try:
            if way == COLLAPSE:
                with contextlib.suppress(OSError):  # only to spare the disk; not needed
                    fallocate(fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE,
                              head + hole, amount)
                fallocate(fd, _FALLOC_FL_COLLAPSE_RANGE, head, hole + amount)
                return before + hole + amount
            if way == PUNCH:
                fallocate(fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE,
                          head + hole, amount)
                return hole + amount
            size = os.fstat(fd).st_size
            os.ftruncate(fd, head)
            return before + size - head
        except OSError as error:
            if error.errno not in _REFUSED:
                return None  # out of space, an I/O error: tried again at the next look
            log.ways.pop(0)
    return None


class LogCaps:
    """Every capped log of the supervisor's running jobs, watched from one thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._due: list[tuple[float, int, CappedLog]] = []
        """A heap of looks to take: when, a tie-breaker, the log."""
        self._order = itertools.count()
        self._watched: dict[int, CappedLog] = {}
        """Logs whose ``inotify`` watch is armed, by watch descriptor."""
        self._inotify: int | None = None
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._started = False

    def watch(self, log: int, cap: int) -> CappedLog | None:
        """Keep the log the job writes to through ``log`` under ``cap``, from now on; the
        capped log owns ``log`` from here (None: no regular file, ``log`` is the caller's).

        A job that has written nothing yet is only given an ``inotify`` watch: a launch
        wakes no thread, and a job that never writes costs one watch.
        """
        capped = open_capped(log, cap)
        if capped is None:
            return None
        self._start()
        if not self._arm(capped, capped.kept):
            with self._lock:
                self._schedule(capped, time.monotonic())
            _write_quietly(self._wake_write, b".")
        return capped

    def finish(self, capped: CappedLog) -> None:
        """The job has ended: cut its log down to the cap one last time. Before its exit
        status is written (the run may end once it is); :meth:`release` lets it go after."""
        with capped.lock:
            if capped.closed or capped.finished:
                return
            with contextlib.suppress(OSError):
                cut(capped, final=True)
            capped.finished = True

    def release(self, capped: CappedLog) -> None:
        """Stop watching a finished log and close it. Apart from :meth:`finish` so that it
        comes after the daemon is told the record is complete: removing an ``inotify`` watch
        wakes the watching thread, which would otherwise compete with that word for the CPU
        between one step's end and the next step's start."""
        with capped.lock:
            if capped.closed:
                return
            self._disarm(capped)
            capped.close()

    def _start(self) -> None:
        """The ``inotify`` instance and the watching thread, once, at the first log."""
        with self._lock:
            if self._started:
                return
            self._started = True
            self._inotify = _inotify_init()
        threading.Thread(target=self._serve, name="cronduit-log-cap", daemon=True).start()

    # -- the watching thread -------------------------------------------------------------

    def _serve(self) -> None:
        poller = select.poll()
        poller.register(self._wake_read, select.POLLIN)
        if self._inotify is not None:
            poller.register(self._inotify, select.POLLIN)
        while True:
            for fd, _ in poller.poll(self._wait_ms()):
                if fd == self._wake_read:
                    _drain(self._wake_read)
                else:
                    self._take_events()
            for capped in self._due_now():
                try:
                    self._look(capped)
                except Exception as error:  # a fault of cronduit's: this log goes uncapped
                    _say(f"cronduit supervisor: max_log no longer kept on a log: {error!r}")

    def _look(self, capped: CappedLog) -> None:
        with capped.lock:
            if capped.closed or capped.finished:
                return
            now = time.monotonic()
            # What the log will grow by before this look and its cut are done, at the rate
            # it last grew: a fast writer is cut before it passes the cap.
            coming = int(capped.rate * (SOONEST + capped.cut_seconds))
            try:
                before, after = cut(capped, final=False, coming=coming)
                seen = capped.size()
            except OSError:  # an I/O error: looked at again later
                before = after = capped.kept
                seen = -1
            done = time.monotonic()
            if after != before:
                capped.cut_seconds = done - now
            grown = before - capped.kept
            # The fastest recent growth, halved at each look: a job held up by the last cut
            # (a cut blocks its writes) must not look slow and go unseen for long.
            measured = grown / max(now - capped.looked_at, SOONEST)
            rate = capped.rate = max(measured, capped.rate / 2)
            capped.kept, capped.looked_at = after, done
            # Just woken from quiet, the growth measured spans the quiet too: look again soon.
            wait = SOONEST if capped.woken else next_look(capped.cap - after, rate)
            capped.woken = False
            if grown > 0 or not self._arm(capped, seen):
                with self._lock:
                    self._schedule(capped, now + wait)

    def _arm(self, capped: CappedLog, seen: int) -> bool:
        """Leave a log that stopped growing at ``seen`` bytes to ``inotify``; False if it
        cannot be."""
        if self._inotify is None:
            return False
        path = f"/proc/self/fd/{capped.job_fd}".encode()
        watch = _libc.inotify_add_watch(self._inotify, path, _IN_MODIFY | _IN_ONESHOT)
        if watch < 0:
            return False
        with self._lock:
            capped.watch = watch
            self._watched[watch] = capped
            if capped.size() != seen:  # written before the watch: no event will say so
                self._schedule(capped, time.monotonic() + SOONEST)
                _write_quietly(self._wake_write, b".")
        return True

    def _disarm(self, capped: CappedLog) -> None:
        with self._lock:
            capped.due = None
            if capped.watch is not None:
                self._watched.pop(capped.watch, None)
                if self._inotify is not None:
                    _libc.inotify_rm_watch(self._inotify, capped.watch)
                capped.watch = None

    def _take_events(self) -> None:
        assert self._inotify is not None
        try:
            data = os.read(self._inotify, 64 * (_EVENT.size + 256))
        except BlockingIOError:
            return
        now = time.monotonic()
        offset = 0
        with self._lock:
            while offset + _EVENT.size <= len(data):
                watch, mask, _, name_length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + name_length
                capped = self._watched.pop(watch, None)  # one shot: the watch is gone
                if capped is not None and capped.watch == watch:
                    capped.watch = None
                    if mask & _IN_MODIFY and not capped.closed:
                        capped.woken = True
                        self._schedule(capped, now)

    def _schedule(self, capped: CappedLog, when: float) -> None:
        """Look at ``capped`` at ``when`` (under ``self._lock``)."""
        if capped.due is not None and capped.due <= when:
            return
        capped.due = when
        heapq.heappush(self._due, (when, next(self._order), capped))

    def _due_now(self) -> list[CappedLog]:
        now = time.monotonic()
        due = []
        with self._lock:
            while self._due and self._due[0][0] <= now:
                when, _, capped = heapq.heappop(self._due)
                if capped.due == when and not capped.closed:
                    capped.due = None
                    due.append(capped)
        return due

    def _wait_ms(self) -> int | None:
        with self._lock:
            while self._due and self._due[0][2].due != self._due[0][0]:
                heapq.heappop(self._due)  # replaced by an earlier look, or finished
            if not self._due:
                return None
            return max(0, int((self._due[0][0] - time.monotonic()) * 1000) + 1)


def _inotify_init() -> int | None:
    """An ``inotify`` instance, or None where there is none (the limit on instances, say):
    quiet logs are then looked at every :data:`~cronduit.core.logcap.LATEST` seconds."""
    fd: int = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    return fd if fd >= 0 else None


def _drain(fd: int) -> None:
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 4096):
            pass


def _say(line: str) -> None:
    """A line on the supervisor's standard error: the daemon's log, while it lives."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def _write_quietly(fd: int, data: bytes) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, data)


__all__ = ["LATEST", "CappedLog", "LogCaps", "cut", "fallocate", "held", "hole_after",
           "open_capped"]
