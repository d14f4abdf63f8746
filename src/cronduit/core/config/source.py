"""Config text -> plain data, plus the line and column of every key and value.

YAML is read with the YAML 1.2 *core* schema, not PyYAML's YAML 1.1 default, because 1.1
turns ordinary words into booleans and times into numbers behind the user's back: ``on:``
would become ``True:``, ``at: [12:30]`` the integer 750 and ``2026-01-01`` a date. Here only
``true``/``false`` are booleans, ``null``/``~``/empty are null, and numbers are decimal,
``0o`` octal, ``0x`` hex or floats. Mapping keys are always text.

To report errors, nodes are composed, then built by hand so that every value keeps its
position. Duplicate keys are errors (YAML forbids them; PyYAML would keep the last one
silently). Anchors and aliases work; merge keys (``<<``) do not exist in YAML 1.2 and are
refused by name.

Positions are only read to report an error. So a file is first read straight from the
parser's events into plain data, with neither nodes nor positions: recording a position per
value was a third of loading a large file, and the node tree (2.5 KiB a job) left the
daemon's heap that much bigger for good. Anything that read does not expect (a syntax error,
an anchor, a tag, a duplicate or merge key, nesting too deep, a number too long) sends the
file to the composer and the building that records positions, which reports the problem
where it was written; a file read cleanly is composed again only if a position is asked for.

The limits on a file's size are in :mod:`cronduit.core.limits`: its length, its nesting, the
digits of a number, and the values its aliases add. The last is what stops an alias bomb
("billion laughs": aliases of values that hold aliases, growing exponentially). It is
counted on the composed nodes, where an alias is the node it names, before anything is
built, so a bomb is refused at once, whatever it would grow to; the values written in the
file are not limited by it (a file of 100,000 jobs is a file of 100,000 jobs).

JSON is accepted as well (``.json`` files, or text that starts with ``{``). ``json`` reads
it first, for a precise syntax error and exact values; the YAML composer then supplies the
positions, on a copy whose string contents are blanked so that JSON escapes YAML reads
differently (``\\/``, surrogate pairs) and tabs cannot trip it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import BaseResolver

from cronduit.core.config.errors import ConfigError, ConfigErrors, Path, dotted
from cronduit.core.limits import (
    MAX_ALIAS_VALUES,
    MAX_CONFIG_CHARS,
    MAX_DEPTH,
    MAX_NUMBER_DIGITS,
)
from cronduit.core.sizes import format_size

__all__ = ["Document", "Position", "Positions", "read_document"]

_TAG = "tag:yaml.org,2002:"
_TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"
_TOO_LONG_NUMBER = (f"a number of more than {MAX_NUMBER_DIGITS} digits: past every bound "
                    "cronduit takes")
_ALIAS_BOMB = (f"alias expansion exceeds {MAX_ALIAS_VALUES} values beyond those written "
               "(aliases of values that hold aliases grow exponentially)")


@dataclass(frozen=True, order=True)
class Position:
    """A 1-based line and column (columns count characters, as editors do)."""

    line: int
    column: int


_START = Position(1, 1)


@dataclass(frozen=True)
class Positions:
    """Where each value, and each mapping key, of a document was written."""

    values: Mapping[Path, Position]
    keys: Mapping[Path, Position]


@dataclass(frozen=True)
class Document:
    """The data of a config file and where each of its keys and values was written.

    ``find_positions`` is called once, when a position is first asked for: only errors
    need them, so a file that has none is never walked for them.
    """

    data: object
    find_positions: Callable[[], Positions] = field(repr=False, compare=False)

    @cached_property
    def positions(self) -> Positions:
        return self.find_positions()

    @property
    def values(self) -> Mapping[Path, Position]:
        return self.positions.values

    @property
    def keys(self) -> Mapping[Path, Position]:
        return self.positions.keys

    def locate(self, path: Path, *, at_key: bool = False) -> Position:
        """Where ``path`` was written; a path that goes past the data falls back to the
        closest value that exists, pointing at its key (the thing as a whole)."""
        if at_key and path in self.keys:
            return self.keys[path]
        if path in self.values:
            return self.values[path]
        for end in range(len(path) - 1, -1, -1):
            prefix = path[:end]
            found = self.keys.get(prefix) or self.values.get(prefix)
            if found is not None:
                return found
        return _START


# -- the YAML 1.2 core schema ------------------------------------------------------------


class _CoreResolver(BaseResolver):
    """Implicit tags of the YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1023-core-schema)."""

    yaml_implicit_resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}  # noqa: RUF012


_BOOL = re.compile(r"true|True|TRUE|false|False|FALSE")
_NULL = re.compile(r"~|null|Null|NULL|")
_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
for _tag, _pattern, _first in (
    ("bool", _BOOL, "tTfF"),
    ("null", _NULL, "~nN"),
    ("int", _INT, "-+0123456789"),
    ("float", _FLOAT, "-+.0123456789"),
):
    _starts: list[str | None] = [*_first, ""] if _tag == "null" else list(_first)
    _CoreResolver.add_implicit_resolver(
        _TAG + _tag, re.compile(f"^(?:{_pattern.pattern})$"), _starts
    )


class _PureLoader(
    yaml.reader.Reader,
    yaml.scanner.Scanner,
    yaml.parser.Parser,
    yaml.composer.Composer,
    _CoreResolver,
):
    """Composes nodes with the core schema; no constructor: values are built here."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        _CoreResolver.__init__(self)


