"""The contract runs on every backend; a test of one backend builds that backend itself.

Read from the tests' source: a contract test takes the ``store`` fixture (run once per
backend) and nothing of one backend's own. A test of one backend builds its store itself, so
it never runs against the other: SQLite's checkpoints, disk faults and migrations in place
(``test_sqlite_*.py``), PostgreSQL's locks, sequences and schemas (``test_postgres.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.store.conftest import BACKENDS

HERE = Path(__file__).parent
OWN = {"sqlite": ("sqlite3", "SqliteStore"), "postgresql": ("psycopg", "PostgresStore")}


def _tests(path: Path) -> list[ast.FunctionDef]:
    return [node for node in ast.parse(path.read_text()).body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


def _takes_store(test: ast.FunctionDef) -> bool:
    return any(argument.arg == "store" for argument in test.args.args)


def _backend_of(path: Path) -> str | None:
    if path.name.startswith("test_sqlite_"):
        return "sqlite"
    return "postgresql" if path.name == "test_postgres.py" else None


def test_every_contract_test_runs_on_both_backends() -> None:
    """The fixture's parameters are both backends."""
    assert ["sqlite", "postgresql"] == BACKENDS


def test_the_tests_of_one_backend_never_take_the_contracts_fixture() -> None:
    """SQLite's checkpoint and fault tests (and PostgreSQL's own) build their store."""
    offenders = [f"{path.name}::{test.name}" for path in sorted(HERE.glob("test_*.py"))
                 if _backend_of(path) for test in _tests(path) if _takes_store(test)]
    assert len(list(HERE.glob("test_sqlite_*.py"))) >= 3
    assert [] == offenders


def test_contract_tests_use_nothing_of_one_backend() -> None:
    """A test on the ``store`` fixture names neither backend's driver nor its store class."""
    offenders = []
    for path in sorted(HERE.glob("test_*.py")):
        if _backend_of(path) is not None:
            continue
        for test in _tests(path):
            if not _takes_store(test):
                continue
            names = {node.id for node in ast.walk(test) if isinstance(node, ast.Name)}
            offenders += [f"{path.name}::{test.name} uses {name}"
                          for own in OWN.values() for name in own if name in names]
    assert [] == offenders
