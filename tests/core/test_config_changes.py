"""What ``cronduit apply`` says an edit changes: jobs, notifiers and settings, one line each."""

from __future__ import annotations

from textwrap import dedent

import pytest

from cronduit.core.config.changes import config_changes
from cronduit.core.config.loader import load_config
from cronduit.core.config.model import Config, Settings

BASE = """\
    settings: {timeout: 1h, webhook_secret: HOOK}
    notifiers:
      ops: {url: "https://hooks.example/ops"}
    jobs:
      nightly: {run: ./nightly, cron: "0 3 * * *"}
      hook: {run: ./hook, webhook: true}
"""


def load(text: str) -> Config:
    return load_config(dedent(text), "c.yaml")


def edited(old: str, new: str) -> list[str]:
    """The lines an apply prints going from ``BASE`` to ``BASE`` with ``old`` made ``new``."""
    assert old in BASE
    return config_changes(load(BASE), load(BASE.replace(old, new)))


def test_an_unchanged_config_changes_nothing() -> None:
    """Loaded twice from the same text, or with the same values spelled another way."""
    respelled = BASE.replace("1h", "60m").replace("run: ./nightly", 'run: "./nightly"')
    assert [[], []] == [config_changes(load(BASE), load(BASE)),
                        config_changes(load(BASE), load(respelled))]


def test_a_job_added_and_a_job_removed_are_named() -> None:
    new = BASE.replace("      hook: {run: ./hook, webhook: true}\n",
                       "      weekly: {run: ./weekly, cron: \"0 4 * * 1\"}\n")
    assert ["weekly: added", "hook: removed"] == config_changes(load(BASE), load(new))


@pytest.mark.parametrize(("old", "new"), [
    ('"0 3 * * *"', '"0 4 * * *"'),
    ("{run: ./nightly,", "{run: ./nightly, env: {A: b},"),
    ("{run: ./nightly,", "{run: ./nightly, retry: {attempts: 2},"),
])
def test_any_edit_of_a_job_is_one_changed_line(old: str, new: str) -> None:
    """Timing or not: the apply says the job changed (re-arming is the engine's business)."""
    assert ["nightly: changed"] == edited(old, new)


def test_an_inherited_setting_changes_the_jobs_that_inherit_it_too() -> None:
    """Jobs take ``timeout`` from the settings as they are loaded, so both have changed."""
    assert ["nightly: changed", "hook: changed", "settings.timeout: changed"] == (
        edited("timeout: 1h", "timeout: 2h"))


OPS = '      ops: {url: "https://hooks.example/ops"}\n'


@pytest.mark.parametrize(("old", "new", "line"), [
    (OPS, OPS.replace("}", ", on: [failure]}"), "notifiers.ops: changed"),
    (OPS, OPS + '      team: {url: "https://hooks.example/team"}\n', "notifiers.team: added"),
    ("    notifiers:\n" + OPS, "", "notifiers.ops: removed"),
])
def test_a_notifier_added_removed_or_edited_is_named(old: str, new: str, line: str) -> None:
    assert [line] == edited(old, new)


@pytest.mark.parametrize(("setting", "line"), [
    ("kept_runs: 5", "settings.kept_runs: changed"),
    ("max_log: 2MiB", "settings.max_log: changed"),
    ("github_secret: GH", "settings.github_secret: changed"),
    ("state: elsewhere", "settings.state: changed (takes effect at the next restart)"),
    ("listen: 127.0.0.1:9999", "settings.listen: changed (takes effect at the next restart)"),
])
def test_a_setting_says_whether_it_takes_effect_now_or_at_the_next_restart(
    setting: str, line: str,
) -> None:
    """``state`` and ``listen`` are what a running daemon has open: they wait for a restart."""
    assert [line] == edited("timeout: 1h", f"timeout: 1h, {setting}")


def test_every_setting_is_compared() -> None:
    """A setting added to the model is reported without anyone adding it to a list."""
    changes = config_changes(load(BASE), load(BASE.replace(
        "timeout: 1h", "timeout: 1h, kept_runs: 5, api_token: API, github_token: GH")))
    assert ["settings.api_token: changed", "settings.github_token: changed",
            "settings.kept_runs: changed"] == changes
    assert {"state", "listen"} < set(Settings.model_fields)