def _loader_class() -> type[Any]:
    """libyaml's parser when PyYAML was built with it (much faster), else the pure one."""
    if not getattr(yaml, "__with_libyaml__", False):  # pragma: no cover - depends on the build
        return _PureLoader
    from yaml._yaml import CParser  # noqa: PLC0415 - only importable when built with libyaml

    class _CLoader(CParser, _CoreResolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _CoreResolver.__init__(self)

    return _CLoader


_Loader: Final = _loader_class()


def _compose(text: str) -> Node | None:
    loader = _Loader(text)
    try:
        node: Node | None = loader.get_single_node()
        return node
    finally:
        loader.dispose()


# -- building values from nodes ----------------------------------------------------------


def _position(mark: Any) -> Position:
    return Position(mark.line + 1, mark.column + 1)


class _SourceError(Exception):
    """A problem in the text itself; the build stops at the first one of these."""

    def __init__(self, position: Position, message: str) -> None:
        super().__init__(message)
        self.position = position
        self.message = message


class _Builder:
    """Walks composed nodes into plain data, recording positions and duplicate keys."""

    def __init__(self) -> None:
        self.values: dict[Path, Position] = {}
        self.keys: dict[Path, Position] = {}
        self.errors: list[tuple[Position, str]] = []
        self._open: set[int] = set()

    def build(self, node: Node, path: Path) -> object:
        if len(path) > MAX_DEPTH:
            raise _SourceError(_position(node.start_mark), _TOO_DEEP)
        self.values[path] = _position(node.start_mark)
        if isinstance(node, ScalarNode):
            return self._recorded(_scalar, node, path)
        if id(node) in self._open:
            raise _SourceError(_position(node.start_mark), "an alias refers to itself")
        self._open.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                _expect_tag(node, "seq")
                return [self.build(item, (*path, index)) for index, item in enumerate(node.value)]
            if not isinstance(node, MappingNode):  # pragma: no cover - the composer's only kinds
                raise _SourceError(_position(node.start_mark), "unsupported node")
            _expect_tag(node, "map")
            return self._mapping(node, path)
        finally:
            self._open.discard(id(node))

    def _mapping(self, node: MappingNode, path: Path) -> dict[str, object]:
        result: dict[str, object] = {}
        for key_node, value_node in node.value:
            key = self._recorded(_key, key_node)
            if not isinstance(key, str):
                continue
            where = _position(key_node.start_mark)
            if key in result:
                self.duplicate(path, key, where)
                continue
            self.keys[(*path, key)] = where
            result[key] = self.build(value_node, (*path, key))
        return result

    def _recorded(self, read: Callable[[Any], object], node: Node, path: Path = ()) -> object:
        """Read one scalar or key; a problem with it is recorded and the build goes on."""
        try:
            return read(node)
        except _SourceError as error:
            message = error.message
            if message == _TOO_LONG_NUMBER and path:  # a bound: named with its field
                message = f"{dotted(path)}: {message}"
            self.errors.append((error.position, message))
            return None

    def duplicate(self, path: Path, key: str, where: Position) -> None:
        first = self.keys[(*path, key)]
        label = f"{dotted(path)}: " if path else ""
        self.errors.append(
            (where, f"{label}duplicate key '{key}' (first given at line {first.line})")
        )


def _key(node: Node) -> str:
    if not isinstance(node, ScalarNode):
        raise _SourceError(
            _position(node.start_mark), "a key must be plain text, not a list or mapping"
        )
    if node.value == "<<" and not node.style:  # plain (libyaml says "", PyYAML None)
        raise _SourceError(
            _position(node.start_mark),
            "merge keys (<<) are not part of YAML 1.2; repeat the keys, or alias a whole value",
        )
    return str(node.value)


def _expect_tag(node: Node, kind: str) -> None:
    if node.tag != _TAG + kind:
        raise _SourceError(_position(node.start_mark), _unsupported(node.tag))


def _unsupported(tag: str) -> str:
    shown = "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag
    return f"unsupported tag {shown}: only plain YAML values (text, numbers, true/false, null)"


def _scalar(node: ScalarNode) -> object:
    """A scalar by its tag, whether the core schema resolved it or the text spelled it out."""
    tag = _TAG + "str" if node.tag == "!" else node.tag
    kind = tag.removeprefix(_TAG)
    parse = _SCALARS.get(kind) if tag.startswith(_TAG) else None
    if parse is None:
        raise _SourceError(_position(node.start_mark), _unsupported(node.tag))
    value = parse(str(node.value))
    if value is _INVALID:
        raise _SourceError(_position(node.start_mark), f"not a valid !!{kind} value")
    if value is _TOO_LONG:
        raise _SourceError(_position(node.start_mark), _TOO_LONG_NUMBER)
    return value


_INVALID: Final = object()
_TOO_LONG: Final = object()
"""A whole number of more digits than :data:`~cronduit.core.limits.MAX_NUMBER_DIGITS`."""


def _text(text: str) -> object:
    return text


def _bool(text: str) -> object:
    return text.lower() == "true" if _BOOL.fullmatch(text) else _INVALID


def _null(text: str) -> object:
    return None if _NULL.fullmatch(text) else _INVALID


def _int(text: str) -> object:
    if not _INT.fullmatch(text):
        return _INVALID
    digits = text.lstrip("+-").removeprefix("0x").removeprefix("0o")
    if len(digits) > MAX_NUMBER_DIGITS:  # leading zeros too: Python counts them
        return _TOO_LONG  # never converted: Python refuses numbers of thousands of digits
    if text.startswith(("0o", "0x")):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text)


