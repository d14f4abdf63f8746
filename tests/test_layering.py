"""The shape of ``src/cronduit`` holds: a pure core, edges that meet only through seams and
public faces, and no import of a name that is not there (see :mod:`tests.helpers.layering`).
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

import cronduit
from tests.helpers.layering import check, modules

SRC = Path(cronduit.__file__).parent.parent
CORE = SRC / "cronduit" / "core"
FORBIDDEN_CALLS = {"now", "utcnow", "today", "open", "getenv", "time"}


def test_the_check_reads_every_part_of_the_tree() -> None:
    """Guard against the check passing vacuously because it found nothing to read."""
    parts = {name.split(".")[1] for name in modules(SRC) if "." in name}
    assert {"core", "store", "intake", "engine", "executor", "daemon", "http", "cli"} <= parts


def test_the_tree_keeps_its_layers() -> None:
    assert [] == check(SRC)


@pytest.mark.parametrize(("file", "line", "breach"), [
    ("core/timespec.py", "from cronduit.store import open_store",
     "core imports cronduit.store: core may not depend on store"),
    ("core/overlap.py", "import socket", "the core imports socket, which is not pure"),
    ("core/cron.py", "from os import environ", "the core imports os, which is not pure"),
    ("http/app.py", "from cronduit.engine.routing import route",
     "http imports cronduit.engine.routing: http may not depend on engine"),
    ("cli/job_commands.py", "from cronduit.executor.spawn import begin_launch",
     "cli imports cronduit.executor.spawn, an internal module of executor"),
    ("engine/work.py", "from cronduit.intake.manual import manual_state",
     "engine imports cronduit.intake.manual, an internal module of intake"),
    ("store/sqlite.py", "from cronduit import engine",
     "store imports cronduit.engine: store may not depend on engine"),
    ("cli/render.py", "from cronduit import web", "imports web from cronduit, which has no such"),
    ("daemon/loop.py", "from cronduit.core.timespec import no_such_name",
     "imports no_such_name from cronduit.core.timespec, which has no such name"),
    ("http/app.py", "import cronduit.notify", "imports cronduit.notify, which does not exist"),
])
def test_a_planted_bad_import_is_caught(tmp_path: Path, file: str, line: str,
                                        breach: str) -> None:
    shutil.copytree(SRC / "cronduit", tmp_path / "cronduit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    planted = tmp_path / "cronduit" / file
    text = planted.read_text()
    head, rest = text.split("\nfrom __future__ import annotations\n", 1)
    planted.write_text(f"{head}\nfrom __future__ import annotations\n{line}\n{rest}")
    [found] = check(tmp_path)
    assert found.startswith(f"cronduit/{file}:")
    assert breach in found


def test_the_core_never_reads_the_clock_or_files() -> None:
    """No datetime.now(), date.today(), time(), open() or getenv() call anywhere in the core."""
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in FORBIDDEN_CALLS:
                    offenders.append(f"{path.relative_to(CORE)}:{node.lineno} calls {name}()")
    assert [] == offenders


def test_the_readme_layout_names_every_package_and_module() -> None:
    """The README's layout lists every package and top-level module of ``src/cronduit``."""
    readme = (SRC.parent / "README.md").read_text()
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    top = sorted(f"{path.name}/" if path.is_dir() else path.name
                 for path in (SRC / "cronduit").iterdir()
                 if not path.name.startswith("__") and (path.is_dir() or path.suffix == ".py"))
    assert len(top) > 10
    assert [name for name in top if name not in layout] == []
