"""Config text -> data and positions: the YAML 1.2 core schema, JSON, and text errors."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from textwrap import dedent

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cronduit.core.config import ConfigErrors
from cronduit.core.config.source import (
    Document,
    Position,
    _located_json,
    _located_yaml,
    _Object,
    _yaml_node,
    read_document,
)


def read(text: str, filename: str = "c.yaml") -> Document:
    return read_document(dedent(text), filename)


def errors(text: str, filename: str = "c.yaml") -> list[str]:
    with pytest.raises(ConfigErrors) as caught:
        read_document(dedent(text), filename)
    return [str(error) for error in caught.value.errors]


# -- the core schema ---------------------------------------------------------------------


def test_on_is_a_key_not_a_boolean() -> None:
    """YAML 1.1 would read ``on:`` as the boolean True; the core schema keeps the word."""
    assert {"on": {"events": ["push"]}} == read("on: {events: [push]}\n").data


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "y", "n", "Yes", "OFF"])
def test_yaml_1_1_boolean_words_stay_strings(word: str) -> None:
    """Only true and false are booleans, so ``yes`` means the text yes."""
    assert {"a": word} == read(f"a: {word}\n").data


@pytest.mark.parametrize(
    ("text", "expected"),
    [("true", True), ("True", True), ("TRUE", True), ("false", False), ("FALSE", False)],
)
def test_true_and_false_in_three_spellings_are_booleans(text: str, expected: bool) -> None:
    """The core schema's boolean spellings."""
    assert {"a": expected} == read(f"a: {text}\n").data


def test_times_of_day_are_strings_not_sexagesimal_numbers() -> None:
    """``12:30`` unquoted is the text 12:30, not 750 as YAML 1.1 had it."""
    assert {"at": ["12:30", "05:17"]} == read("at: [12:30, 05:17]\n").data


def test_dates_are_strings_not_timestamps() -> None:
    """``2026-01-01`` stays text: no implicit timestamps."""
    assert {"a": "2026-01-01"} == read("a: 2026-01-01\n").data


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        ("-7", -7),
        ("+3", 3),
        ("0o17", 15),
        ("0x1F", 31),
        ("017", 17),
        ("1_000", "1_000"),
    ],
)
def test_integers_follow_yaml_1_2(text: str, expected: object) -> None:
    """Decimal, 0o octal and 0x hex; underscores and old-style octal are not numbers."""
    assert {"a": expected} == read(f"a: {text}\n").data


def test_floats_and_nulls_follow_yaml_1_2() -> None:
    """Floats, infinities and the four spellings of null."""
    data = read("a: 1.5\nb: -.inf\nc: ~\nd: null\ne:\nf: NULL\ng: 1e3\n").data
    assert {
        "a": 1.5,
        "b": -math.inf,
        "c": None,
        "d": None,
        "e": None,
        "f": None,
        "g": 1000.0,
    } == data


def test_keys_are_always_text() -> None:
    """A key that looks like a number or a boolean is still its text."""
    assert {"1": "a", "true": "b", "null": "c"} == read("1: a\ntrue: b\nnull: c\n").data


def test_explicit_str_tag_keeps_text() -> None:
    """``!!str`` forces text, as YAML allows."""
    assert {"a": "42"} == read("a: !!str 42\n").data


def test_anchors_and_aliases_repeat_a_value() -> None:
    """An alias repeats its anchor's value."""
    assert {"a": {"x": 1}, "b": {"x": 1}} == read("a: &v {x: 1}\nb: *v\n").data


# -- positions ---------------------------------------------------------------------------


def test_positions_of_keys_and_values_are_one_based() -> None:
    """Every key and value has its line and column, counted from 1."""
    document = read(
        """\
        jobs:
          report:
            cron: "0 9 * * *"
        """
    )
    assert Position(3, 5) == document.keys[("jobs", "report", "cron")]
    assert Position(3, 11) == document.values[("jobs", "report", "cron")]


def test_positions_of_list_items() -> None:
    """Items of a flow list keep their own columns."""
    document = read("at: [05:17, 12:30]\n")
    assert Position(1, 13) == document.values[("at", 1)]


def test_locating_a_path_past_the_data_falls_back_to_its_closest_ancestor_key() -> None:
    """A missing key is reported where its mapping was introduced."""
    document = read("jobs:\n  report: {run: x}\n")
    assert Position(2, 3) == document.locate(("jobs", "report", "cron", "x"))


# -- text errors -------------------------------------------------------------------------