def _float(text: str) -> object:
    if not _FLOAT.fullmatch(text):
        return _INVALID
    lowered = text.lower()
    if lowered.endswith(".inf"):
        return -math.inf if lowered.startswith("-") else math.inf
    if lowered == ".nan":
        return math.nan
    return float(text)


_SCALARS: Final = {"str": _text, "bool": _bool, "null": _null, "int": _int, "float": _float}


# -- building values without positions ---------------------------------------------------


class _Unusual(Exception):
    """Something only :class:`_Builder` may judge: compose and build again, with positions."""


_PARSE_BY_TAG: Final = {_TAG + kind: parse for kind, parse in _SCALARS.items()}
_IMPLICIT: Final = (None, "!")
"""Tags the composer resolves itself: none given, or the non-specific ``!``."""
_SEQUENCE_TAGS: Final = (*_IMPLICIT, _TAG + "seq")
_MAPPING_TAGS: Final = (*_IMPLICIT, _TAG + "map")


class _Plain:
    """The data :class:`_Builder` builds, for a file it would find nothing wrong with, read
    from the parser's events: no node tree, so no memory held for one (the daemon's heap
    never shrinks back from what loading took).

    An alias gives the very value its anchor was built into (nothing downstream changes the
    data it is given), counted as the values it repeats, so that a file whose aliases add
    too many goes to :func:`_refuse_alias_bomb`. An alias of an anchor not built yet (one
    not given, or still open: an alias of itself) and an anchor given twice go to the
    composer, which names them.
    """

    def __init__(self, parser: Any) -> None:
        self._next = parser.get_event
        self._resolve = parser.resolve
        self._shared: dict[str, str] = {}  # one object for text repeated across jobs
        self._anchors: dict[str, tuple[object, int]] = {}
        """Each anchor's value, and how many values it holds expanded (itself included)."""
        self._opened: set[str] = set()
        self._count = 0
        """Values read so far, those aliases repeat included."""
        self._repeated = 0
        """Values that aliases added."""

    def document(self) -> object:
        self._next()  # the stream's start
        if isinstance(self._next(), StreamEndEvent):
            return None
        data = self._value(self._next(), 0)
        self._next()  # the document's end
        if not isinstance(self._next(), StreamEndEvent):
            raise _Unusual  # a second document
        return data

    def _value(self, event: NodeEvent, depth: int) -> object:
        if depth > MAX_DEPTH:
            raise _Unusual
        anchor = event.anchor
        if anchor is None:
            return self._unanchored(event, depth)
        if isinstance(event, AliasEvent):
            return self._alias(anchor)
        if anchor in self._opened:
            raise _Unusual  # given twice
        self._opened.add(anchor)
        before = self._count
        value = self._unanchored(event, depth)
        self._anchors[anchor] = (value, self._count - before)
        return value

    def _unanchored(self, event: NodeEvent, depth: int) -> object:
        self._count += 1
        if isinstance(event, ScalarEvent):
            return self._scalar(event)
        if isinstance(event, SequenceStartEvent) and event.tag in _SEQUENCE_TAGS:
            items = []
            while not isinstance(event := self._next(), SequenceEndEvent):
                items.append(self._value(event, depth + 1))
            return items
        if isinstance(event, MappingStartEvent) and event.tag in _MAPPING_TAGS:
            return self._mapping(depth)
        raise _Unusual  # a tag

    def _alias(self, anchor: str) -> object:
        if anchor not in self._anchors:
            raise _Unusual  # not given, or an alias of itself
        value, size = self._anchors[anchor]
        self._count += size
        self._repeated += size
        if self._repeated > MAX_ALIAS_VALUES:
            raise _Unusual
        return value

    def _mapping(self, depth: int) -> dict[str, object]:
        result: dict[str, object] = {}
        while not isinstance(event := self._next(), MappingEndEvent):
            if not isinstance(event, ScalarEvent) or event.anchor is not None:
                raise _Unusual
            key = self._shared.setdefault(event.value, event.value)
            if key in result or (key == "<<" and not event.style):
                raise _Unusual
            result[key] = self._value(self._next(), depth + 1)
        return result

    def _scalar(self, event: ScalarEvent) -> object:
        tag = event.tag
        if tag in _IMPLICIT:
            tag = self._resolve(ScalarNode, event.value, event.implicit)
        parse = _PARSE_BY_TAG.get(tag)
        value = _INVALID if parse is None else parse(event.value)
        if value is _INVALID or value is _TOO_LONG:
            raise _Unusual
        return self._shared.setdefault(value, value) if isinstance(value, str) else value


