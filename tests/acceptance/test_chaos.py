"""A minute of cronduit's crash loop (``bench/chaos.py`` is the long form): a daemon under
mixed load SIGKILLed again and again, its supervisor too, then drained and checked."""

from __future__ import annotations

from pathlib import Path

from tests.chaos.harness import Chaos, Plan

PLAN = Plan(kills=16, seed=11, random_kills=4, between=(0.5, 2.5))
"""Twelve kills drawn from a fixed seed, then four from a fresh one (named in the report)."""


def test_sigkills_at_random_points_lose_double_relaunch_and_misrecord_nothing(
    tmp_path: Path,
) -> None:
    """Every accepted trigger runs exactly once and every run's record says how it ended."""
    report = Chaos(tmp_path, PLAN, say=lambda _: None).run()
    found = report.findings
    assert report.ok(), report.text()
    assert f"16 kills, {found.accepted} accepted, 0 lost, 0 doubled, 0 relaunched, " \
           "0 misrecorded" == report.summary()
    assert found.accepted > 50, report.text()
    assert {"success", "failure", "skipped", "timeout"} <= set(found.outcomes), report.text()
    # Runs without an exit status are only those whose supervisor the harness killed itself.
    supervisors_killed = sum(count for kind, count in report.kills.items() if "supervisor" in kind)
    assert supervisors_killed > 0 or not found.unknowable, report.text()
