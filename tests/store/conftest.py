"""The store contract runs against every backend; each backend is one fixture parameter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cronduit.ports import Store
from cronduit.store.sqlite import SqliteStore


@pytest.fixture(params=["sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    backend = SqliteStore(tmp_path / "cronduit.db")
    yield backend
    backend.close()
