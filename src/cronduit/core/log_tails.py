"""What the store keeps of a run's log, so that it can be read from any host (SPEC §10).

A run's log stays in its folder on the host that ran it. When the state is in PostgreSQL,
shared by daemons on many hosts, ``cronduit job logs`` may be run on a host that never had
the file; so the end of each attempt stores the log's last :data:`TAIL_BYTES` with the run
(the log is one file for all of a run's attempts, so each end replaces the tail stored
before it). On SQLite the state and the logs are on the one host, and nothing is stored.

The tail is the log as its readers show it (:mod:`cronduit.executor.logs`): a hole where
``max_log`` punched its cut is left out, its marker stays where it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from cronduit.core.sizes import MiB

TAIL_BYTES = 1 * MiB
"""The most of a log's end the store keeps for a run: enough for the error that ended it,
small enough to write in the transaction that records the attempt's end."""


@dataclass(frozen=True, slots=True)
class LogTail:
    """The end of a run's log as it was read, and how much of the log it is."""

    data: bytes
    """The log's last bytes, :data:`TAIL_BYTES` at most; raw, as the job wrote them."""
    size: int
    """How many bytes the log held when it was read (a punched hole left out): all of it
    is in :attr:`data` when they are equal."""
    cut: int = 0
    """How many bytes ``max_log`` had cut out of the log's middle by then (its marker's
    count): the job wrote :attr:`size` plus this many."""

    def __post_init__(self) -> None:
        if not len(self.data) <= min(self.size, TAIL_BYTES) or self.cut < 0:
            raise ValueError(f"a log tail of {len(self.data)} bytes cannot be the end of a "
                             f"log of {self.size} bytes (cut {self.cut})")

    @property
    def whole(self) -> bool:
        """Whether the tail is the whole log (as ``max_log`` left it)."""
        return len(self.data) == self.size


def tail_of(log: bytes, cut: int = 0) -> LogTail:
    """The tail the store keeps of a log held whole in memory (the tests' fake runner)."""
    return LogTail(log[-TAIL_BYTES:], len(log), cut)