# -- YAML --------------------------------------------------------------------------------


def _yaml_error(error: yaml.YAMLError, text: str) -> tuple[Position, str]:
    """PyYAML's own words, at its own mark; they never quote a scalar's content."""
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        where = _position(mark) if mark else _START
        problem = error.problem or "invalid YAML"
        message = f"{error.context}, {problem}" if error.context else problem
        return where, f"invalid YAML: {message}{_hint(error, text, where)}"
    if isinstance(error, yaml.reader.ReaderError):
        return _offset_position(text, error.position), f"invalid YAML: {error.reason}"
    return _START, "invalid YAML"


def _hint(error: yaml.MarkedYAMLError, text: str, where: Position) -> str:
    """The two slips that PyYAML's words do not explain: tabs, and a bare ``*`` (cron)."""
    lines = text.splitlines()
    line = lines[where.line - 1] if 0 < where.line <= len(lines) else ""
    if "\t" in line[where.column - 1 : where.column]:
        return " (indent with spaces: YAML does not allow tabs there)"
    if "alias" in f"{error.context} {error.problem}":
        return ' (a value that starts with * must be quoted, as in cron: "*/5 * * * *")'
    return ""


def _offset_position(text: str, offset: int) -> Position:
    before = text[:offset]
    return Position(before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1)


def _read_yaml(text: str, filename: str) -> Document:
    parser = _Loader(text)
    try:
        data = _Plain(parser).document()
    except (_Unusual, yaml.YAMLError):
        return _located_yaml(_yaml_node(text, filename), filename)
    finally:
        parser.dispose()
    return Document(data, lambda: _located_yaml(_yaml_node(text, filename), filename).positions)


