"""Input declarations and values (SPEC §7): the rules, their messages, and the merge."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronduit.core.inputs import (
    MAX_VALUE_BYTES,
    InputError,
    InputSpec,
    declaration_errors,
    resolve_inputs,
    value_error,
)

SOURCE = InputSpec("SOURCE", ("catalog", "prices", "reviews"), None, "catalog")
SINCE = InputSpec("SINCE", None, r"\d{4}-\d{2}-\d{2}", "2026-01-01", "first day to import")
FREE = InputSpec("FREE", None, r".*", "")
SPECS = {"SOURCE": SOURCE, "SINCE": SINCE}


# --- value rules -------------------------------------------------------------------------


def test_an_enum_member_is_accepted() -> None:
    """A value listed in the enum passes."""
    assert value_error(SOURCE, "prices") is None


def test_a_value_outside_the_enum_is_refused_naming_the_choices() -> None:
    """The message lists the allowed values so the caller can pick one."""
    expected = "input SOURCE: must be one of catalog, prices, reviews"
    assert expected == value_error(SOURCE, "x")


def test_enum_membership_is_exact() -> None:
    """Case and surrounding spaces count: ``Prices`` is not ``prices``."""
    assert value_error(SOURCE, "Prices") is not None
    assert value_error(SOURCE, " prices") is not None


def test_a_value_matching_the_whole_pattern_is_accepted() -> None:
    """A date matches the date pattern."""
    assert value_error(SINCE, "2026-03-29") is None


def test_a_value_matching_only_part_of_the_pattern_is_refused() -> None:
    """The pattern must match the whole value, not a prefix or a substring."""
    expected = r"input SINCE: must match the whole pattern \d{4}-\d{2}-\d{2}"
    assert expected == value_error(SINCE, "2026-03-29; rm -rf /")
    assert expected == value_error(SINCE, "x2026-03-29")


def test_an_unanchored_pattern_still_matches_the_whole_value() -> None:
    """``[a-z]+`` refuses ``abc1`` even though ``re.match`` would accept its prefix."""
    spec = InputSpec("WORD", None, "[a-z]+", "a")
    assert value_error(spec, "abc1") is not None
    assert value_error(spec, "abc") is None


def test_a_double_quote_is_refused() -> None:
    """A quote could break out of a quoted shell word or a JSON string built by hand."""
    expected = "input FREE: must not contain a double quote"
    assert expected == value_error(FREE, 'say "hi"')


def test_a_backslash_is_refused() -> None:
    """A backslash could escape whatever follows it in a shell line."""
    expected = "input FREE: must not contain a backslash"
    assert expected == value_error(FREE, "a\\b")


@pytest.mark.parametrize(
    "char",
    ["\x00", "\t", "\n", "\r", "\x1b", "\x1f", "\x7f", "\x80", "\x85", "\x9f"],
    ids=["NUL", "TAB", "LF", "CR", "ESC", "US", "DEL", "PAD", "NEL", "APC"],
)
def test_every_control_character_class_is_refused(char: str) -> None:
    """C0 controls (tab and newline included), DEL and the C1 controls are all refused."""
    expected = "input FREE: must not contain a control character"
    assert expected == value_error(FREE, f"a{char}b")


@pytest.mark.parametrize("char", [" ", "~", "\xa0", "é", "€", "😀"])
def test_printable_characters_next_to_the_control_ranges_are_accepted(char: str) -> None:
    """Space, tilde, no-break space and other printable text are ordinary characters."""
    assert value_error(FREE, f"a{char}b") is None


def test_a_value_of_exactly_256_bytes_is_accepted() -> None:
    """The limit is inclusive."""
    assert value_error(FREE, "a" * MAX_VALUE_BYTES) is None


def test_a_value_of_257_bytes_is_refused() -> None:
    """One byte over the limit is refused, and the message gives the size, not the value."""
    expected = "input FREE: must be at most 256 bytes in UTF-8 (it has 257)"
    assert expected == value_error(FREE, "a" * 257)


def test_the_limit_counts_utf8_bytes_not_characters() -> None:
    """128 two-byte characters fit exactly; one more ASCII character does not."""
    assert value_error(FREE, "é" * 128) is None
    assert value_error(FREE, "é" * 128 + "a") is not None
    assert value_error(FREE, "😀" * 64) is None
    assert value_error(FREE, "😀" * 65) is not None


def test_a_lone_surrogate_is_refused() -> None:
    """A JSON body can carry ``\\ud800``, which is not text and cannot be put in a variable."""
    message = value_error(FREE, "a\ud800")
    assert message is not None
    assert message.startswith("input FREE: must be valid Unicode text")


def test_the_empty_string_is_a_value_like_any_other() -> None:
    """An empty value passes when the pattern allows it."""
    assert value_error(FREE, "") is None


def test_a_message_never_contains_the_value() -> None:
    """Values may be secrets pasted by mistake, and messages reach logs and HTTP responses."""
    secret = "ghp_s3cr3t-token"
    for spec, value in [
        (SOURCE, secret),
        (SINCE, secret),
        (FREE, secret + '"'),
        (FREE, secret + "\n"),
        (FREE, secret * 20),
    ]:
        message = value_error(spec, value)
        assert message is not None
        assert secret not in message


@given(st.text())
def test_any_accepted_value_is_short_and_free_of_quotes_backslashes_and_controls(
    value: str,
) -> None:
    """Whatever passes the value rules is safe to hand to a process environment."""
    if value_error(FREE, value) is None:
        assert len(value.encode("utf-8")) <= MAX_VALUE_BYTES
        assert '"' not in value
        assert "\\" not in value
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value)


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_characters='"\\'), max_size=64))
def test_printable_short_values_are_accepted(value: str) -> None:
    """The rules refuse only what they name: a short value without those characters passes."""
    printable = "".join(c for c in value if not (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F))
    assert value_error(FREE, printable) is None


# --- declarations ------------------------------------------------------------------------


def test_a_valid_enum_declaration_has_no_errors() -> None:
    """An upper-case name, an enum of plain values and a default from it pass."""
    expected: list[str] = []
    assert expected == declaration_errors("SOURCE", ["catalog", "prices"], None, "catalog", ["TZ"])


def test_a_valid_pattern_declaration_has_no_errors() -> None:
    """A compiling pattern with a default it matches passes."""
    expected: list[str] = []
    assert expected == declaration_errors("SINCE", None, r"\d{4}", "2026", [])


@pytest.mark.parametrize("name", ["source", "Source", "1ST", "MY-INPUT", "", "É"])
def test_a_name_that_is_not_an_upper_case_identifier_is_refused(name: str) -> None:
    """Names become environment variables, so they follow the shell's upper-case convention."""
    expected = ["name must be an upper-case identifier ([A-Z_][A-Z0-9_]*)"]
    assert expected == declaration_errors(name, ["a"], None, "a", [])


