"""A run's log: one file that every attempt's job appends stdout and stderr to.

Bytes, not text: a job may print anything, and a reader that decodes is the one that
knows how it wants to show what it cannot decode.

A log past its cap has been cut while the job wrote (:mod:`.logcap`): its head, the marker
where bytes were cut, then its tail. Where the file system could only punch a hole, the
hole reads as NUL bytes; these readers skip every hole. A reader that follows the log as it
grows counts in the job's own bytes, the ones it wrote (its *position*), so that a cut
behind it does not move it, and a cut of bytes it had not shown yet is told as a marker of
its own.
"""

from __future__ import annotations

import errno
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from cronduit.core.logcap import MARKER_ROOM, head_end, marker, marker_cut
from cronduit.executor.exits import watching
from cronduit.executor.logcap import LOCK_PATIENCE, held, hole_after
from cronduit.executor.states import Attempt

CHUNK_BYTES = 64 * 1024
"""The most a single chunk of :func:`follow_log` holds."""


def read_log(log_path: Path, tail_bytes: int | None = None) -> bytes:
    """The log's content (holes skipped), or its last ``tail_bytes`` bytes; empty if it does
    not exist."""
    try:
        fd = os.open(log_path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return b""
    try:
        with held(fd, exclusive=False):  # all of it at one moment: no cut half way
            content = b"".join(_data(fd, 0, os.fstat(fd).st_size))
    finally:
        os.close(fd)
    return content if tail_bytes is None else content[max(0, len(content) - tail_bytes):]


def _data(fd: int, start: int, end: int) -> Iterator[bytes]:
    """The bytes from ``start`` to ``end``, holes left out, in chunks."""
    position = start
    while position < end:
        chunk, position = read_data(fd, position, end)
        if not chunk:
            return
        yield chunk


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


async def follow_log(
    log_path: Path, attempt: Attempt, offset: int = 0, poll_interval: float = 0.2,
    cap: int | None = None,
) -> AsyncIterator[bytes]:
    """Yield the log from ``offset`` on, chunk by chunk as it grows, until the attempt ends.

    The wait between looks is a wait on the attempt's exit, so the end is noticed at once
    and whatever the job wrote last is still yielded. ``cap`` is the log's ``max_log``, so
    that cuts are followed (:class:`LogReader`).
    """
    with watching(attempt) as watch, log_path.open("rb") as log:
        reader = LogReader(log.fileno(), cap, offset)
        while True:
            ended = watch.exited()  # before reading, so the last read drains everything
            chunk = reader.next_chunk()
            if chunk:
                yield chunk
            elif ended:
                return
            else:
                await watch.exited_async(poll_interval)
