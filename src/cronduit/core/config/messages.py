"""Pydantic's errors, rewritten in cronduit's words and placed on the data they are about.

Pydantic reports a location (``loc``) in terms of its own schema: it may hold union tags and
field names that the file does not (a value moved by a shorthand). Walking the *data* along
the location, and skipping what the data does not hold, gives the path a user wrote. The
message says what was expected, never what was found: the value may be a secret.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from cronduit.core.config.errors import RULES_ERROR, Path, Problem, shown

_UNKNOWN = frozenset({"extra_forbidden", "unexpected_keyword_argument"})
_MISSING = frozenset({"missing", "missing_argument", "missing_keyword_only_argument"})
_MAPPING = "must be a mapping (key: value lines, or {key: value})"
_LIST = "must be a list"
_EXPECTED = {
    "string_type": "must be a string",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "float_type": "must be a number",
    "tuple_type": _LIST,
    "list_type": _LIST,
    "dict_type": _MAPPING,
    "mapping_type": _MAPPING,
    "model_type": _MAPPING,
    "model_attributes_type": _MAPPING,
    "dataclass_type": _MAPPING,
    "string_too_short": "must not be empty",
}
_QUOTED = re.compile(r"'([^']*)'")


def unknown_key_message(key: str, allowed: Sequence[str]) -> str:
    """Names the allowed keys, and the likely one when the key is a near miss."""
    message = f"unknown key {shown(key)}"
    guess = _closest(key, allowed)
    if guess:
        message += f" (did you mean '{guess}'?)"
    return f"{message}; allowed keys: {', '.join(sorted(allowed))}"


def _closest(key: str, allowed: Sequence[str]) -> str | None:
    """Case and ``-``/``_`` slips first (``timeZone``, ``time-zone``), then near spellings."""
    folded = {name.replace("_", "").lower(): name for name in allowed}
    exact = folded.get(key.replace("-", "").replace("_", "").lower())
    if exact:
        return exact
    lowered = {name.lower(): name for name in allowed}
    close = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close else None


def detail_problems(detail: ErrorDetails, model: type[BaseModel], data: object) -> list[Problem]:
    """One pydantic error detail as problems (a rules error may carry several)."""
    path, at_key = data_path(data, detail["loc"])
    kind = detail["type"]
    if kind == RULES_ERROR:
        carried = (detail.get("ctx") or {}).get("problems", ())
        return [problem.under(path) for problem in carried]
    if kind in _UNKNOWN:
        allowed = config_keys(model_at(model, path[:-1]))
        return [Problem(path, unknown_key_message(str(path[-1]), allowed), True, True)]
    if kind in _MISSING:
        return [Problem(path, f"missing required key '{detail['loc'][-1]}'", at_key=True)]
    return [Problem(path, _expected(detail), at_key=at_key)]


def data_path(data: object, loc: tuple[int | str, ...]) -> tuple[Path, bool]:
    """The part of ``loc`` the data really holds, and whether it ends on a mapping key.

    Elements the data does not hold (union tags, fields a shorthand filled in) are skipped.
    """
    path: list[str | int] = []
    current = data
    at_key = False
    for element in loc:
        if element == "[key]":
            at_key = True
            continue
        found, current = _child_value(current, element)
        if found:
            path.append(element)
    return tuple(path), at_key


def _child_value(current: object, element: int | str) -> tuple[bool, object]:
    if isinstance(current, Mapping) and element in current:
        return True, current[element]
    if isinstance(current, list) and isinstance(element, int) and 0 <= element < len(current):
        return True, current[element]
    return False, current


def _expected(detail: ErrorDetails) -> str:
    kind = detail["type"]
    ctx: dict[str, Any] = dict(detail.get("ctx") or {})
    if kind in ("enum", "literal_error"):
        return "must be one of " + ", ".join(_QUOTED.findall(str(ctx.get("expected", ""))))
    if kind == "string_type" and isinstance(detail["input"], int | float | bool):
        return "must be a string (put it in quotes)"
    if kind in ("too_short", "too_long"):
        bound = ctx.get("min_length" if kind == "too_short" else "max_length")
        return f"must have at {'least' if kind == 'too_short' else 'most'} {bound} entries"
    comparisons = {
        "greater_than_equal": ("at least", "ge"),
        "less_than_equal": ("at most", "le"),
        "greater_than": ("greater than", "gt"),
        "less_than": ("less than", "lt"),
    }
    if kind in comparisons:
        words, key = comparisons[kind]
        return f"must be {words} {ctx.get(key)}"
    return _EXPECTED.get(kind) or detail["msg"][:1].lower() + detail["msg"][1:]


# -- which keys a mapping allows ---------------------------------------------------------


def config_keys(target: object) -> tuple[str, ...]:
    """The keys a config mapping of type ``target`` may hold (empty when unknown)."""
    own = getattr(target, "config_keys", None)
    if callable(own):
        return tuple(own())
    if isinstance(target, type) and dataclasses.is_dataclass(target):
        return tuple(field.name for field in dataclasses.fields(target))
    return ()


def model_at(root: object, path: Path) -> object:
    """The type that validated the value at ``path``, found by walking the annotations."""
    current = _unwrap(root)
    for element in path:
        current = _unwrap(_child(current, element))
        if current is None:
            return None
    return current


def _child(parent: object, element: str | int) -> object:
    if isinstance(parent, type) and issubclass(parent, BaseModel):
        field = parent.model_fields.get(str(element))
        return None if field is None else field.annotation
    if isinstance(parent, type) and dataclasses.is_dataclass(parent):
        return typing.get_type_hints(parent).get(str(element))
    origin = typing.get_origin(parent)
    args = typing.get_args(parent)
    if origin in (dict, Mapping, typing.Mapping) and len(args) == 2:
        return args[1]
    if origin in (tuple, list) and args:
        return args[0]
    return None


def _unwrap(annotation: object) -> object:
    """``Annotated[X, ...]`` -> ``X``; ``X | None`` -> ``X``."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
            annotation = members[0] if len(members) == 1 else annotation
            if len(members) != 1:
                return annotation
        else:
            return annotation
