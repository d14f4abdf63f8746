"""A PostgreSQL server for the store's tests: each test its own schema, dropped after it.

The server is the one on 127.0.0.1:5432 (``.ci/run`` starts it), database ``test``, trust
auth; ``CRONDUIT_TEST_POSTGRES`` names another. When it cannot be reached the PostgreSQL half
of a test skips on a developer's machine and fails in CI (``CI=true``), where a missing
server must never pass for a green run.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from psycopg import sql

from cronduit.store.postgres import PostgresStore

URL = os.environ.get("CRONDUIT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def _reachable() -> str | None:
    """None when the server answers; else why not."""
    try:
        with psycopg.connect(URL, connect_timeout=5) as db:
            db.execute("SELECT 1")
    except psycopg.OperationalError as error:
        return " ".join(str(error).split())
    return None


def require_server() -> None:
    """Skip (locally) or fail (CI) the calling test when the server cannot be reached."""
    why = _reachable()
    if why is None:
        return
    message = f"PostgreSQL at {URL} cannot be reached: {why}"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@contextmanager
def fresh_schema(prefix: str = "test") -> Iterator[str]:
    """A new, empty schema of its own (``<prefix>_<random>``), dropped with all it holds
    after."""
    require_server()
    name = f"{prefix}_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(URL, autocommit=True) as db:
        db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        with psycopg.connect(URL, autocommit=True) as db:
            db.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


def in_schema(schema: str) -> str:
    """The test server's URL with ``schema`` as its search_path."""
    return psycopg.conninfo.make_conninfo(URL, options=f"-csearch_path={schema}")


@contextmanager
def postgres_store() -> Iterator[PostgresStore]:
    """A migrated PostgreSQL store in a fresh schema of its own, closed and dropped after."""
    with fresh_schema() as schema:
        store = PostgresStore(in_schema(schema))
        try:
            yield store
        finally:
            store.close()
