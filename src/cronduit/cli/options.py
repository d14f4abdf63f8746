"""The ``-c/--config FILE`` option every command takes, and reading the file it names; the
``--operator`` and ``--reason`` options, checked as they are parsed.

Which file: ``-c FILE``, else the ``CRONDUIT_CONFIG`` environment variable, else
``./cronduit.yaml``. Reading it is the edge's job; validating it is the core's
(:func:`cronduit.core.config.load_config`), which gets the text and the name to show.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from cronduit.core.config import Config, ConfigErrors, load_config
from cronduit.core.limits import instant_problem
from cronduit.core.text import TextError, check_operator, check_reason

DEFAULT_CONFIG = "cronduit.yaml"
CONFIG_ENV = "CRONDUIT_CONFIG"

F = TypeVar("F", bound=Callable[..., Any])


def resolve_config_path(given: str | None, environ: Mapping[str, str]) -> Path:
    """The config file a command uses: ``-c``, else ``$CRONDUIT_CONFIG``, else the default."""
    if given:
        return Path(given)
    from_env = environ.get(CONFIG_ENV, "").strip()
    return Path(from_env or DEFAULT_CONFIG)


def _resolve(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Path:
    return resolve_config_path(value, os.environ)


def config_option(command: F) -> F:
    """Adds ``-c/--config FILE``; the command receives the resolved ``config_path: Path``."""
    option = click.option(
        "-c",
        "--config",
        "config_path",
        metavar="FILE",
        callback=_resolve,
        help=f"Config file, YAML or JSON [default: ${CONFIG_ENV}, else ./{DEFAULT_CONFIG}].",
    )
    return option(command)


def _checked(rule: Callable[[str, str], str]
             ) -> Callable[[click.Context, click.Parameter, str | None], str | None]:
    """A callback that holds an option's value to ``rule`` (one line of printable text, at
    most so long), refusing a bad one with one line that names the option."""
    def callback(_ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return rule(value, param.opts[0])
        except TextError as error:
            fail(str(error))

    return callback


def operator_option(help_text: str) -> Callable[[F], F]:
    """``--operator NAME``: who asks, under the rule of every operator field
    (:func:`cronduit.core.text.check_operator`); exit 2 naming the rule otherwise."""
    return click.option("--operator", callback=_checked(check_operator), help=help_text)


def reason_option(help_text: str) -> Callable[[F], F]:
    """``--reason TEXT`` (required): why, under :func:`cronduit.core.text.check_reason`."""
    return click.option("--reason", required=True, callback=_checked(check_reason),
                        help=help_text)


def fail(message: str, code: int = 2) -> NoReturn:
    """One line on stderr and exit: the CLI's contract for errors it can name."""
    click.echo(f"cronduit: {message}", err=True)
    sys.exit(code)


def bounded_instant(value: datetime, text: str, option: str) -> datetime:
    """``value`` (aware) in UTC, or exit 2 when it is outside the instants cronduit takes:
    slots searched from it must stay inside the calendar."""
    problem = instant_problem(value)
    if problem is not None:
        fail(f"{option}: {text!r} {problem}")
    return value.astimezone(UTC)


def read_config_text(path: Path) -> str:
    """The file's text; a missing or unreadable file exits 2 with one line naming it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        fail(f"cannot read {path}: no such file (create one with: cronduit init)")
    except IsADirectoryError:
        fail(f"cannot read {path}: it is a directory")
    except OSError as error:
        fail(f"cannot read {path}: {error.strerror or error}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        click.echo(f"{path}:{line}:{column}: not UTF-8 text", err=True)
        sys.exit(2)


def load_config_file(path: Path) -> Config:
    """Read and validate the config; on errors print them all (``FILE:LINE:COL: ...``) and
    exit 2, so every command that needs a config refuses a broken one the same way."""
    return load_config_and_text(path)[0]


def load_config_and_text(path: Path) -> tuple[Config, str]:
    """:func:`load_config_file`, with the text it validated (what the daemon keeps)."""
    text = read_config_text(path)
    try:
        return load_config(text, str(path)), text
    except ConfigErrors as errors:
        refuse_config(errors)


def refuse_config(errors: ConfigErrors) -> NoReturn:
    """Print every error of the file, one ``FILE:LINE:COL: message`` a line, and exit 2."""
    click.echo(str(errors), err=True)
    sys.exit(2)
