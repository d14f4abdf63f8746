"""How the state commands print: one spelling of instants, durations, timings and run outcomes.

On a terminal tables are drawn with rich; anywhere else (a pipe, a file, a test) they are
plain columns separated by two spaces, so ``grep`` and ``awk`` work. ``--json`` output is one
JSON object per line for a list and one document on one line for a single answer, with
instants as ``2026-03-29T01:00:00Z`` and ``null`` for "none".

Whatever is printed passes through :func:`cronduit.core.text.clean` here, at the last step:
a label or a reason stored by an older version, before labels were cleaned, shows its ESC as
``\\x1b`` instead of driving the terminal. JSON keeps every value whole: the characters
``clean`` would replace are written as JSON ``\\u`` escapes, which read back as the same
string.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from datetime import datetime

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cronduit.core.durations import format_duration
from cronduit.core.enums import RunState
from cronduit.core.text import UNSAFE, clean
from cronduit.core.timespec import format_utc
from cronduit.intake.reports import duration_s, timing_of, utc
from cronduit.ports import Run

__all__ = ["NONE", "RetryNews", "cell", "duration_s", "echo_json", "echo_line", "echo_table",
           "is_terminal", "json_text", "outcome_summary", "plain_table", "plural",
           "retry_line", "stderr_is_terminal", "timing_of", "utc"]

NONE = "-"
"""How an empty cell reads in a table."""


def cell(value: object) -> str:
    """A table cell: ``-`` for nothing, instants in the one UTC spelling."""
    if value is None or value == "":
        return NONE
    if isinstance(value, datetime):
        return format_utc(value)
    return str(value)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def outcome_summary(run: Run) -> str:
    """``failure after 12.3s, 3 attempts (exit status 1): reason`` for an ended run."""
    text = run.outcome or run.state
    took = duration_s(run)
    if took is not None:
        text += f" after {took:.1f}s"
    if run.attempts:
        text += f", {plural(run.attempts, 'attempt')}"
    if run.exit_status is not None and run.outcome != "success":
        text += f" (exit status {run.exit_status})"
    if run.reason:
        text += f": {run.reason}"
    return text


def is_terminal() -> bool:
    return sys.stdout.isatty()


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def retry_line(run: Run, now: datetime | None) -> str:
    """What a run in backoff waits for: ``attempt 1 failed (exit status 1); attempt 2 at
    2026-12-01T10:00:30Z (in 30s)``; without ``now``, no countdown."""
    why = run.reason or (f"exit status {run.exit_status}" if run.exit_status is not None
                         else "")
    text = f"attempt {run.attempts} failed" + (f" ({why})" if why else "")
    text += f"; attempt {run.attempts + 1} at {cell(run.next_attempt_at)}"
    if now is not None and run.next_attempt_at is not None:
        left = math.ceil((run.next_attempt_at - now).total_seconds())
        text += f" (in {format_duration(left)})" if left > 0 else " (due now)"
    return text


CLEAR_LINE = "\r\x1b[K"
"""Back to the start of the terminal's line and erase it."""


class RetryNews:
    """Says, on stderr, what a followed run does between attempts, which its log cannot.

    On a terminal (``live``) one line counts down to the next attempt, rewritten in place,
    and stays as a plain line once that attempt starts (or the run ends in its backoff).
    Elsewhere each backoff is one plain line, so a file or a pipe gets one line per failed
    attempt. The follower calls :meth:`settle` before printing new log bytes (the next
    attempt's output must not land on the live line) and :meth:`show` after them (the failed
    attempt's last words come before the line that says it failed). The reason is cleaned,
    as every line printed here is.
    """

    def __init__(self, live: bool, write: Callable[[str], None]) -> None:
        self.live = live
        self.write = write
        self._reported: int | None = None
        """The attempt whose backoff was last shown."""
        self._open: Run | None = None
        """The run as on the live line, while that line has no newline yet."""
        self._drawn = ""

    def show(self, run: Run, now: datetime) -> None:
        if run.state != RunState.BACKOFF:
            return
        if self.live:
            line = f"{CLEAR_LINE}cronduit: {clean(retry_line(run, now))}"
            if line != self._drawn:  # the countdown moves by the second, the looks faster
                self.write(line)
                self._drawn = line
            self._open = run
        elif self._reported != run.attempts:
            self.write(f"cronduit: {clean(retry_line(run, now))}\n")
        self._reported = run.attempts

    def settle(self, run: Run) -> None:
        """End the live line once the run has left its backoff."""
        if self._open is not None and (run.state != RunState.BACKOFF
                                       or run.attempts != self._open.attempts):
            self.write(f"{CLEAR_LINE}cronduit: {clean(retry_line(self._open, None))}\n")
            self._open = None
            self._drawn = ""


def echo_json(value: object) -> None:
    """One JSON document on one line, safe for a terminal and equal to ``value`` read back."""
    click.echo(json_text(value))


def json_text(value: object) -> str:
    """``value`` as one line of JSON with no character a terminal would act on: json already
    escapes C0 controls; DEL, C1, bidi controls, separators and lone surrogates are escaped
    here (outside strings JSON is plain ASCII, so only string contents change)."""
    return UNSAFE.sub(_json_escape, json.dumps(value, ensure_ascii=False))


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def echo_line(text: str, style: str | None = None) -> None:
    """A line of text, styled on a terminal, plain elsewhere; control characters cleaned."""
    text = clean(text)
    if is_terminal():
        Console(highlight=False).print(Text(text, style=style or ""), soft_wrap=True)
    else:
        click.echo(text)


def echo_table(headers: Sequence[str], rows: Sequence[Sequence[str]],
               wrap: Sequence[str] = ()) -> None:
    """A table: drawn with rich on a terminal, aligned plain columns elsewhere. Only the
    columns named in ``wrap`` may wrap on a narrow terminal; ids and instants never do.
    Control characters in cells are cleaned first, so they cannot break the columns."""
    rows = [[clean(value) for value in row] for row in rows]
    if is_terminal():
        table = Table(box=box.SIMPLE_HEAD, header_style="bold")
        for header in headers:
            table.add_column(header, no_wrap=header not in wrap)
        for row in rows:
            table.add_row(*(Text(value) for value in row))
        Console(highlight=False).print(table)
        return
    for line in plain_table(headers, rows):
        click.echo(line)


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widest cell, two spaces apart, no trailing blanks."""
    lines = [list(headers), *(list(row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    return ["  ".join(value.ljust(width) for value, width in zip(line, widths, strict=True))
            .rstrip() for line in lines]
