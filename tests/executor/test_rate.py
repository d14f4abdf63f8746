"""The bare process start rate the launch rate is compared with."""

from __future__ import annotations

from cronduit.executor import measure_spawn_rate


def test_the_spawn_rate_is_a_positive_rate_measured_quickly() -> None:
    """Even a short measurement starts at least one process and reports per second."""
    assert measure_spawn_rate(0.05) > 0
