"""Log tails: the end of each run's log, read for the store to keep (a state shared by many
hosts, :mod:`cronduit.core.log_tails`).

Only an engine whose plan keeps tails asks, and it asks the runner once an attempt's end is
reported, before the transaction that records the end opens: the commit waits on no file.
The tail rides on the attempt's report and is written with its end
(:func:`~cronduit.engine.ending.attempt_ended`).
"""

from __future__ import annotations

from dataclasses import replace

from cronduit.core.lifecycle import AttemptReport
from cronduit.engine.ending import Ended
from cronduit.ports import Runner


def with_tail(runner: Runner, run_id: str, report: AttemptReport,
              attempt: int | None = None) -> AttemptReport:
    """The report with the run's log tail as the runner reads it now. Nothing writes to the
    log between an attempt's end and the next attempt's start, which waits for this end to
    be recorded, so now is the attempt's end."""
    return replace(report, log_tail=runner.log_tail(run_id, attempt))


def with_tails(runner: Runner, ended: Ended) -> Ended:
    """:func:`with_tail` for each attempt's end the runner reported."""
    return [(run_id, attempt, with_tail(runner, run_id, report, attempt))
            for run_id, attempt, report in ended]
