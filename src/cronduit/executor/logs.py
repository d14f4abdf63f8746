"""A run's log: one file that every attempt's job appends stdout and stderr to.

Bytes, not text: a job may print anything, and a reader that decodes is the one that
knows how it wants to show what it cannot decode.

A log past its cap has been cut while the job wrote (:mod:`.logcap`): its head, the marker
where bytes were cut, then its tail. Where the file system could only punch a hole, the
hole reads as NUL bytes; the reader skips every hole. A reader that follows the log as it
grows (``cronduit job logs --follow``) counts in the job's own bytes, the ones it wrote (its
*position*), so that a cut behind it does not move it, and a cut of bytes it had not shown
yet is told as a marker of its own.

Where the state is shared by many hosts, the end of each run's log is kept in the store for
the hosts that do not have the file (:func:`read_tail`, :mod:`cronduit.core.log_tails`).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

from cronduit.core.log_tails import TAIL_BYTES, LogTail
from cronduit.core.logcap import MARKER_ROOM, head_end, marker, marker_cut
from cronduit.executor.logcap import LOCK_PATIENCE, held, hole_after

CHUNK_BYTES = 64 * 1024
"""The most a single chunk of :class:`LogReader` holds."""


def read_data(fd: int, start: int, end: int) -> tuple[bytes, int]:
    """The next chunk of data from ``start`` (skipping a hole) before ``end``, and where it
    ends; an empty chunk when only a hole is left."""
    try:
        data = os.lseek(fd, start, os.SEEK_DATA)
        stop = min(end, os.lseek(fd, data, os.SEEK_HOLE), data + CHUNK_BYTES)
    except OSError as error:
        if error.errno == errno.ENXIO:  # nothing but a hole from here on
            return b"", end
        data, stop = start, min(end, start + CHUNK_BYTES)  # no holes told: read it all
    if data >= end:
        return b"", end
    chunk = os.pread(fd, stop - data, data)
    return chunk, data + len(chunk)


class LogReader:
    """Reads a log as it grows, through the cuts of its cap, from a position in the job's
    bytes on.

    ``cap`` is the log's cap (``settings.max_log``): it says where the head ends, so where
    the marker and its count are. A cap other than the one the log was cut under finds no
    marker there; the reader then still skips holes, and a log that shrank under it is
    picked up at its new end.
    """

    def __init__(self, fd: int, cap: int | None, position: int = 0) -> None:
        self._fd = fd
        self._cap = cap
        self.position = position
        """How many of the job's bytes (cut ones included) are behind the reader."""
        self._patience = LOCK_PATIENCE

    def chunks(self) -> Iterator[bytes]:
        """What was written since the last call, in chunks, up to the log's end as it is."""
        while chunk := self.next_chunk():
            yield chunk

    def next_chunk(self) -> bytes:
        """The next chunk after :attr:`position`; empty at the log's end."""
        with held(self._fd, exclusive=False, patience=self._patience) as locked:
            # The log as it is between two cuts. A cut that holds the lock past all patience
            # (its supervisor stopped) is waited for once, not at every chunk.
            self._patience = LOCK_PATIENCE if locked else 0.0
            size = os.fstat(self._fd).st_size
            head, cut, shifted = self._layout(size)
            if not cut and self.position > size:  # shrank, cut under a cap not this one
                self.position = size
            told = b""
            # In the head, unless a marker has since covered bytes it showed as they were.
            if self.position < head and (
                    not cut or self.position <= head - len(self._marker(cut))):
                return self._head_chunk(head, cut, size)
            if self.position < head + cut:  # bytes cut (or covered) before they were shown
                told = self._marker(head + cut - self.position)
                self.position = head + cut
            start = self.position - cut if shifted else self.position
            if start > size:  # shrank, cut under a cap not this one
                self.position -= start - size
                start = size
            chunk, end = read_data(self._fd, start, size)
            self.position += end - start
            return told + chunk

    def _layout(self, size: int) -> tuple[int, int, bool]:
        """Where the head ends, how many bytes were cut there, and whether the tail moved up
        behind the head (a cut taken out) rather than after a hole (a cut punched)."""
        if self._cap is None:
            return size, 0, True
        head = head_end(self._cap, os.fstat(self._fd).st_blksize or 4096)
        if size <= head:
            return head, 0, True
        hole = hole_after(self._fd, head, size)
        if hole:
            return head, hole, False
        return head, marker_cut(os.pread(self._fd, MARKER_ROOM, head - MARKER_ROOM)), True

    def _head_chunk(self, head: int, cut: int, size: int) -> bytes:
        """The next bytes of the head; never ending inside the marker, which says how many
        bytes were cut, so once it is read the reader is past them."""
        chunk, end = read_data(self._fd, self.position, min(head, size))
        if cut and head - MARKER_ROOM < end < head:
            rest, end = read_data(self._fd, end, head)
            chunk += rest
        self.position = max(end, self.position)
        if cut and self.position >= head:
            self.position = head + cut
        return chunk

    def _marker(self, cut: int) -> bytes:
        return marker(cut, self._cap or 0)


def read_tail(path: Path, cap: int | None, limit: int = TAIL_BYTES) -> LogTail | None:
    """The last ``limit`` bytes of the log at ``path`` as a reader from its start would show
    them (the hole of a punched cut left out), with the log's size so read and the count of
    bytes its cap cut; None when there is no log. ``cap`` is the log's ``max_log``: it says
    where the head, and any hole after it, are.

    Read under the shared lock, so never half way through a cut; two ``pread`` calls at
    most, however long the log: this runs at the end of every attempt where the store keeps
    tails.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        with held(fd, exclusive=False):
            return _tail(fd, cap, limit)
    finally:
        os.close(fd)


def _tail(fd: int, cap: int | None, limit: int) -> LogTail:
    info = os.fstat(fd)
    end = info.st_size
    head = end if cap is None else min(end, head_end(cap, info.st_blksize or 4096))
    hole = hole_after(fd, head, end)
    after = end - head - hole  # the bytes after the head (and its hole): the log's tail
    if after >= limit:
        data = _pread(fd, end - limit, end)
    else:
        data = _pread(fd, max(0, head - (limit - after)), head) + _pread(fd, end - after, end)
    cut = marker_cut(_pread(fd, max(0, head - MARKER_ROOM), head)) if end > head else 0
    return LogTail(data, end - hole, cut)


def _pread(fd: int, start: int, end: int) -> bytes:
    """The bytes from ``start`` to ``end``, all of them (a log shrunk by a cut meanwhile
    gives fewer)."""
    parts = []
    while start < end:
        chunk = os.pread(fd, end - start, start)
        if not chunk:
            break
        parts.append(chunk)
        start += len(chunk)
    return b"".join(parts)
