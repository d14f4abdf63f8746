"""The ``cronduit`` command: one small module per command group, registered here.

Exit codes scripts can rely on: 0 success, 1 failure of the thing asked about, 2 bad input
(usage, config or expression errors), 3 refused (for example a run already going).
"""

from __future__ import annotations

import click

from cronduit import __version__
from cronduit.cli import (
    audit_commands,
    backfill_commands,  # noqa: F401  (registers ``job backfill`` on the job group)
    config_commands,
    cron_commands,
    daemon_commands,
    doctor_commands,
    job_commands,
    state_commands,
    webhook_commands,
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cronduit")
def cli() -> None:
    """cronduit: a durable job scheduler."""


cli.add_command(cron_commands.cron)
for command in (
    *config_commands.COMMANDS,
    *daemon_commands.COMMANDS,
    *state_commands.COMMANDS,
    *job_commands.COMMANDS,
    *webhook_commands.COMMANDS,
    *doctor_commands.COMMANDS,
    *audit_commands.COMMANDS,
):
    cli.add_command(command)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="cronduit")
