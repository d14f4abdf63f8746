"""A step attempt's outputs as it wrote them to ``$CRONDUIT_OUTPUT_FILE``, read back raw.

Read when the attempt ends, and when a daemon adopts an attempt that ended while none
watched, so the exit status and the outputs are judged and saved together either way
(:func:`cronduit.core.steps.parse_outputs` validates them). Read bounded: one byte past the
largest file the rules accept is enough to refuse it. Like the retry hint, what is in it is
the job's and never logged.
"""

from __future__ import annotations

import logging
from pathlib import Path

from cronduit.core.steps import MAX_OUTPUT_FILE
from cronduit.executor.files import outputs_path, read_prefix

_log = logging.getLogger(__name__)


def read_outputs(attempt_file: Path) -> tuple[bytes | None, str | None]:
    """The bytes the attempt wrote as its outputs (at most one past the limit; None when it
    wrote no file), or why they could not be read."""
    path = outputs_path(attempt_file)
    try:
        return read_prefix(path, MAX_OUTPUT_FILE + 1), None
    except FileNotFoundError:
        return None, None
    except OSError as error:
        _log.warning("could not read the outputs file %s: %s", path, error.strerror)
        return None, f"the output file could not be read ({error.strerror})"
