"""The store's seam is what cronduit uses, and all a backend must offer. Read from the source."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import cronduit
import cronduit.ports
from cronduit.store.pg.transaction import PgTransaction
from cronduit.store.sql.transaction import SqlTransaction

SOURCE = Path(cronduit.__file__).parent
BACKEND = (SOURCE / "store", SOURCE / "ports")
DRIVERS = {"sqlite3", "psycopg", "psycopg2", "asyncpg"}


def _seam_methods() -> set[str]:
    """The public methods of every store protocol: Store, Transaction and its areas."""
    found: set[str] = set()
    for cls in (cronduit.ports.Store, *inspect.getmro(cronduit.ports.Transaction)):
        if cls.__module__.startswith("cronduit.ports"):
            found.update(name for name, value in vars(cls).items()
                         if inspect.isfunction(value) and not name.startswith("_"))
    return found


def _files_above_the_store() -> list[Path]:
    return [path for path in sorted(SOURCE.rglob("*.py"))
            if not any(path.is_relative_to(folder) for folder in BACKEND)]


def _called(path: Path) -> set[str]:
    """Names called as methods (``x.name(...)``) in one file."""
    return {node.func.attr for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}


def test_every_method_of_the_seam_is_used_by_cronduit_itself() -> None:
    """A method only tests call belongs in tests/helpers/store.py, not in the seam every
    backend must implement."""
    called = set().union(*(_called(path) for path in _files_above_the_store()))
    assert len(_seam_methods()) > 40
    assert [] == sorted(_seam_methods() - called)


@pytest.mark.parametrize("transaction", [SqlTransaction, PgTransaction])
def test_the_sql_transactions_offer_the_seam_and_marked_test_helpers_only(
        transaction: type) -> None:
    """Each backend's transaction has every method of the seam, and anything else public
    on it is named ``*_for_tests``."""
    public = {name for name, _ in inspect.getmembers(transaction, inspect.isfunction)
              if not name.startswith("_")}  # its own and those it shares (store/named.py)
    assert [] == sorted(_seam_methods() - public - {"transaction", "reading", "close"})
    assert [] == sorted(name for name in public - _seam_methods()
                        if not name.endswith("_for_tests"))


def test_no_database_driver_is_imported_above_the_store() -> None:
    """Code above store/ sees the seam and cronduit.store's errors, never a driver, so the
    PostgreSQL backend changes nothing there."""
    offenders = []
    for path in _files_above_the_store():
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module
                     else [])
            offenders += [f"{path.relative_to(SOURCE)} imports {name}" for name in names
                          if name.split(".")[0] in DRIVERS]
    assert [] == offenders
