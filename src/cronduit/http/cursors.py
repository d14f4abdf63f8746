"""The cursors of pages: opaque to clients, the key of the page's last item inside.

A page of runs is keyed on the store's order of runs (``find_runs`` goes on below the run a
cursor names), so a cursor stays good however many runs are created after it was given. A
page of jobs is keyed on job names (the next page goes on after the name a cursor holds),
so a reload that adds or removes jobs never makes a cursor given before it fail: the pages
after it show the config in force when each is asked.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping

from cronduit.intake import RequestRefused

_RUNS = "r1."
_JOBS = "j2."
"""Each names its cursor's kind and form, so another can follow without breaking the cursors
given, and a cursor of one kind is refused by the other's route."""


def encode_cursor(run_id: str) -> str:
    """The cursor of the page of runs that goes on after the run ``run_id``."""
    return _encode(_RUNS, run_id)


def decode_cursor(cursor: str) -> str:
    """The run id inside ``cursor``; 422 for one this API could not have given."""
    return _decode(_RUNS, cursor)


def encode_job_cursor(job: str, place: int) -> str:
    """The cursor of the page of jobs that goes on after the job named ``job``, which is
    at ``place`` (from 0) in the config's order now."""
    return _encode(_JOBS, f"{place}:{job}")


def decode_job_cursor(cursor: str) -> tuple[int, str]:
    """The place and job name inside ``cursor``; 422 for one this API could not have
    given."""
    place, _, job = _decode(_JOBS, cursor).partition(":")
    if not (place.isascii() and place.isdigit() and job) or str(int(place)) != place:
        raise RequestRefused(422, "cursor: not one this API gave")
    return int(place), job


def next_place(names: Mapping[str, int], cursor: tuple[int, str]) -> int:
    """Where the page after ``cursor`` starts in the config's order (``names``: each job's
    place): after its job, or, where that job is gone, at the place it had (the jobs after
    it moved up by one)."""
    place, job = cursor
    found = names.get(job)
    return min(place, len(names)) if found is None else found + 1


def _encode(prefix: str, key: str) -> str:
    return prefix + base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def _decode(prefix: str, cursor: str) -> str:
    body = cursor.removeprefix(prefix)
    try:
        if body == cursor or not body.isascii():
            raise ValueError
        key = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
        if not key or _encode(prefix, key) != cursor:  # one spelling per key, as given
            raise ValueError
        return key
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise RequestRefused(422, "cursor: not one this API gave") from None
