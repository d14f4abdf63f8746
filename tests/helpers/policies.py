"""The config's policy records, built tersely: what the core's decision tests pass it.

The core decides by a job's own ``catch_up`` and ``overlap`` records, so its tests build
those records as code would, with the defaults a config file gives them.
"""

from __future__ import annotations

from cronduit.core.config.model import CatchUp, OverlapSpec
from cronduit.core.enums import CatchUpMode, Overlap, TriggerKind


def catch_up(window: int | None = 6 * 3600, mode: CatchUpMode = CatchUpMode.LATEST,
             max_runs: int = 10) -> CatchUp:
    """``catch_up: {window, mode, max_runs}`` in seconds; with no arguments, the default
    (``catch_up: 6h``)."""
    return CatchUp(window=window, mode=mode, max_runs=max_runs)


def overlap(default: Overlap = Overlap.QUEUE, **kinds: Overlap | None) -> OverlapSpec:
    """``overlap(SKIP, timer=QUEUE)`` is ``overlap: {default: skip, timer: queue}``; a kind
    given None follows ``default``, as one the file does not name."""
    by_kind = {TriggerKind(kind): policy for kind, policy in kinds.items() if policy is not None}
    return OverlapSpec(default=default, by_kind=by_kind)
