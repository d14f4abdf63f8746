"""The store contract runs against every backend; each backend is one fixture parameter.

PostgreSQL: each test gets a schema of its own, dropped after it, so tests may run side by
side and leave nothing behind (see :mod:`tests.helpers.postgres`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cronduit.ports import Store
from cronduit.store.sqlite import SqliteStore

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        backend: Store = SqliteStore(tmp_path / "cronduit.db")
        yield backend
        backend.close()
        return
    from tests.helpers.postgres import postgres_store  # noqa: PLC0415 - loads psycopg

    with postgres_store() as backend:
        yield backend
