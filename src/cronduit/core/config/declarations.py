"""A job's ``inputs:`` block as written, turned into :class:`~cronduit.core.inputs.InputSpec`.

The rules an input declaration obeys live in :mod:`cronduit.core.inputs`; this module only
reads the YAML shape around them (a mapping per input, with known keys of known types) and
places each message on the input it is about.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from cronduit.core.config.errors import Problem, invalid, rules_broken
from cronduit.core.config.messages import unknown_key_message
from cronduit.core.inputs import InputSpec, declaration_errors

INPUT_KEYS = ("default", "description", "enum", "pattern")


def declare_inputs(raw: object, env_keys: Collection[str]) -> dict[str, InputSpec]:
    """Every declaration in ``raw``, or every problem of all of them at once."""
    if not isinstance(raw, Mapping):
        raise invalid("must be a mapping of input names to their declarations")
    specs: dict[str, InputSpec] = {}
    problems: list[Problem] = []
    for name, declaration in raw.items():
        if isinstance(declaration, InputSpec):  # built by code, already checked
            specs[name] = declaration
            continue
        found = _problems(name, declaration, env_keys)
        if found:
            problems += found
        else:
            specs[name] = _spec(name, declaration)
    if problems:
        raise rules_broken(problems)
    return specs


def _spec(name: str, declaration: Mapping[str, Any]) -> InputSpec:
    enum = declaration.get("enum")
    return InputSpec(
        name=name,
        enum=None if enum is None else tuple(enum),
        pattern=declaration.get("pattern"),
        default=declaration["default"],
        description=declaration.get("description", ""),
    )


def _problems(name: str, declaration: object, env_keys: Collection[str]) -> list[Problem]:
    if not isinstance(declaration, Mapping):
        return [Problem((name,), "must be a mapping: enum or pattern, default, description")]
    problems = [
        Problem((name, key), unknown_key_message(key, INPUT_KEYS), at_key=True, about_parent=True)
        for key in declaration
        if key not in INPUT_KEYS
    ]
    shape = _shape_problems(name, declaration)
    if shape:
        return problems + shape
    messages = declaration_errors(
        name,
        declaration.get("enum"),
        declaration.get("pattern"),
        declaration.get("default"),
        env_keys,
    )
    return problems + [Problem((name,), message, at_key=True) for message in messages]


def _shape_problems(name: str, declaration: Mapping[str, Any]) -> list[Problem]:
    """Types first: the declaration rules can only be read once the shape is right."""
    problems = []
    if not isinstance(declaration.get("enum", []), list):
        problems.append(Problem((name, "enum"), "must be a list of the values callers may pick"))
    if not isinstance(declaration.get("pattern", ""), str):
        problems.append(Problem((name, "pattern"), "must be a string: a regular expression"))
    if not isinstance(declaration.get("description", ""), str):
        problems.append(Problem((name, "description"), "must be a string"))
    return problems
