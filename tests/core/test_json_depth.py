"""Measuring a JSON text's nesting before parsing it: exact on valid JSON, never below what
a parser would reach on any other text, and cheap on hostile input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronduit.core.json_depth import (
    MAX_JSON_DEPTH,
    JsonTooDeep,
    check_json_depth,
    json_depth,
    loads,
)
from tests.core.strategies import json_texts, json_values


def depth_of(value: object) -> int:
    """The nesting of a parsed value, the definition the scan must agree with."""
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    return 0


def nested(depth: int, inner: str = "") -> str:
    return "[" * depth + inner + "]" * depth


@pytest.mark.parametrize(("text", "depth"), [
    ("1", 0), ('"[[["', 0), ("[]", 1), ('{"a": 1}', 1), ("[[]]", 2),
    ('{"a": [1, {"b": "[[{{"}]}', 3), ('["\\"[", ["\\\\"]]', 2), ("[[[", 3), ("]][[", 0),
    ("", 0),
])
def test_the_depth_counts_brackets_outside_strings(text: str, depth: int) -> None:
    """Escaped quotes do not end a string; an escaped backslash before a quote does."""
    assert depth == json_depth(text)


@given(json_texts())
def test_on_valid_json_the_scan_agrees_with_the_parsed_value(text: str) -> None:
    """Whatever the spelling (indent, escapes, brackets and quotes inside strings)."""
    assert depth_of(json.loads(text)) == json_depth(text)


@given(json_values(), st.integers(min_value=0, max_value=80))
def test_wrapping_a_value_adds_exactly_its_levels(value: object, levels: int) -> None:
    """Nesting any document in ``levels`` more arrays deepens it by that much."""
    text = json.dumps(value)
    assert json_depth(text) + levels == json_depth(nested(levels, text))


def open_levels(text: str) -> list[int]:
    """The levels open after each character, read one at a time as a parser tokenizes
    strings: the slow, obvious reference for the scan on any text at all."""
    levels, depth, in_string, escaped = [0], 0, False, False
    for char in text:
        if escaped:
            escaped = False
        elif in_string:
            escaped, in_string = char == "\\", char != '"'
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        levels.append(depth)
    return levels


@given(st.text(alphabet=st.sampled_from('[]{}"\\ ax\n'), max_size=60))
def test_on_any_text_the_scan_is_the_deepest_level_a_tokenizer_opens(text: str) -> None:
    """Not JSON at all (unbalanced, an unterminated string, a trailing backslash): the
    scan still reads strings as a parser does, so it is the deepest level ever open."""
    assert max(open_levels(text)) == json_depth(text)


@given(json_texts(), st.data())
def test_whatever_follows_a_valid_start_the_scan_is_at_least_as_deep_as_it(
        text: str, data: st.DataObject) -> None:
    """A parser descends as far as the valid start of a text takes it before it meets
    anything else; the scan of the whole text is never shallower, so a text that passes
    the check cannot take a parser past the limit."""
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    junk = data.draw(st.text(max_size=10))
    assert json_depth(text[:cut] + junk) >= open_levels(text)[cut]


def test_at_the_limit_a_document_passes_and_one_level_more_is_refused() -> None:
    check_json_depth(nested(MAX_JSON_DEPTH), "body")
    with pytest.raises(JsonTooDeep) as refused:
        check_json_depth(nested(MAX_JSON_DEPTH + 1), "body")
    assert ("body: JSON nested more than 64 levels deep (arrays and objects inside one "
            "another); at most 64 are read") == str(refused.value)


def test_a_deep_text_is_refused_before_parsing_and_never_as_a_recursion_error() -> None:
    """100,000 levels: what made ``json.loads`` raise RecursionError is a ValueError."""
    with pytest.raises(JsonTooDeep):
        loads(nested(100_000).encode(), "body")
    with pytest.raises(JsonTooDeep):
        loads('{"a": ' + "[" * 100_000, "body")  # cut short: the parser would recurse too


@pytest.mark.parametrize("text", [
    "a[" * 100, "12 " + "[" * 100, '"x"' + "[" * 100, "[INFO] start " + "a[" * 100])
def test_a_text_that_does_not_open_an_array_or_object_passes_whatever_it_holds(
        text: str) -> None:
    """A parser stops at the first thing after a scalar, so such a text cannot take it
    down; the one that opens with ``[`` and nests deeper (the last) is refused."""
    if text.startswith("["):
        with pytest.raises(JsonTooDeep):
            check_json_depth(text, "body")
    else:
        check_json_depth(text, "body")


def test_brackets_inside_strings_are_not_nesting() -> None:
    """A body full of brackets inside one string is one level deep and parses."""
    text = json.dumps({"log": "[" * 100_000})
    assert {"log": "[" * 100_000} == loads(text, "body")


def test_an_unterminated_string_with_escapes_costs_one_pass() -> None:
    """No backtracking: a quote followed by a million escaped quotes is measured at once."""
    assert 0 == json_depth('"' + '\\"' * 1_000_000)
    assert 1 == json_depth('["' + '\\"[' * 1_000_000)


def test_loads_reads_bytes_as_json_does_utf_16_included() -> None:
    """The scan measures the decoded text, so an encoding cannot hide the brackets."""
    deep = nested(MAX_JSON_DEPTH + 1).encode("utf-16")
    with pytest.raises(JsonTooDeep):
        loads(deep, "body")
    assert {"a": [1]} == loads('{"a": [1]}'.encode("utf-32"), "body")


@pytest.mark.parametrize("text", [b"", b"{", b"\xff\xfe\xfa", "[1,]", '{"a" 1}'])
def test_loads_raises_value_error_for_what_is_not_json(text: bytes | str) -> None:
    with pytest.raises(ValueError, match=r"\w") as refused:
        loads(text, "body")
    assert not isinstance(refused.value, JsonTooDeep)