@pytest.mark.parametrize("name", ["_", "_PRIVATE", "A1", "CRONDUIT"])
def test_upper_case_identifiers_are_accepted_as_names(name: str) -> None:
    """A leading underscore and digits after the first character are fine."""
    expected: list[str] = []
    assert expected == declaration_errors(name, ["a"], None, "a", [])


def test_a_name_in_the_cronduit_namespace_is_refused() -> None:
    """``CRONDUIT_*`` variables are set by cronduit itself for every run."""
    expected = ["name must not start with CRONDUIT_: cronduit sets those itself"]
    assert expected == declaration_errors("CRONDUIT_JOB", ["a"], None, "a", [])


def test_a_name_repeating_an_env_key_is_refused() -> None:
    """An input and an ``env`` entry of the same name would give the variable two values."""
    expected = ["name repeats a key of env: the variable would have two values"]
    assert expected == declaration_errors("REGION", ["eu"], None, "eu", ["REGION", "TZ"])


def test_both_enum_and_pattern_are_refused() -> None:
    """Exactly one rule decides a value."""
    expected = ["give exactly one of enum or pattern, not both"]
    assert expected == declaration_errors("A", ["x"], "x", "x", [])


def test_neither_enum_nor_pattern_is_refused() -> None:
    """An input with no rule would accept anything the value rules allow, by accident."""
    expected = ["give exactly one of enum or pattern"]
    assert expected == declaration_errors("A", None, None, "x", [])


