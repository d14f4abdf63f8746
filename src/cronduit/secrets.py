"""Secret values: from the secrets file (``NAME=value`` lines) and the environment.

The config holds secret *names* only. Values are read here, at the edge, and handed to the
job's environment and to signature checks; nothing else ever sees them, and no message
prints one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cronduit.core.config.model import Config


def read_secrets_file(path: Path) -> dict[str, str]:
    """``NAME=value`` lines; blank lines and ``#`` comments are skipped; values are taken
    as written after the first ``=`` (an optional pair of surrounding quotes is removed)."""
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or "=" not in stripped:
            continue
        name, _, value = stripped.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name.strip().removeprefix("export ").strip()] = value
    return values


def load_secrets(config: Config, config_path: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """Every secret value available: the file's, then the environment's (which wins); a
    name whose value is empty counts as not set."""
    values: dict[str, str] = {}
    name = config.settings.secrets_file
    if name:
        path = Path(name) if Path(name).is_absolute() else config_path.resolve().parent / name
        if path.exists():
            values.update(read_secrets_file(path))
    # An empty value is no secret (it would sign nothing), and an empty variable does not
    # hide the file's value.
    values.update({name: value for name, value in environ.items() if value})
    return {name: value for name, value in values.items() if value}
