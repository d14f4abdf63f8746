"""The layering rules of ``src/cronduit``, checked by reading the source (never importing it).

Read from a folder rather than from the installed package, so a test can plant a bad import
in a copy of the tree and see the check catch it. Three rules:

* the core (``cronduit.core``) imports only itself, the standard library's pure modules and
  the parsing libraries it is built on;
* a part of cronduit imports another only where :data:`ALLOWED` says it may, and then only its
  public face: the package itself (``from cronduit.intake import accept_manual``) or a
  submodule the package names in its ``__all__`` (``from cronduit.intake import pausing``),
  never another module of it (``cronduit.engine.routing`` from the HTTP edge);
* every name imported from cronduit exists where it is imported from.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

CORE_MAY_IMPORT = frozenset({
    "__future__", "bisect", "collections", "contextlib", "dataclasses", "datetime", "difflib",
    "enum", "functools", "hashlib", "hmac", "ipaddress", "itertools", "json", "math", "re",
    "types", "typing", "unicodedata", "urllib.parse", "zoneinfo",
    "gc",  # the config loader pauses collection around a parse (see its comment)
    "pydantic", "pydantic_core", "yaml",
})
"""What the pure core may import from outside cronduit (a module or a package's root)."""

ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "ports": frozenset({"core"}),
    "clock": frozenset(),
    "faults": frozenset(),
    "paths": frozenset({"core"}),
    "secrets": frozenset({"core"}),
    "testing": frozenset({"core", "ports"}),
    "store": frozenset({"core", "ports", "paths", "faults"}),
    "intake": frozenset({"core", "ports", "faults"}),
    "engine": frozenset({"core", "ports", "intake"}),
    "executor": frozenset({"core", "ports", "paths"}),
    "notifier": frozenset({"core", "ports", "faults"}),
    "http": frozenset({"core", "ports", "intake", "faults"}),
    "daemon": frozenset({"core", "ports", "paths", "secrets", "faults", "clock", "store",
                         "intake", "engine", "executor", "http", "notifier"}),
    "cli": frozenset({"core", "ports", "paths", "secrets", "faults", "clock", "store",
                      "intake", "daemon", "executor"}),
    "__main__": frozenset({"cli"}),
    "": frozenset({"core"}),  # cronduit itself: the names the package offers at its root
}
"""Which parts each part of cronduit may import (besides itself and ``cronduit``'s root).
The daemon is the composition root: it alone meets the engine, the executor, the HTTP edge
and the notifier."""

OPEN = frozenset({"core"})
"""Parts whose every module is public: the core is a library of pure decisions."""


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool


def modules(src: Path) -> dict[str, Module]:
    """Every module under ``src/cronduit`` by dotted name."""
    found = {}
    for path in sorted((src / "cronduit").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = Module(".".join(parts), path, is_package)
    return found


def _defined(tree: ast.Module) -> set[str]:
    """The names a module defines at its top level (under ``if`` and ``try`` too)."""
    names: set[str] = set()
    body: list[ast.stmt] = list(tree.body)
    while body:
        node = body.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.If | ast.Try):
            body.extend(node.body)
            body.extend(node.orelse)
            if isinstance(node, ast.Try):
                for handler in node.handlers:
                    body.extend(handler.body)
    return names


def _public(tree: ast.Module) -> set[str]:
    """A package's ``__all__``."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            value = ast.literal_eval(node.value)
            return set(value)
    return set()


def _part(name: str) -> str:
    """``cronduit.engine.routing`` -> ``engine``; ``cronduit`` -> ``""``."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def check(src: Path) -> list[str]:
    """Every breach of the rules under ``src``, one line each (empty: none)."""
    found = modules(src)
    trees = {name: ast.parse(module.path.read_text()) for name, module in found.items()}
    breaches: list[str] = []
    for name, tree in trees.items():
        where = found[name].path.relative_to(src)
        for node in ast.walk(tree):
            for target, names in _imports(node, name, found):
                problem = _judge(name, target, names, found, trees)
                if problem:
                    breaches.append(f"{where}:{node.lineno}: {problem}")
    return breaches


def _imports(node: ast.AST, importer: str,
             found: dict[str, Module]) -> list[tuple[str, list[str]]]:
    """What ``node`` imports: (module, names imported from it) pairs."""
    if isinstance(node, ast.Import):
        return [(alias.name, []) for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        if node.level:  # relative: resolved against the importer's package
            base = importer.split(".")
            if not found[importer].is_package:
                base.pop()
            base = base[: len(base) - node.level + 1]
            module = ".".join([*base, module] if module else base)
        return [(module, [alias.name for alias in node.names])]
    return []


def _judge(importer: str, target: str, names: list[str], found: dict[str, Module],
           trees: dict[str, ast.Module]) -> str | None:
    mine = _part(importer)
    if not target.startswith("cronduit"):
        root = target.split(".", maxsplit=1)[0]
        if mine == "core" and target not in CORE_MAY_IMPORT and root not in CORE_MAY_IMPORT:
            return f"the core imports {target}, which is not pure"
        return None
    if target not in found:
        return f"imports {target}, which does not exist"
    defined = _defined(trees[target])
    for imported in names:
        if imported not in defined and f"{target}.{imported}" not in found:
            return f"imports {imported} from {target}, which has no such name"
    targets = [f"{target}.{n}" if f"{target}.{n}" in found else target for n in names] or [
        target]
    for one in targets:
        problem = _reach(mine, importer, one, found, trees)
        if problem:
            return problem
    return None


def _reach(mine: str, importer: str, target: str, found: dict[str, Module],
           trees: dict[str, ast.Module]) -> str | None:
    """Whether ``importer`` (of part ``mine``) may reach module ``target``."""
    theirs = _part(target)
    if theirs in ("", mine):
        return None
    if theirs not in ALLOWED.get(mine, frozenset()):
        return f"{mine} imports {target}: {mine} may not depend on {theirs}"
    package = f"cronduit.{theirs}"
    if theirs in OPEN or target == package or not found[package].is_package:
        return None
    submodule = target.removeprefix(package + ".").split(".")[0]
    if submodule not in _public(trees[package]):
        return (f"{mine} imports {target}, an internal module of {theirs} (its public face: "
                f"{package} and the submodules its __all__ names)")
    return None
