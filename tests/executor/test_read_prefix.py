"""What an ended attempt left beside its record (its outputs, its retry hint) is read
bounded and without blocking: a FIFO a job left in their place never holds up the daemon."""

from __future__ import annotations

import os
from pathlib import Path

from cronduit.core.steps import MAX_OUTPUT_FILE
from cronduit.executor import retry_after
from cronduit.executor.files import outputs_path, read_prefix, retry_after_path
from cronduit.executor.outputs import read_outputs
from tests.helpers.threads import within


def test_a_file_is_read_up_to_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert (b"x" * 4, b"x" * 10, b"") == (read_prefix(path, 4), read_prefix(path, 99),
                                          read_prefix(path, 0))


def test_outputs_past_the_limit_are_read_one_byte_past_it(tmp_path: Path) -> None:
    attempt = tmp_path / "attempt-1"
    outputs_path(attempt).write_bytes(b"y" * (MAX_OUTPUT_FILE + 100))
    raw, problem = read_outputs(attempt)
    assert (MAX_OUTPUT_FILE + 1, None) == (len(raw or b""), problem)


def test_a_fifo_in_place_of_the_outputs_or_the_hint_reads_as_empty(tmp_path: Path) -> None:
    attempt = tmp_path / "attempt-1"
    os.mkfifo(outputs_path(attempt))
    os.mkfifo(retry_after_path(attempt))
    read = within(lambda: (read_outputs(attempt), retry_after(attempt)),
                  "the read waited on the FIFO")
    assert ((b"", None), None) == read


def test_a_missing_file_is_no_outputs_and_no_hint(tmp_path: Path) -> None:
    attempt = tmp_path / "attempt-1"
    assert ((None, None), None) == (read_outputs(attempt), retry_after(attempt))
