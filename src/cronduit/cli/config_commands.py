"""``cronduit check`` and ``cronduit init``: validate a config file, or start one."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import click

from cronduit.cli.options import config_option, fail, load_config_file

TEMPLATE = "init_template.yaml"


def template_text() -> str:
    """The commented example config ``cronduit init`` writes (shipped with the package)."""
    return resources.files("cronduit.cli").joinpath(TEMPLATE).read_text(encoding="utf-8")


@click.command("check")
@config_option
def check(config_path: Path) -> None:
    """Validate the config file: every error as FILE:LINE:COL: message, exit 2 if any."""
    config = load_config_file(config_path)
    count = len(config.jobs)
    click.echo(f"{config_path}: {count} job{'' if count == 1 else 's'} OK")


@click.command("init")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite the file if it exists.")
@config_option
def init(path: Path | None, force: bool, config_path: Path) -> None:
    """Write a commented example config to PATH (default: the -c file, ./cronduit.yaml).

    An existing file is left alone (exit 3) unless --force.
    """
    target = path or config_path
    try:
        with target.open("w" if force else "x", encoding="utf-8") as file:
            file.write(template_text())
    except FileExistsError:
        fail(f"{target} already exists; use --force to overwrite it", code=3)
    except OSError as error:
        fail(f"cannot write {target}: {error.strerror or error}", code=1)
    click.echo(f"wrote {target}; edit it, then run: cronduit check -c {target}")


COMMANDS: list[click.Command] = [check, init]
