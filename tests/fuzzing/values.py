"""Values of every shape, and the writing of them as YAML and JSON text.

The config loader and the HTTP bodies read data from outside; these strategies make that
data: scalars of every type (with the numbers that overflow something: past 2**63, past
Python's 4,300-digit limit for reading an integer, past ``datetime``'s range as a duration),
lists and mappings of them under random keys, and text nested far deeper than any file.

A value that plain YAML or JSON cannot carry as data (an integer literal of 5,000 digits,
``1e999``) is a :class:`Raw` piece of text, written out as it is.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from typing import Any

import yaml
from hypothesis import strategies as st

LONG_DIGITS = 5000
"""Digits of an integer literal past Python's limit for reading one (4,300)."""
HUGE_INTEGERS = (2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**30, -(2**63) - 1, 10**400)


class Raw(str):
    """Text written into a document as it is, where a value would be (a number literal)."""

    __slots__ = ()


RAW_NUMBERS = (
    Raw("1" * LONG_DIGITS),
    Raw("-" + "9" * LONG_DIGITS),
    Raw("0x" + "f" * LONG_DIGITS),
    Raw("1e999"),
    Raw("-1e999"),
    Raw("1" * 400 + ".5"),
)

integers = st.one_of(
    st.integers(-3, 120),
    st.integers(),
    st.sampled_from(HUGE_INTEGERS),
)
floats = st.one_of(
    st.floats(),
    st.sampled_from([0.5, -0.0, 1e308, math.inf, -math.inf, math.nan, 3600.0]),
)
texts = st.one_of(
    st.text(max_size=12),
    st.text(st.characters(codec="utf-8"), max_size=12),
    st.text(st.characters(categories=["Cc", "Zs", "Zl", "Zp", "Cf", "Nd", "Cs"]), max_size=6),
)
scalars = st.one_of(
    st.none(), st.booleans(), integers, floats, texts, st.sampled_from(RAW_NUMBERS)
)


def documents(leaves: st.SearchStrategy[Any] = scalars,
              keys: st.SearchStrategy[str] = texts, max_leaves: int = 30
              ) -> st.SearchStrategy[Any]:
    """Lists and mappings of ``leaves`` under ``keys``, a few levels deep."""
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(keys, children, max_size=5),
        ),
        max_leaves=max_leaves,
    )


def weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, each drawn about ``weight`` times in the sum of the weights
    (``one_of`` draws its branches unevenly, so repeating one does not weight it)."""
    table = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.integers(0, len(table) - 1).flatmap(table.__getitem__)


# -- mutations -------------------------------------------------------------------------

ValuesFor = Callable[[str | int | None], st.SearchStrategy[Any]]
"""The values to try at a key (or list index; None: a new list item)."""


def paths_of(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key and list index in ``value``, as paths from its top."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((*prefix, key))
            found += paths_of(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.append((*prefix, index))
            found += paths_of(item, (*prefix, index))
    return found


def parent_of(document: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        document = document[part]
    return document


@st.composite
def _mutation(draw: st.DrawFn, document: Any, values_for: ValuesFor,
              keys: st.SearchStrategy[str]) -> None:
    """Change ``document`` in place at one path: replace, drop, add, rename or wrap."""
    paths = paths_of(document)
    if not paths:
        return
    path = draw(st.sampled_from(paths))
    parent, key = parent_of(document, path), path[-1]
    action = draw(st.sampled_from(["replace", "replace", "replace", "drop", "add", "rename",
                                   "wrap"]))
    if action == "replace":
        parent[key] = draw(values_for(key))
    elif action == "drop":
        del parent[key]
    elif action == "wrap":
        parent[key] = draw(st.sampled_from([[parent[key]], {"x": parent[key]}]))
    elif isinstance(parent, dict) and action == "add":
        new = draw(keys)
        parent[new] = draw(values_for(new))
    elif isinstance(parent, dict):
        renamed = draw(keys | st.sampled_from([str(key).upper(), str(key)[:-1], f"{key}_"]))
        parent[renamed] = parent.pop(key)
    else:
        parent.insert(key, draw(values_for(None)))


@st.composite
def mutated(draw: st.DrawFn, document: Any, values_for: ValuesFor,
            keys: st.SearchStrategy[str], most: int = 4) -> Any:
    """A copy of ``document`` changed field by field, one to ``most`` times: a value
    replaced by ``values_for`` its key, a key dropped, added, misspelt, or a value wrapped
    in a list or a mapping."""
    changed = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, most))):
        draw(_mutation(changed, values_for, keys))
    return changed


# -- deep nesting ------------------------------------------------------------------------

depths = st.one_of(st.integers(1, 80), st.integers(60, 1100), st.integers(1000, 200_000))


@st.composite
def deep_json(draw: st.DrawFn) -> str:
    """JSON nested ``depth`` levels (closed or not), optionally inside an object's key."""
    depth = draw(depths)
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a": ', "}"), ('[{"a": ', "}]")]))
    inner = opener * depth + draw(st.sampled_from(["1", "null", '"x"', "[]", ""]))
    if draw(st.booleans()):
        inner += closer * depth
    key = draw(st.sampled_from(["", "inputs", "jobs", "commits", "repository", "operator"]))
    return f'{{"{key}": {inner}}}' if key else inner


