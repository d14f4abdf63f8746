"""The pure core stays pure: no I/O, no clock, no edges. Read by parsing the core's source."""

from __future__ import annotations

import ast
from pathlib import Path

import cronduit.core

CORE = Path(cronduit.core.__file__).parent
FORBIDDEN_MODULES = {
    "asyncio", "socket", "sqlite3", "subprocess", "os", "shutil", "signal", "threading",
    "multiprocessing", "time", "random", "secrets", "http", "httpx", "uvicorn",
    "starlette", "fastapi", "psycopg", "click", "rich", "pathlib", "io", "tempfile", "logging",
}
FORBIDDEN_CALLS = {"now", "utcnow", "today", "open", "getenv", "time"}
EDGE_PACKAGES = ("cronduit.cli", "cronduit.store", "cronduit.daemon.loop", "cronduit.web",
                 "cronduit.executor", "cronduit.notify")


def _core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_core_has_modules_to_check() -> None:
    """Guard against the check passing vacuously because the glob found nothing."""
    assert len(_core_files()) >= 8


def test_the_core_imports_no_io_or_edge_module() -> None:
    """Core modules import neither I/O libraries nor cronduit's edges."""
    offenders = []
    for path in _core_files():
        for name in _imports(ast.parse(path.read_text())):
            root = name.split(".")[0]
            io_urllib = root == "urllib" and name != "urllib.parse"  # parsing URLs is pure
            if root in FORBIDDEN_MODULES or io_urllib or name.startswith(EDGE_PACKAGES):
                offenders.append(f"{path.relative_to(CORE)} imports {name}")
    assert [] == offenders


def test_the_core_never_reads_the_clock_or_files() -> None:
    """No datetime.now(), date.today(), time(), open() or getenv() call anywhere in the core."""
    offenders = []
    for path in _core_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in FORBIDDEN_CALLS:
                    offenders.append(f"{path.relative_to(CORE)}:{node.lineno} calls {name}()")
    assert [] == offenders