def _yaml_node(text: str, filename: str) -> Node | None:
    try:
        return _compose(text)
    except yaml.YAMLError as error:
        where, message = _yaml_error(error, text)
        raise ConfigErrors([ConfigError(filename, where.line, where.column, message)]) from None
    except RecursionError:
        raise ConfigErrors(
            [ConfigError(filename, 1, 1, f"invalid YAML: {_TOO_DEEP}")]
        ) from None


def _located_yaml(node: Node | None, filename: str) -> Document:
    if node is not None:
        _refuse_alias_bomb(node, filename)
    builder = _Builder()
    data = _run(builder, filename, lambda: None if node is None else builder.build(node, ()))
    return _located(data, builder)


def _refuse_alias_bomb(root: Node, filename: str) -> None:
    """Refuse a document whose aliases add more than :data:`MAX_ALIAS_VALUES` values.

    An alias is the very node it names, so the composed document is a graph whose nodes are
    the values written. Each node's size once expanded (itself and everything under it,
    aliases repeated) is summed from its children's, each node once and without recursion:
    the time is that of the values written, whatever they would expand to. An alias to a
    node still open (itself, or one holding it) adds nothing here; the build names it. The
    error points at the smallest value whose expansion alone is past the limit.
    """
    size: dict[int, int] = {}
    nodes: dict[int, Node] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        children = _children(node)
        if children_done:
            size[id(node)] = 1 + sum(size[id(child)] for child in children)
        elif id(node) not in size:
            size[id(node)] = 0  # open: an alias back to it adds nothing
            nodes[id(node)] = node
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in size)
    if size[id(root)] - len(size) <= MAX_ALIAS_VALUES:
        return
    _, smallest = min((value, key) for key, value in size.items() if value > MAX_ALIAS_VALUES)
    where = _position(nodes[smallest].start_mark)
    raise ConfigErrors([ConfigError(filename, where.line, where.column, _ALIAS_BOMB)])


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [value for _, value in node.value]
    return []


def _located(data: object, builder: _Builder) -> Document:
    positions = Positions(builder.values, builder.keys)
    return Document(data, lambda: positions)


def _run(builder: _Builder, filename: str, build: Any) -> object:
    """Run a build, turning text problems (and duplicate keys) into one ``ConfigErrors``."""
    try:
        data = build()
    except _SourceError as error:
        builder.errors.append((error.position, error.message))
        data = None
    if builder.errors:
        raise ConfigErrors(
            ConfigError(filename, where.line, where.column, message)
            for where, message in builder.errors
        )
    return data


# -- JSON --------------------------------------------------------------------------------


class _Object(list[tuple[str, Any]]):
    """A JSON object as its ordered pairs, duplicates included (``json`` would drop them)."""


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _blanked(text: str) -> str:
    """``text`` with every string's content replaced by ``x``s of the same length.

    Lengths (and so columns) are kept; only structure matters to the composer, values come
    from ``json``. Valid JSON holds tabs only between tokens, so they become spaces.
    """

    def blank(match: re.Match[str]) -> str:
        return '"' + "x" * (len(match.group()) - 2) + '"'

    return _JSON_STRING.sub(blank, text).replace("\t", " ")


def _looks_like_json(text: str, filename: str) -> bool:
    return filename.lower().endswith(".json") or text.lstrip().startswith("{")


def _read_json(text: str, filename: str) -> Document:
    try:
        parsed = json.loads(text, object_pairs_hook=_Object, parse_int=_json_int)
    except json.JSONDecodeError as error:
        message = f"invalid JSON: {error.msg}"
        raise ConfigErrors([ConfigError(filename, error.lineno, error.colno, message)]) from None
    except RecursionError:
        raise ConfigErrors(
            [ConfigError(filename, 1, 1, f"invalid JSON: {_TOO_DEEP}")]
        ) from None
    try:
        data = _plain_json(parsed, 0, {})
    except _Unusual:
        return _located_json(parsed, text, filename)
    return Document(data, lambda: _located_json(parsed, text, filename).positions)


def _json_int(text: str) -> object:
    """A JSON whole number, or :data:`_TOO_LONG` (reported where it was written)."""
    return _TOO_LONG if len(text.lstrip("-")) > MAX_NUMBER_DIGITS else int(text)