@st.composite
def deep_yaml(draw: st.DrawFn) -> str:
    """YAML nested deeply: flow brackets, block indentation, block sequences, or an alias
    bomb (each level ten aliases of the one before: a billion values unfolded)."""
    depth = draw(depths)
    kind = draw(st.sampled_from(["flow", "block", "dashes", "bomb", "self"]))
    if kind == "flow":
        return draw(st.sampled_from(["jobs: ", "", "a: "])) + "[" * depth + "]" * depth
    if kind == "block":
        levels = min(depth, 300)
        return "".join(f"{' ' * i}k{i}:\n" for i in range(levels)) + " " * levels + "x\n"
    if kind == "dashes":
        return "jobs:\n  " + "- " * depth + "x\n"
    if kind == "self":
        return "a: &a [*a]\n"
    levels = draw(st.integers(2, 9))
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\njobs: *l{levels - 1}\n"


# -- writing documents -------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper, writing :class:`Raw` values as plain scalars."""


def _represent_raw(dumper: yaml.SafeDumper, value: Raw) -> yaml.Node:
    # tagged as the dumper would read it back, so that it is written plain, untagged
    tag = dumper.resolve(yaml.ScalarNode, str(value), (True, False))
    return dumper.represent_scalar(tag, str(value), style="")


def _represent_float(dumper: yaml.SafeDumper, value: float) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:float", _yaml_float(value), style="")


_Dumper.add_representer(Raw, _represent_raw)
_Dumper.add_representer(float, _represent_float)


def _yaml_float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    return repr(value)


def to_yaml(value: object, *, flow: bool = False) -> str:
    """``value`` as YAML text (block style unless ``flow``), :class:`Raw` written as is."""
    return yaml.dump(value, Dumper=_Dumper, default_flow_style=flow, allow_unicode=True,
                     sort_keys=False)


def to_json(value: object, indent: int | None = None) -> str:
    """``value`` as JSON text, :class:`Raw` written as is (non-finite floats as JSON's
    extensions NaN and Infinity, which are not JSON: a reader must refuse them cleanly)."""
    return _Json(indent).write(value, 0)


class _Json:
    def __init__(self, indent: int | None) -> None:
        self.indent = indent

    def write(self, value: object, level: int) -> str:
        if isinstance(value, Raw):
            return str(value)
        if isinstance(value, dict):
            items = [f"{json.dumps(str(k))}: {self.write(v, level + 1)}" for k, v in value.items()]
            return "{" + self._join(items, level) + "}"
        if isinstance(value, list | tuple):
            return "[" + self._join([self.write(v, level + 1) for v in value], level) + "]"
        return json.dumps(value)

    def _join(self, items: list[str], level: int) -> str:
        if self.indent is None or not items:
            return ", ".join(items)
        pad = "\n" + " " * (self.indent * (level + 1))
        return pad + ("," + pad).join(items) + "\n" + " " * (self.indent * level)
