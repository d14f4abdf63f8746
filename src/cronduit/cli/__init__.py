"""The ``cronduit`` command: one small module per command group, registered here.

Exit codes scripts can rely on: 0 success, 1 failure of the thing asked about, 2 bad input
(usage, config or expression errors), 3 refused (for example a run already going).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import click

from cronduit import __version__
from cronduit.cli import (
    audit_commands,
    backfill_commands,  # noqa: F401  (registers ``job backfill`` on the job group)
    config_commands,
    copy_commands,
    cron_commands,
    daemon_commands,
    doctor_commands,
    execution_commands,
    job_commands,
    state_commands,
    webhook_commands,
)
from cronduit.core.text import clean
from cronduit.faults import reason_of


class _UsageError(click.UsageError):
    """A usage error said in one line, as every other error of the CLI is (exit 2)."""

    def show(self, file: IO[Any] | None = None) -> None:
        where = f"; see '{self.ctx.command_path} --help'" if self.ctx is not None else ""
        message = self.format_message().rstrip(".")
        click.echo(f"cronduit: {message}{where}", file=file, err=file is None)


class _Cli(click.Group):
    """The root command: a usage error anywhere below it (a bad option, a number out of its
    range) is told in one line, not click's usage block."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _one_line():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        with _one_line():
            return super().invoke(ctx)


class _StateFault(click.ClickException):
    """The state folder or store could not be read or written (a full or read-only disk, an
    I/O error): one line naming what failed, exit 1, never a traceback."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"cronduit: {self.format_message()}", file=file, err=file is None)


@contextmanager
def _one_line() -> Iterator[None]:
    try:
        yield
    except _UsageError:
        raise
    except click.UsageError as error:
        raise _UsageError(error.format_message(), error.ctx) from None
    except (click.ClickException, click.exceptions.Exit, click.Abort):
        raise
    except Exception as error:
        reason = reason_of(error)
        if reason is None:
            raise
        raise _StateFault(_fault_line(error, reason)) from None


def _fault_line(error: Exception, reason: str) -> str:
    if isinstance(error, OSError):
        where = f": {clean(str(error.filename))}" if error.filename is not None else ""
        return f"{reason}{where}"
    return f"the state store cannot be used: {reason}"


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cronduit")
def cli() -> None:
    """cronduit: a durable job scheduler."""


cli.add_command(cron_commands.cron)
for command in (
    *config_commands.COMMANDS,
    *daemon_commands.COMMANDS,
    *state_commands.COMMANDS,
    *copy_commands.COMMANDS,
    *job_commands.COMMANDS,
    *execution_commands.COMMANDS,
    *webhook_commands.COMMANDS,
    *doctor_commands.COMMANDS,
    *audit_commands.COMMANDS,
):
    cli.add_command(command)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="cronduit")
