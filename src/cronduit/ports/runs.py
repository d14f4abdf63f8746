"""The store's work and runs: the triggers waiting in each job's work, the runs that consume
them, and the run-ended events that ``job wait`` and ``on.after`` follow.

A run is a job's history: it is never deleted, only its files are pruned. Its state moves
``running`` (-> ``backoff`` -> ``running``)* -> ``ended`` (:class:`RunState`); the schema
refuses any other, and keeps at most one exclusive run of a job in progress.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, Protocol

from cronduit.core.log_tails import LogTail
from cronduit.ports.records import Event, Run, RunEnd, RunLogTail


@dataclass(frozen=True, slots=True)
class JobWork:
    """What a trigger arriving for a job meets in the store: the job's runs going and the
    newest trigger waiting in its work (see :meth:`WorkAndRuns.jobs_work`)."""

    running: int = 0
    """Runs not ended, a run sleeping in backoff included."""
    backoff: int = 0
    sleeping: str | None = None
    """The oldest run in backoff, by id: the one an arriving trigger may join."""
    newest_waiting: Event | None = None


NO_WORK = JobWork()
"""A job with no run going and nothing waiting."""


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs :meth:`WorkAndRuns.find_runs` lists: each field given narrows the list,
    None leaves it open."""

    job: str | None = None
    outcome: str | None = None
    """An ended run's outcome (``success``, ``failure``...); a run going has none."""
    kind: str | None = None
    """The kind of the trigger that started the run (``timer``, ``manual``...)."""
    since: datetime | None = None
    """Runs created at or after this instant."""
    until: datetime | None = None
    """Runs created before this instant."""


class RunMark(NamedTuple):
    """A run as a strip of a job's recent runs shows it (:meth:`WorkAndRuns.run_marks`): the
    few fields a mark on the dashboard's home page needs, read without the whole record.

    A named tuple, not a frozen dataclass like the other records: a page reads 2,000 of
    them, and a frozen dataclass sets each field through ``object.__setattr__`` (1.3 ms a
    page on its own, four times a tuple's cost). Its fields are the columns of the store's
    ``run_marks`` query, in order, so a row becomes a mark as it is."""

    id: str
    job: str
    kind: str
    state: str
    """``running``, ``backoff`` or ``ended`` (:class:`~cronduit.core.enums.RunState`)."""
    outcome: str | None
    reason: str


