"""Work that must not block, run where a block fails the test instead of hanging it."""

from __future__ import annotations

import threading
from collections.abc import Callable

PATIENCE = 20.0
"""Seconds the work may take before it counts as blocked (it takes well under one)."""


def within(work: Callable[[], object], blocked: str, patience: float = PATIENCE) -> object:
    """``work()``'s result, run on a daemon thread of its own; fails with ``blocked`` when
    it has not returned after ``patience`` seconds (the thread is left to its wait)."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(patience)
    assert not thread.is_alive(), blocked
    return result[0]
