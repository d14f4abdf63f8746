"""``cronduit check`` and ``cronduit init`` as a user runs them: output, files, exit codes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cronduit.cli import cli
from cronduit.cli.config_commands import template_text
from cronduit.cli.options import resolve_config_path
from cronduit.core.config import load_config

REPO = Path(__file__).parents[2]
EXAMPLE = REPO / "examples" / "cronduit.yaml"
GOOD = "jobs:\n  hello: {run: echo hello, every: 1h}\n"
BAD = "jobs:\n  a: {run: x, timezone: UTC}\n  b: {cron: '0 9 * * *'}\n"


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from an empty folder, so ``./cronduit.yaml`` is the test's own."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CRONDUIT_CONFIG", raising=False)
    return tmp_path


# -- which file --------------------------------------------------------------------------


def test_the_config_path_is_the_option_then_the_environment_then_the_default() -> None:
    """``-c`` wins over ``CRONDUIT_CONFIG``, which wins over ``./cronduit.yaml``."""
    env = {"CRONDUIT_CONFIG": "from-env.yaml"}
    assert [
        Path("given.yaml"),
        Path("from-env.yaml"),
        Path("cronduit.yaml"),
        Path("cronduit.yaml"),
    ] == [
        resolve_config_path("given.yaml", env),
        resolve_config_path(None, env),
        resolve_config_path(None, {}),
        resolve_config_path(None, {"CRONDUIT_CONFIG": " "}),
    ]


# -- check -------------------------------------------------------------------------------


def test_check_prints_a_one_line_summary_and_exits_0(in_tmp: Path) -> None:
    """A valid file: the name, the job count, OK."""
    (in_tmp / "cronduit.yaml").write_text(GOOD)
    assert (0, "cronduit.yaml: 1 job OK\n", "") == run("check")


def test_check_prints_every_error_on_stderr_and_exits_2(in_tmp: Path) -> None:
    """Each error is one FILE:LINE:COL line, sorted, and nothing goes to stdout."""
    (in_tmp / "bad.yaml").write_text(BAD)
    code, out, err = run("check", "-c", "bad.yaml")
    lines = err.splitlines()
    assert (2, "", 2) == (code, out, len(lines))
    assert lines[0].startswith(
        "bad.yaml:2:15: jobs.a: unknown key 'timezone' (did you mean 'time_zone'?)"
    )
    assert "bad.yaml:3:3: jobs.b: needs command or run: what to run" == lines[1]


def test_check_uses_the_config_environment_variable(in_tmp: Path) -> None:
    """``CRONDUIT_CONFIG`` selects the file when ``-c`` is not given."""
    (in_tmp / "other.yaml").write_text(GOOD)
    assert (0, "other.yaml: 1 job OK\n", "") == run("check", env={"CRONDUIT_CONFIG": "other.yaml"})


def test_check_of_a_missing_file_exits_2_naming_it(in_tmp: Path) -> None:
    """One line, the path, and what to do about it."""
    assert (
        2,
        "",
        "cronduit: cannot read nope.yaml: no such file (create one with: cronduit init)\n",
    ) == run("check", "-c", "nope.yaml")


def test_check_of_a_file_that_is_not_utf8_names_the_first_bad_byte(in_tmp: Path) -> None:
    """A Latin-1 file fails at its position, not with a traceback."""
    (in_tmp / "latin.yaml").write_bytes(b"jobs:\n  a: {run: caf\xe9}\n")
    assert (2, "", "latin.yaml:2:15: not UTF-8 text\n") == run("check", "-c", "latin.yaml")


HUGE = """\
settings:
  kept_runs: 1000000000000000000000000000000
jobs:
  tick: {run: ./tick, every: 3000000d}
  long: {run: ./long, timeout: 9999999999999h}
  retried: {run: ./r, retry: {attempts: 3, backoff: 9999999d, max_backoff: 9999999d}}
"""


def test_check_refuses_numbers_past_their_bounds_at_their_place(in_tmp: Path) -> None:
    """Values that once passed check and then crashed the daemon: each refused with
    FILE:LINE:COL, the field and its bound, exit 2, no traceback."""
    (in_tmp / "huge.yaml").write_text(HUGE)
    code, out, err = run("check", "-c", "huge.yaml")
    assert (2, "", [
        "huge.yaml:2:14: settings.kept_runs: must be at most 1000000",
        "huge.yaml:4:30: jobs.tick.every: must be at most 3650d",
        "huge.yaml:5:32: jobs.long.timeout: must be at most 3650d",
        "huge.yaml:6:53: jobs.retried.retry.backoff: must be at most 3650d",
        "huge.yaml:6:76: jobs.retried.retry.max_backoff: must be at most 3650d",
    ]) == (code, out, err.splitlines())


def test_check_accepts_the_example_config() -> None:
    """``examples/cronduit.yaml`` is the daemon's quick-start config; it must stay valid."""
    code, out, err = run("check", "-c", str(EXAMPLE))
    assert (0, f"{EXAMPLE}: 5 jobs OK\n", "") == (code, out, err)