def _plain_json(value: Any, depth: int, shared: dict[str, str]) -> object:
    """:class:`_JsonBuilder`'s data for a file it finds nothing wrong with."""
    if depth > MAX_DEPTH or value is _TOO_LONG:
        raise _Unusual
    if isinstance(value, _Object):
        result: dict[str, object] = {}
        for key, item in value:
            if key in result:
                raise _Unusual
            result[key] = _plain_json(item, depth + 1, shared)
        return result
    if isinstance(value, list):
        return [_plain_json(item, depth + 1, shared) for item in value]
    if isinstance(value, str):
        return shared.setdefault(value, value)
    return value


def _located_json(parsed: Any, text: str, filename: str) -> Document:
    try:
        node = _compose(_blanked(text))
    except (yaml.YAMLError, RecursionError):
        node = None  # positions are a courtesy; the data itself is already known to be right
    builder = _Builder()
    data = _run(builder, filename, lambda: _JsonBuilder(builder).build(parsed, node, ()))
    return _located(data, builder)


class _JsonBuilder:
    """Pairs ``json``'s values with the composer's nodes, walking both in step."""

    def __init__(self, builder: _Builder) -> None:
        self._builder = builder

    def build(self, value: Any, node: Node | None, path: Path) -> object:
        if len(path) > MAX_DEPTH:
            raise _SourceError(self._builder.values.get(path[:-1], _START), _TOO_DEEP)
        if node is not None:
            self._builder.values[path] = _position(node.start_mark)
        if value is _TOO_LONG:
            label = f"{dotted(path)}: " if path else ""
            raise _SourceError(self._builder.values.get(path, _START), label + _TOO_LONG_NUMBER)
        if isinstance(value, _Object):
            return self._object(value, node if isinstance(node, MappingNode) else None, path)
        if isinstance(value, list):
            items = node.value if isinstance(node, SequenceNode) else []
            nodes = items if len(items) == len(value) else [None] * len(value)
            return [
                self.build(item, sub, (*path, i))
                for i, (item, sub) in enumerate(zip(value, nodes, strict=True))
            ]
        return value

    def _object(self, pairs: _Object, node: MappingNode | None, path: Path) -> dict[str, object]:
        nodes: list[tuple[Node | None, Node | None]] = [(None, None)] * len(pairs)
        if node is not None and len(node.value) == len(pairs):
            nodes = list(node.value)
        result: dict[str, object] = {}
        for (key, value), (key_node, value_node) in zip(pairs, nodes, strict=True):
            where = (
                _position(key_node.start_mark)
                if key_node
                else self._builder.values.get(path, _START)
            )
            if key in result:
                self._builder.duplicate(path, key, where)
                continue
            self._builder.keys[(*path, key)] = where
            result[key] = self.build(value, value_node, (*path, key))
        return result


# -- entry point -------------------------------------------------------------------------


_SURROGATE = re.compile("[\ud800-\udfff]")


def read_document(text: str, filename: str) -> Document:
    """Parse config ``text`` (YAML or JSON); ``filename`` only labels the errors.

    Raises :class:`ConfigErrors` for a syntax error, a duplicate key, an unsupported tag or
    a merge key, each at its position.
    """
    text = text.removeprefix("\ufeff")
    if len(text) > MAX_CONFIG_CHARS:
        where = _offset_position(text, MAX_CONFIG_CHARS)
        message = (f"the file is longer than {MAX_CONFIG_CHARS} characters "
                   f"({format_size(MAX_CONFIG_CHARS)}), the most cronduit reads")
        raise ConfigErrors([ConfigError(filename, where.line, where.column, message)])
    if (surrogate := _SURROGATE.search(text)) is not None:
        # Text decoded from a file never holds one; text handed in by a caller can, and the
        # YAML parser cannot encode it.
        where = _offset_position(text, surrogate.start())
        raise ConfigErrors([ConfigError(filename, where.line, where.column,
                                        "not UTF-8 text (a lone surrogate)")])
    if not _looks_like_json(text, filename):
        return _read_yaml(text, filename)
    if filename.lower().endswith(".json"):
        return _read_json(text, filename)
    try:
        return _read_json(text, filename)
    except ConfigErrors as json_errors:
        # Text that opens with "{" is usually JSON, but a YAML flow mapping is legal too.
        try:
            return _read_yaml(text, filename)
        except ConfigErrors:
            raise json_errors from None
