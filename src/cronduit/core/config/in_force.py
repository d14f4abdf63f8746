"""Which config a command reads: the file on disk, or the one the daemon applied.

The daemon keeps the text of the config it applied in the store. What the scheduler does is
what that config says, so while a daemon runs, commands that read or act on the state go by
it; a file edited since (and not applied yet) only earns a warning. While no daemon runs, the
file is what the next start will apply, so it is the one in force, unless it does not
validate: then the config last applied is the best account of the jobs, and the warning says
so. A broken file with nothing applied yet leaves the command with nothing to go by: it
refuses, with the file's errors.

Pure: the caller reads the file, the store and the heartbeat, and passes the values.
"""

from __future__ import annotations

from dataclasses import dataclass

from cronduit.core.config.errors import ConfigErrors
from cronduit.core.config.model import Config


@dataclass(frozen=True)
class Applied:
    """The config a daemon applied, as the store keeps it."""

    config: Config
    at: str
    """When it was applied, as the store wrote it (an ISO 8601 instant)."""


@dataclass(frozen=True)
class InForce:
    """The config a command goes by, and the one warning it prints about the file, if any."""

    config: Config
    warning: str | None = None


def config_in_force(file: Config | ConfigErrors, applied: Applied | None,
                    daemon_running: bool, path: str) -> InForce | None:
    """The config in force (see the module's docstring); None when there is none, because
    the file does not validate and no daemon ever applied one."""
    if isinstance(file, ConfigErrors):
        if applied is None:
            return None
        count = len(file.errors)
        errors = "an error" if count == 1 else f"{count} errors"
        return InForce(applied.config,
                       f"{path} differs from the config the daemon applied ({applied.at}) and "
                       f"does not validate ({errors}: cronduit check -c {path}); "
                       "showing the applied config")
    if not daemon_running or applied is None or _same(file, applied.config):
        return InForce(file)
    return InForce(applied.config,
                   f"{path} differs from the config the running daemon applied "
                   f"({applied.at}); showing the applied config (cronduit apply applies the "
                   "file)")


def _same(one: Config, other: Config) -> bool:
    """Equal in everything the daemon acts on; the file's name is only a label."""
    return one.model_copy(update={"filename": ""}) == other.model_copy(update={"filename": ""})