def test_a_duplicate_key_is_an_error_at_the_duplicate() -> None:
    """PyYAML would keep the last silently; cronduit points at the second one."""
    text = """\
        jobs:
          a: {run: x}
          b: {run: y}
          a: {run: z}
        """
    assert ["c.yaml:4:3: jobs: duplicate key 'a' (first given at line 2)"] == errors(text)


def test_every_duplicate_key_is_reported_at_once() -> None:
    """Two duplicates in different mappings are two errors."""
    found = errors("a: {x: 1, x: 2}\nb: 1\nb: 2\n")
    assert [
        "c.yaml:1:11: a: duplicate key 'x' (first given at line 1)",
        "c.yaml:3:1: duplicate key 'b' (first given at line 2)",
    ] == found


def test_a_yaml_syntax_error_is_one_located_error() -> None:
    """An unclosed flow mapping is reported where the parser gave up."""
    expected = (
        "c.yaml:3:1: invalid YAML: while parsing a flow mapping, did not find expected ',' or '}'"
    )
    assert [expected] == errors("jobs:\n  a: {run: x\n")


def test_a_tab_indent_gets_a_hint() -> None:
    """Tabs cannot indent YAML; the message says so."""
    [found] = errors("jobs:\n\ta: {run: x}\n")
    assert found.startswith("c.yaml:2:1: invalid YAML: ")
    assert found.endswith("(indent with spaces: YAML does not allow tabs there)")


def test_an_unquoted_cron_starting_with_a_star_gets_a_hint() -> None:
    """``*/5`` reads as an alias in YAML; the message says to quote it."""
    [found] = errors("cron: */5 * * * *\n")
    assert found.startswith("c.yaml:1:8: invalid YAML: ")
    assert found.endswith('(a value that starts with * must be quoted, as in cron: "*/5 * * * *")')


def test_merge_keys_and_unknown_tags_are_refused_by_name() -> None:
    """YAML 1.2 has no merge key, and cronduit reads only plain values."""
    found = errors("a: &x {run: x}\nb: {<<: *x}\nc: !!binary aGk=\n")
    assert [
        "c.yaml:2:5: merge keys (<<) are not part of YAML 1.2; repeat the keys, or alias a whole "
        "value",
        "c.yaml:3:4: unsupported tag !!binary: only plain YAML values (text, numbers, true/false, "
        "null)",
    ] == found


