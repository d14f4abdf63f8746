"""What the CLI prints: values stored raw by an older version cannot drive the terminal; a
run waiting between attempts, said live and plain."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from cronduit.cli import cli
from cronduit.cli.render import CLEAR_LINE, RetryNews, echo_line, echo_table, json_text, retry_line
from cronduit.core.text import UNSAFE
from cronduit.ports import Run
from cronduit.store.sqlite import SqliteStore

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
RAW = "webhook \x1b[2J\x1b]0;pwned\x07\x00\u202eevil\x9b"


def test_a_table_shows_control_characters_as_escapes(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """A cell with ESC and NUL prints as text, and the columns still line up."""
    echo_table(["RUN", "TRIGGER"], [["r1", "a\x1b[2Jb"], ["r2", "plain"]])
    assert ["RUN  TRIGGER", "r1   a\\x1b[2Jb", "r2   plain"] == capsys.readouterr().out.splitlines()


def test_a_line_shows_control_characters_as_escapes(capsys: pytest.CaptureFixture[str]) -> None:
    """A line cannot be split in two or recolour the terminal."""
    echo_line("reason: a\nb\x1b[31m")
    assert "reason: a\\x0ab\\x1b[31m\n" == capsys.readouterr().out


@pytest.mark.parametrize("value", [RAW, {"label": RAW, "n": 1, "list": ["\x7f", "\ud800"]}])
def test_json_reads_back_whole_with_nothing_unsafe_on_the_line(value: object) -> None:
    """JSON escapes what a terminal would act on, and still reads back as the same value."""
    text = json_text(value)
    assert UNSAFE.search(text) is None
    assert value == json.loads(text)


def test_job_history_of_a_label_stored_raw_prints_it_cleaned(tmp_path: Path) -> None:
    """A run recorded before labels were cleaned shows escapes in the table; --json keeps it."""
    (tmp_path / "cronduit.yaml").write_text('jobs:\n  poke: {run: "true"}\n')
    store = SqliteStore(tmp_path / ".cronduit" / "cronduit.db")
    with store.transaction() as tx:
        tx.insert_run(Run("r1", "poke", "webhook", RAW, "ended", T0, outcome="success"))
    store.close()
    config = ["-c", str(tmp_path / "cronduit.yaml")]
    table = CliRunner().invoke(cli, ["job", "history", "poke", *config])
    as_json = CliRunner().invoke(cli, ["job", "history", "poke", "--json", *config])
    assert (0, 0) == (table.exit_code, as_json.exit_code), table.output + as_json.output
    assert "webhook \\x1b[2J\\x1b]0;pwned\\x07\\x00\\u202eevil\\x9b" in table.output
    assert UNSAFE.search((table.output + as_json.output).replace("\n", "")) is None
    assert RAW == json.loads(as_json.output)["label"]


# -- a run between attempts ------------------------------------------------------------

T1 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def run_in(state: str, attempts: int, **values: object) -> Run:
    run = Run(id="r1", job="build", kind="manual", label="manual", state=state,
              created_at=T1, started_at=T1, attempts=attempts)
    return replace(run, **values)


BACKOFF = run_in("backoff", 1, exit_status=1, reason="exit status 1",
                 next_attempt_at=T1 + timedelta(seconds=30))


def test_the_retry_line_names_the_attempt_its_exit_status_and_the_next_start() -> None:
    """The countdown rounds up to whole seconds and says "due now" once the time has come."""
    assert [
        "attempt 1 failed (exit status 1); attempt 2 at 2026-12-01T10:00:30Z (in 30s)",
        "attempt 1 failed (exit status 1); attempt 2 at 2026-12-01T10:00:30Z (in 1s)",
        "attempt 1 failed (exit status 1); attempt 2 at 2026-12-01T10:00:30Z (due now)",
        "attempt 1 failed (exit status 1); attempt 2 at 2026-12-01T10:00:30Z",
    ] == [retry_line(BACKOFF, T1), retry_line(BACKOFF, T1 + timedelta(seconds=29.5)),
          retry_line(BACKOFF, T1 + timedelta(seconds=31)), retry_line(BACKOFF, None)]


def test_a_live_line_counts_down_in_place_and_stays_when_the_next_attempt_starts() -> None:
    """On a terminal the line is rewritten when its countdown moves and ended with a
    newline, without the countdown, before the next attempt's output."""
    written: list[str] = []
    news = RetryNews(live=True, write=written.append)
    news.show(run_in("running", 1), T1)
    news.show(BACKOFF, T1)
    news.settle(BACKOFF)
    news.show(BACKOFF, T1 + timedelta(seconds=0.2))
    news.show(BACKOFF, T1 + timedelta(seconds=20))
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
                    next_attempt_at=T1 + timedelta(minutes=2))
    for run in (BACKOFF, BACKOFF, run_in("running", 2), second, second):
        news.settle(run)
        news.show(run, T1)
    assert [
        "cronduit: attempt 1 failed (exit status 1); attempt 2 at 2026-12-01T10:00:30Z "
        "(in 30s)\n",
        "cronduit: attempt 2 failed (killed by signal 9); attempt 3 at 2026-12-01T10:02:00Z "
        "(in 2m)\n",
    ] == written


def test_the_retry_news_shows_control_characters_in_a_reason_as_escapes() -> None:
    """A reason such as a launch error cannot drive the terminal the live line is on."""
    written: list[str] = []
    news = RetryNews(live=False, write=written.append)
    news.show(run_in("backoff", 1, reason="could not start: \x1b[2J",
                     next_attempt_at=T1 + timedelta(seconds=30)), T1)
    assert ["cronduit: attempt 1 failed (could not start: \\x1b[2J); attempt 2 at "
            "2026-12-01T10:00:30Z (in 30s)\n"] == written