def test_check_as_a_real_process_exits_2_with_errors_on_stderr(tmp_path: Path) -> None:
    """The installed entry point behaves like the in-process one."""
    config = tmp_path / "bad.json"
    config.write_text('{"jobs": {"a": {"run": "x", "every": 60}}}')
    result = subprocess.run(
        [sys.executable, "-m", "cronduit", "check", "-c", str(config)],
        capture_output=True,
        text=True,
        check=False,
    )
    expected = (
        f"{config}:1:38: jobs.a.every: must be a duration such as 30s, 15m, 6h, 1d or 1h30m: "
        "a number alone has no unit\n"
    )
    assert (2, "", expected) == (result.returncode, result.stdout, result.stderr)


# -- init --------------------------------------------------------------------------------


def test_init_writes_the_template_to_cronduit_yaml(in_tmp: Path) -> None:
    """With no argument it writes ./cronduit.yaml and says how to check it."""
    code, out, _ = run("init")
    assert (0, "wrote cronduit.yaml; edit it, then run: cronduit check -c cronduit.yaml\n") == (
        code,
        out,
    )
    assert template_text() == (in_tmp / "cronduit.yaml").read_text()


def test_init_output_passes_check(in_tmp: Path) -> None:
    """What init writes is a valid config, as is."""
    run("init")
    assert (0, "cronduit.yaml: 8 jobs OK\n", "") == run("check")


def test_the_template_with_its_commented_keys_uncommented_passes_check() -> None:
    """The keys shown commented out are valid too, so uncommenting one never breaks a file."""
    uncommented = re.sub(r"(?m)^(\s*)# (\s*[a-z_][a-z0-9_-]*:)", r"\1\2", template_text())
    config = load_config(uncommented, "uncommented.yaml")
    assert ("secrets.env", "API_KEY") == (config.settings.secrets_file, config.settings.api_token)
    assert ["ops"] == list(config.notifiers)


def test_the_template_mentions_every_key() -> None:
    """init is the first documentation a user reads: every config key appears in it (a step's
    own keys only once steps are available; until then the template says they are not)."""
    from cronduit.core.config import Job, Notifier, Settings  # noqa: PLC0415

    keys = {
        *Job.config_keys(),
        *Settings.config_keys(),
        *Notifier.config_keys(),
    }
    keys |= {"events", "branches", "paths", "conclusions", "after", "outcomes", "window", "mode"}
    keys |= {"max_runs", "gap", "fold", "attempts", "backoff", "max_backoff"}
    keys |= {"git", "retain_failed", "enum", "pattern", "default", "description", "max_parallel"}
    text = template_text()
    assert [] == sorted(key for key in keys if not re.search(rf"\b{key}\b", text))


def test_init_refuses_to_overwrite_and_exits_3(in_tmp: Path) -> None:
    """An existing file is left exactly as it was."""
    (in_tmp / "cronduit.yaml").write_text(GOOD)
    assert (3, "", "cronduit: cronduit.yaml already exists; use --force to overwrite it\n") == run(
        "init"
    )
    assert GOOD == (in_tmp / "cronduit.yaml").read_text()


def test_init_force_overwrites(in_tmp: Path) -> None:
    """``--force`` replaces the file with the template."""
    (in_tmp / "cronduit.yaml").write_text(GOOD)
    assert 0 == run("init", "--force")[0]
    assert template_text() == (in_tmp / "cronduit.yaml").read_text()


def test_init_writes_to_the_path_given(in_tmp: Path) -> None:
    """``init PATH`` writes there, and ``check -c PATH`` accepts it."""
    assert 0 == run("init", "ops.yaml")[0]
    assert (0, "ops.yaml: 8 jobs OK\n", "") == run("check", "-c", "ops.yaml")


def test_init_into_a_missing_folder_fails_with_one_line(in_tmp: Path) -> None:
    """A write that cannot happen is a failure of the thing asked: exit 1."""
    code, _, err = run("init", "no/such/dir/cronduit.yaml")
    assert (1, "cronduit: cannot write no/such/dir/cronduit.yaml: No such file or directory\n") == (
        code,
        err,
    )
