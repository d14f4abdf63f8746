"""How the CLI words what it follows: a run waiting between attempts, live and plain."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from cronduit.cli.render import CLEAR_LINE, RetryNews, retry_line
from cronduit.ports import Run

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def run_in(state: str, attempts: int, **values: object) -> Run:
    run = Run(id="r1", job="build", kind="manual", label="manual", state=state,
              created_at=T0, started_at=T0, attempts=attempts)
    return replace(run, **values)


BACKOFF = run_in("backoff", 1, exit_status=1, reason="exit status 1",
                 next_attempt_at=T0 + timedelta(seconds=30))


def test_the_retry_line_names_the_attempt_its_exit_status_and_the_next_start() -> None:
    """The countdown rounds up to whole seconds and says "due now" once the time has come."""
    assert [
        "attempt 1 failed (exit status 1); attempt 2 at 2026-12-01T10:00:30Z (in 30s)",
        "attempt 1 failed (exit status 1); attempt 2 at 2026-12-01T10:00:30Z (in 1s)",
        "attempt 1 failed (exit status 1); attempt 2 at 2026-12-01T10:00:30Z (due now)",
        "attempt 1 failed (exit status 1); attempt 2 at 2026-12-01T10:00:30Z",
    ] == [retry_line(BACKOFF, T0), retry_line(BACKOFF, T0 + timedelta(seconds=29.5)),
          retry_line(BACKOFF, T0 + timedelta(seconds=31)), retry_line(BACKOFF, None)]


def test_a_live_line_counts_down_in_place_and_stays_when_the_next_attempt_starts() -> None:
    """On a terminal the line is rewritten when its countdown moves and ended with a
    newline, without the countdown, before the next attempt's output."""
    written: list[str] = []
    news = RetryNews(live=True, write=written.append)
    news.show(run_in("running", 1), T0)
    news.show(BACKOFF, T0)
    news.settle(BACKOFF)
    news.show(BACKOFF, T0 + timedelta(seconds=0.2))
    news.show(BACKOFF, T0 + timedelta(seconds=20))
    news.settle(run_in("running", 2))
    news.settle(run_in("running", 2))
    head = f"{CLEAR_LINE}cronduit: attempt 1 failed (exit status 1); attempt 2 at " \
           "2026-12-01T10:00:30Z"
    assert [f"{head} (in 30s)", f"{head} (in 10s)", f"{head}\n"] == written


def test_plain_news_is_one_line_per_backoff() -> None:
    """Piped, each attempt that failed and will be retried is one line, said once."""
    written: list[str] = []
    news = RetryNews(live=False, write=written.append)
    second = run_in("backoff", 2, exit_status=137, reason="killed by signal 9",
                    next_attempt_at=T0 + timedelta(minutes=2))
    for run in (BACKOFF, BACKOFF, run_in("running", 2), second, second):
        news.settle(run)
        news.show(run, T0)
    assert [
        "cronduit: attempt 1 failed (exit status 1); attempt 2 at 2026-12-01T10:00:30Z "
        "(in 30s)\n",
        "cronduit: attempt 2 failed (killed by signal 9); attempt 3 at 2026-12-01T10:02:00Z "
        "(in 2m)\n",
    ] == written
