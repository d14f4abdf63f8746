"""The retry hint: exit 75 and a duration written to ``$CRONDUIT_RETRY_AFTER_FILE``."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from cronduit.core.limits import MAX_DURATION
from cronduit.executor import EX_TEMPFAIL, Exited, launch, parse_retry_after, retry_after
from tests.helpers.processes import finish, spec_for


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"30s", 30),
        (b"5m\n", 300),
        (b"1h30m", 5400),
        (b"1d", 86400),
        (b"90", 90),
        (b"  2.5 \n", 3),
        (b"0.001", 1),
        (b"0", 0),
        (b"", None),
        (b"soon", None),
        (b"-5", None),
        (b"5 m", None),
        (b"30m5h", None),
        (b"1e3", None),
        (b"nan", None),
        (b"\xff30s", None),
        (b"30s" + b" " * 100, None),
    ],
)
def test_a_hint_is_a_duration_or_a_number_of_seconds(raw: bytes, expected: int | None) -> None:
    """Durations and plain seconds (fractions rounded up) are read; anything else is no hint."""
    assert expected == parse_retry_after(raw)


@pytest.mark.parametrize("raw", [b"999999999999", b"3650d1s", b"99999999999999999999d",
                                 b"9" * 60 + b"s"])
def test_a_hint_past_ten_years_reads_as_ten_years(raw: bytes) -> None:
    """Longer than any deadline: the run ends with no time left to retry; the wait never
    becomes an instant past the calendar."""
    assert MAX_DURATION == parse_retry_after(raw)


def test_a_job_asks_for_a_retry_with_exit_75_and_says_when(tmp_path: Path) -> None:
    """The job finds the hint file in its environment; the executor reads it back."""
    spec = spec_for(tmp_path, shell='echo 45s >"$CRONDUIT_RETRY_AFTER_FILE"; exit 75')
    ended = finish(launch(spec))
    assert (Exited(EX_TEMPFAIL), 45) == (ended, retry_after(spec.attempt_file))


def test_no_hint_file_means_no_hint(tmp_path: Path) -> None:
    """A job that writes nothing leaves the retry timing to the job's ``retry`` settings."""
    spec = spec_for(tmp_path, shell="exit 75")
    finish(launch(spec))
    assert retry_after(spec.attempt_file) is None


def test_a_junk_hint_is_ignored_without_logging_what_it_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The hint is the job's output, so the warning names the file, never its content."""
    spec = spec_for(tmp_path, shell='echo "password=hunter2" >"$CRONDUIT_RETRY_AFTER_FILE"')
    finish(launch(spec))
    with caplog.at_level(logging.WARNING, logger="cronduit.executor"):
        hint = retry_after(spec.attempt_file)
    assert (None, False, True) == (
        hint,
        "hunter2" in caplog.text,
        "not a duration" in caplog.text,
    )
