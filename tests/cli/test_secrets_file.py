"""A secrets file that cannot be read, through ``serve``, ``doctor`` and ``webhook url``:
one line naming the file (and the line at fault), a non-zero exit, no traceback, and never
a value from the file; a file that does not exist is said to be missing.

``serve`` runs as a subprocess (were it not refused, it would start serving); the others
in-process. An unreadable file needs a reader the permissions apply to: as root, the
command runs without the capabilities that bypass them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from cronduit.cli import cli
from cronduit.core.secrets_file import MAX_SECRETS_FILE

SECRET = "hook-secret-never-shown-4c1d"
CONFIG = """\
settings:
  listen: 127.0.0.1:18201
  state: state
  secrets_file: {file}
  webhook_secret: HOOK_KEY
jobs:
  poke: {{run: "true", webhook: true}}
"""
NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
"""Runs a command as root without the capabilities that let root read any file."""


@dataclass(frozen=True)
class Bad:
    """A secrets file broken one way: how to make it, and what the error says after the
    file's path."""

    make: Callable[[Path], None]
    says: str
    file: str = "secrets.env"


def _unreadable(path: Path) -> None:
    path.write_text(f"HOOK_KEY={SECRET}\n")
    path.chmod(0)


BAD = {
    "not-utf-8": Bad(lambda p: p.write_bytes(f"OTHER=1\nHOOK_KEY={SECRET}\xe9\n".encode(
        "latin-1")), ":2: not UTF-8 text"),
    "nul-byte": Bad(lambda p: p.write_bytes(f"\nHOOK_KEY={SECRET}\x00\n".encode()),
                    ":2: holds a NUL character, which no environment variable can carry"),
    "no-equals": Bad(lambda p: p.write_text(f"# keys\n{SECRET}\n"),
                     ":2: not NAME=value: the line has no '='"),
    "bad-name": Bad(lambda p: p.write_text(f"HOOK KEY={SECRET}\n"),
                    ":1: the name before '=' must be letters, digits and _, not starting "
                    "with a digit"),
    "directory": Bad(lambda p: p.mkdir(),
                     ": cannot read the secrets file: it is a directory, not a file"),
    "fifo": Bad(os.mkfifo, ": cannot read the secrets file: not a regular file (a FIFO, a "
                           "socket or a device)"),
    "device": Bad(lambda p: None, ": cannot read the secrets file: not a regular file (a "
                                  "FIFO, a socket or a device)", file="/dev/zero"),
    "too-large": Bad(lambda p: p.write_bytes(b"HOOK_KEY=" + b"x" * MAX_SECRETS_FILE),
                     ": larger than 1,048,576 bytes: not a secrets file"),
    "unreadable": Bad(_unreadable, ": cannot read the secrets file: Permission denied"),
}


def install(folder: Path, bad: Bad) -> tuple[Path, str]:
    """The config and the broken file it names; the path the error must start with."""
    config = folder / "cronduit.yaml"
    config.write_text(CONFIG.format(file=bad.file))
    path = Path(bad.file) if bad.file.startswith("/") else folder / bad.file
    bad.make(path)
    return config, str(path)


def no_dac_prefix() -> list[str]:
    """What to run an ``unreadable`` case under: nothing, or (as root) :data:`NO_DAC`."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: no reader the permissions apply to")
    return NO_DAC


def run(argv: list[str], *, subprocess_only: bool, prefix: list[str]) -> tuple[int, str, str]:
    """``cronduit ARGV``: its exit status, stdout and stderr."""
    if subprocess_only or prefix:
        env = {**os.environ, "HOOK_KEY": ""}
        done = subprocess.run([*prefix, sys.executable, "-m", "cronduit", *argv],
                              capture_output=True, text=True, timeout=60, check=False, env=env)
        return done.returncode, done.stdout, done.stderr
    result = CliRunner().invoke(cli, argv, env={"HOOK_KEY": ""})
    return result.exit_code, result.stdout, result.stderr


def assert_one_clean_line(text: str, expected: str) -> None:
    assert expected in text.splitlines(), text
    assert "Traceback" not in text
    assert SECRET not in text


@pytest.mark.parametrize("kind", BAD)
def test_serve_refuses_to_start_with_one_line_naming_the_file(tmp_path: Path,
                                                              kind: str) -> None:
    """Exit 2 before anything starts: no state folder is made, no port is taken."""
    config, path = install(tmp_path, BAD[kind])
    prefix = no_dac_prefix() if kind == "unreadable" else []
    code, out, err = run(["serve", "-c", str(config)], subprocess_only=True, prefix=prefix)
    assert (2, "") == (code, out)
    assert_one_clean_line(err, f"cronduit: {path}{BAD[kind].says}")
    assert 1 == len(err.splitlines())
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize("kind", BAD)
def test_webhook_url_exits_2_with_one_line_naming_the_file(tmp_path: Path, kind: str) -> None:
    config, path = install(tmp_path, BAD[kind])
    prefix = no_dac_prefix() if kind == "unreadable" else []
    code, out, err = run(["webhook", "url", "poke", "-c", str(config)], subprocess_only=False,
                         prefix=prefix)
    assert (2, "") == (code, out)
    assert_one_clean_line(err, f"cronduit: {path}{BAD[kind].says}")
    assert 1 == len(err.splitlines())


@pytest.mark.parametrize("kind", BAD)
def test_doctor_reports_the_file_as_a_problem_and_exits_1(tmp_path: Path, kind: str) -> None:
    """One warning line naming the file and the line; the rest of the report still comes,
    checked against the environment's secrets."""
    config, path = install(tmp_path, BAD[kind])
    prefix = no_dac_prefix() if kind == "unreadable" else []
    code, out, err = run(["doctor", "-c", str(config)], subprocess_only=False, prefix=prefix)
    assert 1 == code, out + err
    assert_one_clean_line(out, f"warning: {path}{BAD[kind].says}")
    assert "poke: webhook POST /hooks/poke/<token>" in out
    assert SECRET not in err


def test_a_missing_secrets_file_is_named_by_doctor_and_webhook_url(tmp_path: Path) -> None:
    """Not an error (the environment may hold the secrets), but a mistyped path looks just
    like it, so both say the file does not exist."""
    config = tmp_path / "cronduit.yaml"
    config.write_text(CONFIG.format(file="secrets.env"))
    missing = (f"settings.secrets_file names {tmp_path / 'secrets.env'}, which does not "
               "exist: secrets are read from the environment only")
    code, out, _ = run(["doctor", "-c", str(config)], subprocess_only=False, prefix=[])
    assert 1 == code
    assert f"warning: {missing}" in out.splitlines()
    code, _, err = run(["webhook", "url", "poke", "-c", str(config)], subprocess_only=False,
                       prefix=[])
    assert 1 == code
    assert err.rstrip("\n").endswith(f"; {missing}")
    result = CliRunner().invoke(cli, ["webhook", "url", "poke", "-c", str(config)],
                                env={"HOOK_KEY": SECRET})
    assert 0 == result.exit_code  # the environment alone is enough
