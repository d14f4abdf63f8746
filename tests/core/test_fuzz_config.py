"""The config loader, fuzzed: a short run (1,150 cases) of ``tests/fuzzing/config.py``, of
which ``bench/fuzz.py`` runs 40,000. Every case loads as a config whose engine view
computes, or fails with ``ConfigErrors`` whose every error is one ``FILE:LINE:COL: message``
line inside the text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzzing.config import (
    FILENAMES,
    ConfigCase,
    any_shape,
    check,
    extreme_numbers,
    near_valid,
    nows,
    yaml_soup,
)
from tests.fuzzing.findings import SUITE
from tests.fuzzing.values import deep_json, deep_yaml


def cases(texts: st.SearchStrategy[str]) -> st.SearchStrategy[ConfigCase]:
    return st.builds(ConfigCase, texts, st.sampled_from(FILENAMES), nows)


@settings(SUITE, max_examples=400)
@given(cases(near_valid()))
def test_a_valid_config_changed_field_by_field_loads_or_gives_located_errors(
        case: ConfigCase) -> None:
    """A value of another type or out of every bound, a key dropped, added or misspelt."""
    check(case)


@settings(SUITE, max_examples=250)
@given(cases(extreme_numbers()))
def test_numbers_from_zero_to_far_past_every_bound_never_overflow_the_engine(
        case: ConfigCase) -> None:
    """What check accepts, the engine computes: slots, deadlines, backoffs, windows."""
    check(case)


@settings(SUITE, max_examples=250)
@given(cases(any_shape()))
def test_a_document_of_any_shape_loads_or_gives_located_errors(case: ConfigCase) -> None:
    """Mappings of jobs with random keys and values of every type, in YAML or JSON."""
    check(case)


@settings(SUITE, max_examples=250)
@given(cases(st.one_of(yaml_soup(), st.text(st.characters(codec=None), max_size=200),
                       deep_yaml(), deep_json())))
def test_any_text_and_any_nesting_give_located_errors(case: ConfigCase) -> None:
    """YAML syntax in any order, any characters, nesting far past any file, alias bombs."""
    check(case)
