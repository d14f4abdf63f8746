"""State stores: one SQLite file out of the box, PostgreSQL for many hosts.

:func:`open_store` picks the backend from ``settings.state``: a ``postgresql://`` URL, or a
directory that holds ``cronduit.db``. The PostgreSQL backend loads only when a URL names it.
Where the state is shown, it is shown :func:`~cronduit.store.conninfo.redacted` (never a
URL's password), and a driver's error :func:`~cronduit.store.conninfo.scrubbed` of it.
"""

from __future__ import annotations

from pathlib import Path

from cronduit.core.config.model import Config
from cronduit.paths import StatePaths
from cronduit.ports import Membership, Store
from cronduit.store.conninfo import redacted, scrubbed
from cronduit.store.errors import driver_errors
from cronduit.store.sqlite import SqliteStore

__all__ = ["copy", "driver_errors", "membership_of", "open_store", "redacted", "scrubbed",
           "state_location"]


def open_store(config: Config, config_path: Path, *, daemon: bool = False,
               password: str | None = None, answering: bool = False) -> Store:
    """The store named by ``settings.state``; ``daemon``: for the serving process, which
    checkpoints SQLite's WAL on a thread of its own. ``password``: PostgreSQL's, given apart
    from the URL (the value of the secret ``settings.state_password`` names).
    ``answering``: for the HTTP acceptor, whose requests wait for a database connection
    only briefly, so a sender gets its 503 quickly while the database is away."""
    if config.settings.uses_postgres:
        # Imported here: psycopg costs a tenth of a second to load, which a CLI on an SQLite
        # state should not pay.
        from cronduit.store.postgres import (  # noqa: PLC0415
            ANSWER_WAIT,
            CONNECT_TIMEOUT,
            PostgresStore,
        )

        return PostgresStore(config.settings.state, password=password,
                             wait=ANSWER_WAIT if answering else CONNECT_TIMEOUT)
    return SqliteStore(StatePaths.of(config, config_path).database,
                       background_checkpoints=daemon)


def membership_of(store: Store) -> Membership | None:
    """The node leases of a store shared by many daemons; None for a store one daemon
    serves (SQLite)."""
    found: Membership | None = getattr(store, "membership", None)
    return found


def state_location(config: Config, config_path: Path) -> str:
    """Where the state is, as a message may show it: a PostgreSQL URL without its password,
    or the state directory."""
    if config.settings.uses_postgres:
        return redacted(config.settings.state)
    return str(StatePaths.of(config, config_path).root)
