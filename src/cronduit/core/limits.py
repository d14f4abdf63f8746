"""Every upper bound cronduit puts on a number, in one place: the config's values, the
config file itself, and the numeric options of the command line.

A bound here is a promise that what passes ``cronduit check`` can be served: no value the
config model accepts can overflow what the daemon computes from it. Durations become
``timedelta``\\ s added to instants (the next slot plus ``every``, now plus ``timeout``, a
retry's time), so the longest, ten years, keeps every such sum far inside ``datetime``'s
range (year 9999); counts reach SQLite as 64-bit integers (``LIMIT``), and each parallel
run allowed is a process. Each bound
is generous, far beyond any real use, so a config that meets one was probably mistyped.
``docs/config.md`` lists them all; the model's types read them from here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from cronduit.core.sizes import MiB, TiB

DAY: Final = 86_400

# -- durations (whole seconds) -----------------------------------------------------------

MAX_DURATION: Final = 3650 * DAY
"""Ten years: the longest duration cronduit takes anywhere (``every``, ``timeout``,
``catch_up`` windows, ``jitter``, backoffs, ``retain_failed``, ``job wait --timeout``,
``job pause --until``). A run's retry hint past it is read as this long."""
MAX_RETENTION: Final = 30 * DAY
"""``durable.retention``: how long a multi-step execution stays resumable."""

MAX_DURATION_DIGITS: Final = 12
"""A duration's number with more digits than this is past :data:`MAX_DURATION` in any
unit; it is refused as such without being converted (Python refuses to convert numbers of
thousands of digits)."""

# -- counts ------------------------------------------------------------------------------

MIN_LEASE: Final = 3
"""A node lease shorter than this could not be renewed (every third of it) reliably."""
MAX_LEASE: Final = 600
"""A node lease longer than this leaves a dead daemon's runs unowned for too long."""
MAX_NODE_GLOBS: Final = 32
MAX_NODE_NAME: Final = 63

MAX_KEPT_RUNS: Final = 1_000_000
"""``kept_runs``: per job, the runs whose log and output files are kept."""
MAX_CATCH_UP_RUNS: Final = 10_000
"""``catch_up.max_runs``: missed slots run, one after another, by one catch-up."""
MAX_PARALLEL: Final = 1_000
"""``overlap.max_parallel``: runs of one job going at once, each its own process."""
MAX_ATTEMPTS: Final = 100
"""``retry.attempts``, and the attempts of a run that keeps asking for retries (exit 75)."""
MAX_STEPS: Final = 32
MAX_STEP_OUTPUTS: Final = 32
MAX_STEP_INPUTS: Final = 32

# -- sizes and addresses -----------------------------------------------------------------

MIN_MAX_LOG: Final = MiB
MAX_MAX_LOG: Final = TiB
"""``max_log``: from 1MiB to 1TiB."""
MAX_PORT: Final = 65_535

# -- the config file ---------------------------------------------------------------------

MAX_NUMBER_DIGITS: Final = 100
"""A whole number written with more digits than this is past every bound above; it is
refused at its position as such, never converted."""
MAX_DEPTH: Final = 64
"""Mappings and lists nested at most this deep (a job's values sit at depth 3 or 4)."""
MAX_ALIAS_VALUES: Final = 1_000_000
"""Values that aliases may add to a document, beyond the values written in it. Aliases
repeat a value (``*defaults``); aliases of values that themselves hold aliases grow a
document exponentially (the "billion laughs"), so their expansion is counted, from the
composed document and before anything is built, and refused past this."""
MAX_CONFIG_CHARS: Final = 64 * MiB
"""The longest config text, in characters: about a million jobs of one line each."""

# -- command-line options ----------------------------------------------------------------

MAX_LISTED: Final = 1_000_000
"""``job history -n`` and ``audit -n``: records listed at most."""
MAX_SLOTS_LISTED: Final = 100_000
"""``cron next --count`` and ``job backfill --max``: slots computed at most."""
EARLIEST_INSTANT: Final = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_INSTANT: Final = datetime(9000, 1, 1, tzinfo=UTC)
"""The instants options take (``cron next --after``, ``--from`` and ``--to`` of ``job
backfill`` and ``schedule slots``): a search for slots from one never leaves the calendar."""


def instant_problem(instant: datetime) -> str | None:
    """Why an instant given to an option is outside the range cronduit takes, or None."""
    if EARLIEST_INSTANT <= instant <= LATEST_INSTANT:
        return None
    return "is outside the instants cronduit takes (from 1970-01-01 to 9000-01-01, UTC)"