class WorkAndRuns(Protocol):
    """Each job's work, its runs, and their ends."""

    # -- work: events routed to a job and not consumed yet ------------------------------

    def waiting_events(self, job: str, limit: int | None = None) -> list[Event]:
        """The job's events in state ``waiting`` (routed to its work, not consumed yet),
        oldest first: what the next run may consume; with ``limit``, only the oldest that
        many (the head of a long queue, which is all most run ends look at)."""
        ...

    def newest_waiting_event(self, job: str) -> Event | None:
        """The newest of :meth:`waiting_events` (highest seq), None when nothing waits; one
        row read however long the queue (asked per arriving trigger)."""
        ...

    def jobs_work(self, jobs: Collection[str]) -> dict[str, JobWork]:
        """:class:`JobWork` of each of ``jobs`` that has a run going or a trigger waiting (a
        job left out has neither), in two statements however many jobs: a routing batch
        reads its jobs' state at once rather than in three round trips per trigger."""
        ...

    def jobs_with_waiting(self) -> list[str]:
        """Every job that has an event waiting, each once, by name: what start-up looks at."""
        ...

    def waiting_counts(self) -> dict[str, int]:
        """How many events wait in each job's work (state ``waiting``), for every job where
        any waits (a job left out has none): one statement however many jobs, read by the
        daemon's metrics every few seconds."""
        ...

    # -- runs ---------------------------------------------------------------------------

    def insert_run(self, run: Run) -> None:
        """Add ``run``. Raises :class:`~cronduit.ports.Conflict` (nothing written) when its id
        was used before, or when it is exclusive while the job has an exclusive run not
        ended. Concurrency: both are unique keys, so of two transactions starting an
        exclusive run of one job, on one daemon or two, the later commit is refused."""
        ...

    def update_run(self, run_id: str, **values: object) -> None:
        """Set the named fields of the run (the names of :class:`Run`'s fields; any other
        raises ValueError before anything is written); nothing for an unknown id or no
        values. The database refuses a ``state`` outside :class:`RunState`.

        Concurrency: not guarded; the caller owns the run (the engine that started it), and
        of two writes of one field the last commit wins."""
        ...

    def record_starts(self, starts: Sequence[tuple[str, int, int]]) -> None:
        """For each ``(run id, pid, process start time)``, record the process of the run's
        attempt, in one statement (the launches of a tick); nothing else of the run
        changes. Unknown ids are ignored; recording the same again is harmless."""
        ...

    def get_run(self, run_id: str) -> Run | None:
        """The run, or None for an unknown id."""
        ...

    def active_runs(self, job: str | None = None) -> list[Run]:
        """Runs not ended (``running`` or ``backoff``), of ``job`` or of every job, in the
        order they were created."""
        ...

    def active_runs_of_node(self, node: str) -> list[Run]:
        """Runs not ended that ``node`` holds (its processes, its retries), in the order
        they were created: what a restarted daemon of that node adopts."""
        ...

    def cancelled_runs(self, node: str | None) -> list[Run]:
        """``running`` runs of ``node`` (None: of any node) asked to stop (a cancel reason
        set, by a replace or a deadline, possibly on another node), in creation order."""
        ...

    def claim_jobs(self, jobs: Iterable[str]) -> set[str]:
        """:meth:`claim_job` for many jobs in one round trip: the ones taken."""
        ...

    def claim_job(self, job: str) -> bool:
        """Take the job's work for this transaction: False while another transaction (on
        another daemon) holds it, which then decides what waits and what starts. A backend
        with one writer always gives it."""
        ...

    def active_count(self, job: str) -> tuple[int, int]:
        """(runs of ``job`` not ended, how many of them are in backoff), read in one go: the
        overlap policy's input for each arriving trigger."""
        ...

    def due_backoffs(self, now: datetime, node: str | None = None,
                     excluded: Sequence[str] = ()) -> list[Run]:
        """Runs in ``backoff`` whose next attempt or deadline is at or before ``now``, in
        the order they were created: of ``node`` or of no node (None: any node's), leaving
        out the ``excluded`` jobs'. A backend shared by many daemons locks the rows it
        returns and skips locked ones, so a retry is claimed once."""
        ...

    def overdue_runs(self, now: datetime, node: str | None = None) -> list[Run]:
        """``running`` runs (of ``node``; None: of any) whose deadline is at or before
        ``now`` and that nobody has asked to stop yet (no ``cancel_reason``), in the order
        they were created. The caller sets the cancel reason as it stops them, so each is
        returned until then only."""
        ...

    def lost_nodes(self, me: str, limit: int) -> list[tuple[str, int]]:
        """Up to ``limit`` nodes other than ``me`` whose lease expired by the store's clock
        and that no node has swept yet, as (name, epoch), each locked for this transaction
        and skipped while another holds it. A store with one daemon has none."""
        ...

    def release_backoffs(self, node: str) -> None:
        """Runs of ``node`` sleeping before a retry are no node's any more: any may claim
        the retry."""
        ...

    def retire_node(self, name: str, epoch: int, by: str) -> None:
        """Mark the node swept (by ``by``): its lease is over for good."""
        ...

    def last_successes(self, jobs: Collection[str]) -> dict[str, datetime]:
        """When each of ``jobs`` last ended a run ``success`` (the newest ``finished_at`` of
        its runs of that outcome); a job left out never succeeded. One index look-up per
        job, however long its history: a job that has failed for months is not read run by
        run (read by the daemon's metrics every few seconds, for every job)."""
        ...

    def history(self, job: str, limit: int) -> list[Run]:
        """The job's runs, ended or not, newest first, at most ``limit``."""
        ...

    def recent_runs(self, jobs: Collection[str], per_job: int) -> dict[str, list[Run]]:
        """:meth:`history` of each of ``jobs`` at once: each job's newest ``per_job`` runs,
        ended or not, newest first; a job without runs is left out. One statement however
        many jobs, each job read from its newest run down (never its whole history): the
        dashboard's strip of recent runs for a page of jobs."""
        ...

    def run_marks(self, jobs: Collection[str], per_job: int) -> dict[str, list[RunMark]]:
        """:meth:`recent_runs` as :class:`RunMark`: each of ``jobs``' newest ``per_job`` runs,
        newest first, a job without runs left out; one statement, each job read from its
        newest run down, each run's row found by its key. The strips of a page of 100 jobs
        (2,000 runs) read in a third of the time of their whole records."""
        ...

    def jobs_last_ended(self, jobs: Collection[str], outcomes: Collection[str]) -> set[str]:
        """Those of ``jobs`` whose last counted run ended with one of ``outcomes``: the
        newest run that ended and was not skipped, the run a job's status reports as its
        last (:func:`cronduit.core.status.last_counted`). Read from each job's facts, kept
        as its runs are written (never from its runs): which of 10,000 jobs are failing,
        for the dashboard's filter and the API's ``healthy``, is a read of the failing
        jobs' rows, however long their histories."""
        ...

    def jobs_skipped_in_a_row(self, jobs: Collection[str], count: int) -> set[str]:
        """Those of ``jobs`` whose newest ``count`` runs (ended or not) were all skipped; a
        job with fewer runs is left out. ``count`` is 1 to
        :data:`~cronduit.core.status.SKIPS_IN_A_ROW` (the facts kept go no further;
        ValueError otherwise). Read from each job's facts, as :meth:`jobs_last_ended`."""
        ...

    def find_runs(self, where: RunFilter, after: str | None, limit: int) -> list[Run]:
        """Up to ``limit`` runs that ``where`` selects, newest first (by the order they were
        created in), ended or not; with ``after``, only those created before the run of
        that id (none when no run has that id). Keyset pagination: the next page starts
        after the last run of this one, so runs created meanwhile (they are newer) never
        shift it, and none is seen twice or skipped."""
        ...

    def runs_to_prune(self, job: str, keep: int, node: str | None = None) -> list[Run]:
        """Ended runs of ``job`` older than its newest ``keep`` runs (ended or not) whose
        files are still kept (``files_pruned`` false), oldest first. ``keep`` is at least 1.
        ``node``: only the runs that node ran (their files are on its host); None: all."""
        ...

    # -- log tails: a run's log as hosts without its file read it -----------------------

    def store_log_tail(self, run_id: str, attempt: int, tail: LogTail, at: datetime) -> None:
        """Keep ``tail``, read when attempt ``attempt`` of the run ended, as the run's log
        tail, replacing the one an earlier attempt's end stored (a run has one log, so the
        newest tail holds the most of it); one from an earlier attempt than the tail kept
        changes nothing. The run need not be known. Concurrency: of two writes for one run,
        the later attempt's stays."""
        ...

    def stored_log_tail(self, run_id: str) -> RunLogTail | None:
        """The run's log tail as :meth:`store_log_tail` kept it, bytes intact; None when
        none was stored."""
        ...

    def drop_log_tail(self, run_id: str) -> None:
        """Delete the run's log tail, if it has one: retention pruned its files, and the
        tail goes with them."""
        ...

    # -- run ends -----------------------------------------------------------------------

    def insert_run_end(self, job: str, run_id: str, event: str, outcome: str,
                       ended_at: datetime) -> int:
        """Record that ``run_id`` ended, with its run-ended ``event`` (``completed``,
        ``failed``, ``timed_out``, ``cancelled``) and outcome; its seq, or 0 when that
        run's end was recorded before (nothing written: a run ends once, a unique key).
        Seqs rise in the order ends are recorded."""
        ...

    def run_ends_after(self, job: str | None, seq: int) -> list[RunEnd]:
        """Run ends with a seq above ``seq``, of ``job`` or of every job, in seq order: what
        ``job wait`` follows from :meth:`last_run_end_seq`."""
        ...

    def unchained_run_ends(self, limit: int) -> list[RunEnd]:
        """Up to ``limit`` run ends not marked chained yet, in seq order: what ``on.after``
        chaining has still to handle."""
        ...

    def mark_chained(self, seq: int) -> None:
        """Mark a run end handled by chaining, so it is not read again. Idempotent. The
        chained triggers are accepted in the same transaction, with delivery ids made from
        the run, so a chaining replayed after a crash accepts nothing twice."""
        ...

    def last_run_end_seq(self) -> int:
        """The highest run-end seq, 0 when there is none: a follower's starting point, so
        that ends recorded before it started are not taken for the next one."""
        ...
