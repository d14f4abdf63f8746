"""The job's retry hint: a duration it wrote to ``$CRONDUIT_RETRY_AFTER_FILE``.

The hint is a fact the job states; whether and when to retry is the daemon's decision.
Its content is the job's output, so it is never logged: a job might write anything there.
"""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path

from cronduit.core.durations import DurationError, DurationTooLong, parse_duration
from cronduit.core.limits import MAX_DURATION
from cronduit.executor.files import read_prefix, retry_after_path

_log = logging.getLogger(__name__)

MAX_HINT_BYTES = 64
"""A hint longer than this is not a duration; reading stops there."""

_SECONDS = re.compile(r"\d{1,12}(?:\.\d{1,9})?")


def retry_after(attempt_file: Path) -> int | None:
    """Whole seconds the attempt's job asked to wait before a retry; None if it asked nothing.

    Accepts a config duration (``30s``, ``5m``, ``1h30m``) or a plain number of seconds
    (``90``; a fraction such as ``2.5`` is rounded up, never retrying sooner than asked),
    surrounded by whitespace if at all; anything else is ignored. A hint past ten years
    (:data:`~cronduit.core.limits.MAX_DURATION`) is read as ten years.
    """
    path = retry_after_path(attempt_file)
    try:
        raw = read_prefix(path, MAX_HINT_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as error:
        _log.warning("ignored the retry hint %s: %s", path, error.strerror)
        return None
    seconds = parse_retry_after(raw)
    if seconds is None and raw.strip():
        _log.warning("ignored the retry hint %s: not a duration", path)
    return seconds


def parse_retry_after(raw: bytes) -> int | None:
    """The whole seconds ``raw`` names (see :func:`retry_after`), or None if it names none."""
    if len(raw) > MAX_HINT_BYTES:
        return None
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    # A wait past the longest duration is past any deadline too: read as that long, it
    # ends the run as having no time left to retry, and never overflows an instant.
    if _SECONDS.fullmatch(text):
        return min(math.ceil(float(text)), MAX_DURATION)
    try:
        return parse_duration(text)
    except DurationTooLong:
        return MAX_DURATION
    except DurationError:
        return None
