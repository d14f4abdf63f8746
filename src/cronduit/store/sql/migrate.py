"""Numbered migrations: ``migrations/NNNN_name.sql``, applied in order, each exactly once.

The applied version is kept in ``schema_version``; a migration and its version bump commit
together, so a crash mid-upgrade leaves the previous version whole.
"""

from __future__ import annotations

import re
import sqlite3
from importlib import resources

_FILE = re.compile(r"^(\d{4})_\w+\.sql$")


def migrations(package: str = "cronduit.store.sql") -> list[tuple[int, str]]:
    """(version, SQL text) of every migration in ``package``'s ``migrations/``, in order:
    SQLite's by default, PostgreSQL's from ``cronduit.store.pg``."""
    folder = resources.files(package).joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        match = _FILE.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.read_text()))
    return sorted(found)


def statements(sql: str) -> list[str]:
    """Split a migration into statements (no semicolons inside strings in our migrations): at
    each semicolon that ends one by SQLite's own reading, so a trigger's body, whose
    statements end in semicolons of their own, stays whole up to its ``END``."""
    without_comments = "\n".join(
        line for line in sql.splitlines() if not line.lstrip().startswith("--")
    )
    found, pending = [], ""
    for part in without_comments.split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                found.append(pending.strip()[:-1].strip())
            pending = ""
    return found


LATEST = migrations()[-1][0]
