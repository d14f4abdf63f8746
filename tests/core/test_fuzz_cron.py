"""Cron expressions, fuzzed: a short run (1,000 cases) of ``tests/fuzzing/cron.py``, of which
``bench/fuzz.py`` runs 30,000. Each expression, in any zone under any DST policy, parses and
has a next slot after any start (cronsim agreeing where it applies), or is refused in one
line."""

from __future__ import annotations

from hypothesis import given, settings

from tests.fuzzing.cron import CronCase, check, cron_cases
from tests.fuzzing.findings import SUITE


@settings(SUITE, max_examples=1000)
@given(cron_cases())
def test_every_expression_has_a_next_slot_or_is_refused_in_one_line(case: CronCase) -> None:
    """Valid, near-valid and random expressions, in every zone, from any start instant."""
    check(case)
