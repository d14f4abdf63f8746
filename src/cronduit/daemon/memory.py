"""Keep the daemon's memory flat over months: fewer malloc arenas, free pages given back.

glibc's malloc gives each thread that allocates under contention an arena of its own, up to
eight per core, and returns little of an arena's memory once it is fragmented. The daemon's
threads (the engine's, the launchers, the HTTP server's, SQLite's checkpoints) each
allocate a little at every run, so at hundreds of runs a second its resident memory crept
up by a few MiB a minute in the soak bench (``bench/soak.py``) though Python's own heap,
traced with ``tracemalloc``, stayed flat. Two arenas hold the same load with no growth
measured past the first minute. ``MALLOC_ARENA_MAX`` set by the user wins.

What fragmentation still holds (free chunks between live ones, which glibc keeps mapped),
``malloc_trim`` gives back to the kernel; the daemon calls it once a minute, a few
milliseconds on its engine thread.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import os
import platform

ARENAS = 2
_M_ARENA_MAX = -8
"""``mallopt``'s parameter number for the arena limit (glibc's malloc.h)."""


TRIM_EVERY = 60.0
"""Seconds between two :func:`release_free_memory` calls in the daemon."""


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """glibc, loaded once: ``find_library`` runs ``ldconfig``, too much for once a minute."""
    if platform.libc_ver()[0] != "glibc":
        return None
    name = ctypes.util.find_library("c")
    try:
        return None if name is None else ctypes.CDLL(name)
    except OSError:
        return None


def release_free_memory() -> bool:
    """Give the kernel back the free pages glibc's malloc holds; False where it cannot."""
    libc = _libc()
    try:
        return libc is not None and bool(libc.malloc_trim(0))
    except AttributeError:
        return False


def limit_malloc_arenas() -> bool:
    """Cap glibc's malloc arenas at :data:`ARENAS`, before the daemon starts threads; True
    if the limit was set (False: not glibc, or the user chose with MALLOC_ARENA_MAX)."""
    libc = None if "MALLOC_ARENA_MAX" in os.environ else _libc()
    try:
        return libc is not None and bool(libc.mallopt(_M_ARENA_MAX, ARENAS))
    except AttributeError:
        return False


def freeze_long_lived() -> None:
    """Put what the daemon holds for good (its config, the compiled schedules, the modules)
    out of the cyclic garbage collector's reach: call once it has started, and after each
    apply. A full collection walks every object the collector tracks; with 10,000 jobs in
    the config that walk was tens of milliseconds, taken at a moment set by the allocations
    of whatever ran then, and so the slowest of a dashboard page's answers took twice as
    long as the rest (measured: home page p99 92 ms against 49 ms frozen, p50 alike).
    Frozen objects are still freed when nothing refers to them; what the previous freeze
    held is thawed and collected first, so an apply's old config is not kept."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
