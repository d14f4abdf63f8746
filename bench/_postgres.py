"""The PostgreSQL server ``bench/postgres.py`` measures on: its URL, and scratch schemas.

Every case gets a schema of its own (``benchpg_<random>``), created empty and dropped with
all it holds when the case is over, so the cases never see each other's rows and the bench
leaves nothing in the database. cronduit finds its tables through the connection's
``search_path``, which a URL sets with ``?options=-csearch_path%3D<schema>``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql

SERVER = os.environ.get("CRONDUIT_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
"""The server and database (trust auth by default); the environment may name another."""
PREFIX = "benchpg"


def in_schema(schema: str) -> str:
    """``SERVER`` as a URL whose connections look for their tables in ``schema`` (the form
    ``settings.state`` takes)."""
    joiner = "&" if "?" in SERVER else "?"
    return f"{SERVER}{joiner}options=-csearch_path%3D{schema}"


def sqlalchemy_url() -> str:
    """``SERVER`` as SQLAlchemy names it on psycopg 3 (APScheduler's job store)."""
    return SERVER.replace("postgresql://", "postgresql+psycopg://", 1)


def server_problem() -> str | None:
    """None when the server answers; else why not, in one line."""
    try:
        with psycopg.connect(SERVER, connect_timeout=5) as db:
            db.execute("SELECT 1")
    except psycopg.OperationalError as error:
        return " ".join(str(error).split())
    return None


@contextmanager
def scratch_schema() -> Iterator[str]:
    """A new, empty schema, dropped with everything in it afterwards (even on an error)."""
    name = f"{PREFIX}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(SERVER, autocommit=True) as db:
        db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        drop_schema(name)


def drop_schema(name: str) -> None:
    with psycopg.connect(SERVER, autocommit=True) as db:
        db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def leftover_schemas() -> list[str]:
    """Schemas of an earlier run that was killed before it could drop them."""
    with psycopg.connect(SERVER, autocommit=True) as db:
        rows = db.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s ORDER BY 1",
                          (f"{PREFIX}\\_%",)).fetchall()
    return [row[0] for row in rows]
