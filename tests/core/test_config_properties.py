"""Properties of loading any text at all: a Config or located errors, nothing else."""

from __future__ import annotations

import json
import re

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cronduit.core.config import (
    AfterSpec,
    CatchUp,
    ConfigErrors,
    Durable,
    Job,
    Notifier,
    OnSpec,
    OverlapSpec,
    Retry,
    Settings,
    Step,
    Workspace,
    load_config,
)

ERROR_LINE = re.compile(r"c\.(yaml|json):[1-9][0-9]*:[1-9][0-9]*: \S[^\n]*")

# The config's own words, so that random documents reach deep into validation.
MODELS = (Settings, Notifier, Job, Step, CatchUp, OverlapSpec, Retry, OnSpec, AfterSpec, Durable)
KEYS = sorted(
    {key for model in (*MODELS, Workspace) for key in model.config_keys()}
    | {"settings", "jobs", "notifiers", "gap", "fold", "enum", "pattern", "a", "b", "TOKEN"}
)
WORDS = (  # noqa: SIM905 - a word list reads best as one line of text
    "0 9 * * *|*/5 * * * *|TZ=UTC 0 0 * * *|1h|30s|0s|60|12:30|24:00|Europe/London|Nope/Zone|"
    "queue|skip|allow|failure|success|timed_out|push|main|!x|src/**|true|x|b.X|a|[0-9]+|"
    "https://h.example/x|127.0.0.1:8770|postgresql://db|json|slack|run|once|twice|all|latest"
).split("|")

scalars = st.one_of(
    st.sampled_from(WORDS),
    st.integers(-2, 100_000),
    st.booleans(),
    st.none(),
    st.text(max_size=8),
)
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), children, max_size=6),
    ),
    max_leaves=40,
)


def error_lines(text: str, filename: str) -> tuple[list[str], int]:
    """The printed error lines of loading ``text`` and how many errors; none when it loads."""
    try:
        load_config(text, filename)
    except ConfigErrors as errors:
        return str(errors).split("\n"), len(errors.errors)
    return [], 0


def assert_loads_or_reports(text: str, filename: str) -> None:
    lines, count = error_lines(text, filename)
    assert [] == [line for line in lines if not ERROR_LINE.fullmatch(line)]
    assert count == len(lines)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_loads_or_gives_located_one_line_errors(text: str) -> None:
    """No text makes the loader raise anything but ConfigErrors, or print a malformed line."""
    assert_loads_or_reports(text, "c.yaml")


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(("settings", "jobs", "notifiers")), documents, max_size=3))
def test_any_document_in_config_words_loads_or_gives_located_errors(document: object) -> None:
    """Random structures built from the config's vocabulary exercise every validator safely."""
    assert_loads_or_reports(yaml.safe_dump(document), "c.yaml")
    assert_loads_or_reports(json.dumps(document, indent=1), "c.json")