def test_an_empty_enum_is_refused() -> None:
    """An enum with no values could never be satisfied, not even by its default."""
    expected = ["enum must list at least one value"]
    assert expected == declaration_errors("A", [], None, "x", [])


def test_a_repeated_enum_value_is_refused() -> None:
    """A duplicate is almost always a copy-paste slip hiding the value meant."""
    expected = ["enum value 3 repeats enum value 1"]
    assert expected == declaration_errors("A", ["x", "y", "x"], None, "x", [])


def test_enum_values_obey_the_value_rules() -> None:
    """A choice that could never be given is refused at load, not at the first run."""
    expected = [
        "enum value 2: must not contain a double quote",
        "enum value 3: must not contain a control character",
        "enum value 4: must be at most 256 bytes in UTF-8 (it has 300)",
    ]
    assert expected == declaration_errors("A", ["x", 'y"', "z\n", "w" * 300], None, "x", [])


def test_a_non_string_enum_value_is_refused() -> None:
    """YAML turns ``[1, yes]`` into a number and a boolean; inputs are strings."""
    expected = [
        "enum value 1 must be a string (quote it in YAML)",
        "enum value 2 must be a string (quote it in YAML)",
    ]
    assert expected == declaration_errors("A", [1, True, "x"], None, "x", [])  # type: ignore[list-item]


def test_a_non_string_enum_value_and_a_default_outside_the_enum_are_both_refused() -> None:
    """The default is checked against the enum's strings only; the others are refused on
    their own (found by fuzzing: joining them into the message raised a TypeError)."""
    expected = ["enum value 1 must be a string (quote it in YAML)",
                "enum value 2 must be a string (quote it in YAML)", "default must be one of x"]
    assert expected == declaration_errors("A", [1, {"a": 1}, "x"], None, "y",  # type: ignore[list-item]
                                          [])


def test_a_pattern_that_does_not_compile_is_refused() -> None:
    """A broken pattern would refuse every value; the message carries ``re``'s reason."""
    errors = declaration_errors("A", None, "(unclosed", "x", [])
    [message] = errors
    assert message.startswith("pattern is not a valid regular expression: missing )")


def test_a_pattern_too_large_for_re_is_refused_not_raised() -> None:
    """``re`` raises OverflowError for huge repeat counts; that is a config error too."""
    errors = declaration_errors("A", None, "a{99999999999}", "a", [])
    [message] = errors
    assert message.startswith("pattern is not a valid regular expression")


def test_a_default_outside_the_enum_is_refused_without_echoing_it() -> None:
    """Timer firings use the default, so it must be one of the choices."""
    expected = ["default must be one of catalog, prices"]
    assert expected == declaration_errors("A", ["catalog", "prices"], None, "hunter2", [])


def test_a_default_not_matching_the_whole_pattern_is_refused() -> None:
    """The default obeys the same full-match rule as any other value."""
    expected = [r"default must match the whole pattern \d{4}"]
    assert expected == declaration_errors("A", None, r"\d{4}", "20261", [])


def test_a_default_breaking_a_value_rule_is_refused_without_echoing_it() -> None:
    """The default obeys the value rules; the message names the rule, never the value."""
    errors = declaration_errors("A", None, ".*", 'hunter2"', [])
    expected = ["default must not contain a double quote"]
    assert expected == errors
    assert not any("hunter2" in error for error in errors)


def test_a_missing_default_is_refused() -> None:
    """Timer firings need a value for every input."""
    expected = ["default is required (a string): timer firings run with the defaults"]
    assert expected == declaration_errors("A", ["x"], None, None, [])