def _alias_bomb(levels: int) -> str:
    """Ten values, then each level ten aliases of the one before: 10**levels values."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.timeout(10)
def test_an_alias_bomb_is_refused_at_once_at_the_value_that_grows_past_the_bound() -> None:
    """A billion laughs (here 10**40 values) is refused from the values written, before any
    is built, at the smallest value whose expansion alone is past the bound."""
    assert [
        "c.yaml:6:5: alias expansion exceeds 1000000 values beyond those written (aliases of "
        "values that hold aliases grow exponentially)"
    ] == errors(_alias_bomb(40))


def test_aliases_may_add_values_up_to_the_bound_and_not_one_more() -> None:
    """The bound counts the values aliases add (the written ones are the file's own): a
    hundred aliases of a list of 10,000 values add exactly 1,000,000."""
    written = "a: &a [" + ", ".join(["x"] * 9_999) + "]\nc: &c x\n"
    at_bound = written + "b: [" + ", ".join(["*a"] * 100) + "]\n"
    assert 100 * [9_999 * ["x"]] == read(at_bound).data["b"]  # type: ignore[index]
    [found] = errors(at_bound.replace("b: [", "b: [*c, "))
    assert found.startswith("c.yaml:3:4: alias expansion exceeds 1000000 values")


def test_more_than_one_document_is_an_error() -> None:
    """A config is one document."""
    [found] = errors("a: 1\n---\nb: 2\n")
    assert "c.yaml:2:1: invalid YAML: expected a single document" in found


# -- JSON --------------------------------------------------------------------------------


def test_json_gets_positions_from_the_composer() -> None:
    """A JSON file's keys and values are located like YAML's."""
    document = read('{"jobs": {\n  "a": {"run": "x"}}}\n', "c.json")
    assert {"jobs": {"a": {"run": "x"}}} == document.data
    assert Position(2, 3) == document.keys[("jobs", "a")]
    assert Position(2, 16) == document.values[("jobs", "a", "run")]


def test_json_escapes_yaml_reads_differently_keep_json_values() -> None:
    r"""``\/`` and surrogate pairs decode as JSON says, and tabs between tokens are fine."""
    document = read('{"a":\t"x\\/y",\n\t"b": "\\ud83d\\ude00"}', "c.json")
    assert {"a": "x/y", "b": "\U0001f600"} == document.data
    assert Position(2, 7) == document.values[("b",)]


def test_a_json_syntax_error_has_json_line_and_column() -> None:
    """``json`` knows exactly where a JSON text went wrong."""
    assert ["c.json:2:1: invalid JSON: Expecting ',' delimiter"] == errors(
        '{"a": 1\n"b": 2}', "c.json"
    )


def test_a_json_duplicate_key_is_an_error() -> None:
    """``json`` would keep the last one; cronduit refuses both spellings of the mistake."""
    assert ["c.json:1:10: duplicate key 'a' (first given at line 1)"] == errors(
        '{"a": 1, "a": 2}', "c.json"
    )


def test_text_that_opens_with_a_brace_is_read_as_json() -> None:
    """Without a .json name, a leading ``{`` still selects JSON."""
    assert {"a": [1, 2]} == read('{"a": [1, 2]}', "cronduit.yaml").data


def test_a_yaml_flow_mapping_at_the_top_still_reads() -> None:
    """``{jobs: {...}}`` is valid YAML though not JSON: it falls back to YAML."""
    assert {"jobs": {"a": {"run": "x"}}} == read("{jobs: {a: {run: x}}}\n").data


def test_a_byte_order_mark_is_ignored() -> None:
    """Editors on some systems write one; it is not part of the config."""
    assert {"a": 1} == read_document("\ufeffa: 1\n", "c.yaml").data


# -- the quick read: no positions until one is asked for ---------------------------------


def _outcome(read: Callable[[], Document]) -> object:
    try:
        document = read()
    except ConfigErrors as errors:
        return [str(error) for error in errors.errors]
    return document.data, dict(document.values), dict(document.keys)


def _located_yaml_read(text: str) -> Document:
    """The read that records every position as it builds (the only read before the quick one)."""
    return _located_yaml(_yaml_node(text, "c.yaml"), "c.yaml")


def _located_json_read(text: str) -> Document:
    try:
        parsed = json.loads(text, object_pairs_hook=_Object)
    except json.JSONDecodeError:
        return read_document(text, "c.json")  # the same syntax error either way
    return _located_json(parsed, text, "c.json")


YAMLISH = st.text(alphabet="ab1.:-,[]{}&*!<~ '\"\n", max_size=60)
_values = st.recursive(
    st.one_of(st.sampled_from(["a", "1", "on", "~", "<<", "*/5 * * * *"]), st.integers(),
              st.booleans(), st.none(), st.floats(allow_nan=False)),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b", "1", "<<"]), children, max_size=3),
    max_leaves=12,
)
DUMPED = st.builds(
    lambda value, flow: yaml.safe_dump({"x": value, "y": value}, default_flow_style=flow),
    _values, st.booleans(),  # the repeated value is written once, then as an alias
)
JSONISH = st.text(alphabet='ab1.:-,[]{}" \n', max_size=60)
JSON_OBJECTS = st.lists(st.tuples(st.sampled_from("abc"), _values), max_size=4).map(
    lambda pairs: "{" + ",\n".join(f'"{key}": {json.dumps(value)}' for key, value in pairs) + "}"
)  # keys may repeat


@settings(max_examples=500, deadline=None)
@given(YAMLISH | DUMPED)
def test_the_quick_yaml_read_gives_what_the_located_read_gives(text: str) -> None:
    """Same data, positions and errors, whatever the text: tags, aliases, duplicates..."""
    assume(not text.lstrip().startswith("{"))  # read as JSON first
    expected = _outcome(lambda: _located_yaml_read(text))
    assert expected == _outcome(lambda: read_document(text, "c.yaml"))


@settings(max_examples=300, deadline=None)
@given(JSONISH | JSON_OBJECTS)
def test_the_quick_json_read_gives_what_the_located_read_gives(text: str) -> None:
    """The same for JSON, duplicate keys included."""
    expected = _outcome(lambda: _located_json_read(text))
    assert expected == _outcome(lambda: read_document(text, "c.json"))


def test_a_self_referencing_alias_is_still_refused() -> None:
    """The quick read leaves every anchor to the located read, which names this one."""
    assert ["c.yaml:1:4: an alias refers to itself"] == errors("a: &x [1, *x]\n")


def test_nesting_too_deep_is_still_refused() -> None:
    """Past 64 levels the located read reports where."""
    [found] = errors("[" * 70 + "]" * 70 + "\n")
    assert "c.yaml:1:66: nested more than 64 levels deep" == found
