"""State stores: one SQLite file out of the box, PostgreSQL for many hosts.

:func:`open_store` picks the backend from ``settings.state``: a ``postgresql://`` URL, or a
directory that holds ``cronduit.db``.
"""

from __future__ import annotations

from pathlib import Path

from cronduit.ports import Store
from cronduit.store.sqlite import SqliteStore


def open_store(state: str, base: Path) -> Store:
    """The store named by ``settings.state``; a relative directory is taken from ``base``."""
    if state.startswith(("postgresql://", "postgres://")):
        raise NotImplementedError("the PostgreSQL store arrives with scale-out (SPEC §10)")
    directory = Path(state) if Path(state).is_absolute() else base / state
    return SqliteStore(directory / "cronduit.db")