def test_a_non_string_default_is_refused() -> None:
    """YAML reads ``default: 5`` as a number; the message says to quote it."""
    expected = ["default must be a string (quote it in YAML)"]
    assert expected == declaration_errors("A", None, r"\d", 5, [])


def test_every_declaration_error_is_reported_at_once() -> None:
    """A config is fixed in one pass when all its errors are listed together."""
    errors = declaration_errors("CRONDUIT_X", ["a", "a"], "(", 7, ["CRONDUIT_X"])
    expected = [
        "name must not start with CRONDUIT_",
        "name repeats a key of env",
        "give exactly one of enum or pattern, not both",
        "enum value 2 repeats enum value 1",
        "pattern is not a valid regular expression",
        "default must be a string",
    ]
    assert expected == [error[: len(rule)] for error, rule in zip(errors, expected, strict=True)]


def test_an_input_spec_refuses_an_invalid_declaration() -> None:
    """A spec that exists is valid, so the loop never meets a broken one."""
    with pytest.raises(ValueError, match=re.escape("input A: default must be one of x")):
        InputSpec("A", ("x",), None, "y")


# --- resolving the values of a run -------------------------------------------------------


def test_timer_firings_get_every_default() -> None:
    """With nothing given, each input takes its default."""
    expected = {"SOURCE": "catalog", "SINCE": "2026-01-01"}
    assert expected == resolve_inputs(SPECS, {})


def test_given_values_override_the_defaults() -> None:
    """A manual run or webhook overrides some inputs and keeps the other defaults."""
    expected = {"SOURCE": "reviews", "SINCE": "2026-01-01"}
    assert expected == resolve_inputs(SPECS, {"SOURCE": "reviews"})


def test_a_job_without_inputs_resolves_to_nothing() -> None:
    """No declarations and nothing given is an empty environment addition."""
    expected: dict[str, str] = {}
    assert expected == resolve_inputs({}, {})


def test_an_unknown_input_is_refused_listing_the_declared_ones() -> None:
    """A typo in an input name must not be silently ignored."""
    with pytest.raises(InputError) as caught:
        resolve_inputs(SPECS, {"SORCE": "prices"})
    expected = ["unknown input SORCE (declared: SOURCE, SINCE)"]
    assert expected == caught.value.messages


def test_an_input_given_to_a_job_without_inputs_says_so() -> None:
    """The message explains that the job declares none, rather than listing nothing."""
    with pytest.raises(InputError) as caught:
        resolve_inputs({}, {"X": "1"})
    expected = ["unknown input X (declared: none: this job declares no inputs)"]
    assert expected == (caught.value.messages)


def test_an_unknown_name_that_is_not_an_identifier_is_shown_escaped_and_short() -> None:
    """Names from a request body could hold controls or be huge; messages stay one short line."""
    with pytest.raises(InputError) as caught:
        resolve_inputs(SPECS, {"bad\nname" * 100: "1"})
    message = caught.value.messages[0]
    assert "\n" not in message
    assert len(message) < 120


def test_every_problem_is_reported_at_once() -> None:
    """Unknown names and invalid values are listed together, each naming its input."""
    with pytest.raises(InputError) as caught:
        resolve_inputs(SPECS, {"SOURCE": "x", "SINCE": "yesterday", "EXTRA": "1"})
    expected = [
        "unknown input EXTRA (declared: SOURCE, SINCE)",
        "input SOURCE: must be one of catalog, prices, reviews",
        r"input SINCE: must match the whole pattern \d{4}-\d{2}-\d{2}",
    ]
    assert expected == caught.value.messages
    assert "; ".join(expected) == str(caught.value)


def test_a_non_string_value_is_refused() -> None:
    """JSON bodies may carry numbers; inputs are strings and are not coerced."""
    with pytest.raises(InputError) as caught:
        resolve_inputs(SPECS, {"SOURCE": 5})  # type: ignore[dict-item]
    expected = ["input SOURCE: must be a string"]
    assert expected == caught.value.messages
