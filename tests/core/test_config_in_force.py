"""Which config a command goes by: the file, or the one the daemon applied."""

from __future__ import annotations

import pytest

from cronduit.core.config import Config, ConfigErrors, load_config
from cronduit.core.config.in_force import Applied, InForce, config_in_force

APPLIED_TEXT = "jobs:\n  a: {run: x, every: 1h}\n"
EDITED_TEXT = "jobs:\n  a: {run: x, every: 1h}\n  b: {run: y}\n"


def config(text: str) -> Config:
    return load_config(text, "c.yaml")


def broken() -> ConfigErrors:
    with pytest.raises(ConfigErrors) as caught:
        config("jobs:\n  a: {run: x, every: soon}\n  b: {run: y, cron: nope}\n")
    return caught.value


APPLIED = Applied(config(APPLIED_TEXT), "2026-12-01T10:00:00Z")


def test_a_file_that_does_not_validate_gives_way_to_the_applied_config_with_a_warning() -> None:
    """A half-edited file does not stop the read commands: they show what the daemon runs."""
    for running in (True, False):
        found = config_in_force(broken(), APPLIED, running, "c.yaml")
        assert InForce(APPLIED.config,
                       "c.yaml differs from the config the daemon applied "
                       "(2026-12-01T10:00:00Z) and does not validate (2 errors: cronduit "
                       "check -c c.yaml); showing the applied config") == found


def test_a_broken_file_with_nothing_applied_leaves_nothing_in_force() -> None:
    """No daemon ever ran on this state: the file's errors are all there is to say."""
    assert config_in_force(broken(), None, False, "c.yaml") is None


def test_while_a_daemon_runs_an_edited_file_is_only_a_warning() -> None:
    """The daemon runs what it applied, not the file: the commands say so and show that."""
    found = config_in_force(config(EDITED_TEXT), APPLIED, True, "c.yaml")
    assert found is not None
    assert (APPLIED.config, True) == (found.config, "cronduit apply" in (found.warning or ""))


def test_with_no_daemon_running_a_valid_file_is_in_force() -> None:
    """The next start applies the file, so it is what counts."""
    edited = config(EDITED_TEXT)
    assert InForce(edited) == config_in_force(edited, APPLIED, False, "c.yaml")


def test_a_file_equal_to_the_applied_one_says_nothing_whatever_its_name() -> None:
    """Comments, spelling and the path it was read from do not make a difference."""
    same = load_config("# a comment\njobs: {a: {every: 60m, run: x}}\n", "other.yaml")
    assert InForce(same) == config_in_force(same, APPLIED, True, "other.yaml")
