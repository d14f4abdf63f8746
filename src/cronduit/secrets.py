"""Secret values: from the secrets file (``NAME=value`` lines) and the environment.

The config holds secret *names* only. Values are read here, at the edge, and handed to the
job's environment and to signature checks; nothing else ever sees them, and no message
prints one. The file's format is the core's (:mod:`cronduit.core.secrets_file`); this
module opens the file, which must be a regular file: a directory, a FIFO (which would block
the reader until someone writes to it) or a device is refused, as is a file that cannot be
read. Each refusal is one :class:`SecretsError` line, ``FILE:LINE: problem`` where a line is
at fault.

A secrets file the config names but that does not exist is not an error: the secrets then
come from the environment alone, as they may in a deployment that sets them there. The
commands say so (:func:`missing_secrets_file`), since a mistyped path looks just like it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from cronduit.core.config.model import Config
from cronduit.core.secrets_file import MAX_SECRETS_FILE, SecretsFileError, parse_secrets


class SecretsError(ValueError):
    """The secrets file cannot be read: one line naming the file (and the line at fault),
    never a value."""


class _Missing(SecretsError):
    """The secrets file does not exist (the environment alone then holds the secrets)."""


def secrets_file_path(config: Config, config_path: Path) -> Path | None:
    """The secrets file the config names (relative to the config file's folder), if any."""
    name = config.settings.secrets_file
    if not name:
        return None
    return Path(name) if Path(name).is_absolute() else config_path.resolve().parent / name


def read_secrets_file(path: Path) -> dict[str, str]:
    """The file's ``NAME: value`` pairs; :class:`SecretsError` for a file that cannot be
    read or breaks the format."""
    try:
        data = _read_regular(path)
    except OSError as error:
        if error.errno == errno.ENOENT:
            raise _Missing(f"{path}: no such file") from None
        raise SecretsError(f"{path}: cannot read the secrets file: "
                           f"{error.strerror or type(error).__name__}") from None
    try:
        return parse_secrets(data)
    except SecretsFileError as error:
        where = path if error.line is None else f"{path}:{error.line}"
        raise SecretsError(f"{where}: {error.problem}") from None


def load_secrets(config: Config, config_path: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """Every secret value available: the file's, then the environment's (which wins); a
    name whose value is empty counts as not set. :class:`SecretsError` when the file exists
    but cannot be read as a secrets file."""
    values: dict[str, str] = {}
    path = secrets_file_path(config, config_path)
    if path is not None:
        with contextlib.suppress(_Missing):  # the environment alone, then
            values.update(read_secrets_file(path))
    values = {name: value for name, value in values.items() if value}
    return {**values, **environment_secrets(environ)}


def state_password(config: Config, config_path: Path,
                   environ: Mapping[str, str]) -> str | None:
    """The PostgreSQL password, when ``settings.state_password`` names the secret that holds
    it; None when it names none (libpq's ``PGPASSWORD``, ``~/.pgpass`` or service file then
    serve, or the URL's own). :class:`SecretsError` when the named secret is not set: the
    store would otherwise be tried without it, and fail for a reason that does not say so."""
    name = config.settings.state_password
    if name is None:
        return None
    value = load_secrets(config, config_path, environ).get(name)
    if value is None:
        missing = missing_secrets_file(config, config_path)
        raise SecretsError(f"settings.state_password names the secret {name}, which is not set "
                           "(in the secrets file or the environment)"
                           + ("" if missing is None else f"; {missing}"))
    return value


def environment_secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """The secrets the environment sets. An empty value is no secret (it would sign
    nothing), and an empty variable does not hide the file's value."""
    return {name: value for name, value in environ.items() if value}


def missing_secrets_file(config: Config, config_path: Path) -> str | None:
    """A warning when the config names a secrets file that does not exist; None otherwise."""
    path = secrets_file_path(config, config_path)
    if path is None or os.path.exists(path):
        return None
    return (f"settings.secrets_file names {path}, which does not exist: secrets are read "
            "from the environment only")


def _read_regular(path: Path) -> bytes:
    """The bytes of the regular file at ``path``, at most one more than the format allows
    (so a larger file is told apart). Opened without blocking, so a FIFO is refused at once
    rather than waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise OSError(errno.EISDIR, "it is a directory, not a file")
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, a socket or a device)")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_SECRETS_FILE:
            chunk = os.read(fd, MAX_SECRETS_FILE + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
