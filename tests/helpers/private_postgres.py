"""A PostgreSQL server of a test's own, to stop and start under running daemons.

The shared server on 127.0.0.1:5432 serves every other test (and other users of the
machine), so a test that takes the database away starts its own: ``initdb`` into a fresh
folder, ``pg_ctl start`` on a free port of loopback with its socket in that folder. The
server refuses to run as root, so as root (CI) every server command runs as the
``postgres`` user (``runuser``). Under CI (``CI=true``) a machine without the server's
programs fails the test; elsewhere it is skipped.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PORTS = range(19000, 19500)
"""Where the test's server listens: the first port of these that is free."""


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def _server_programs() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        _missing("PostgreSQL's server programs are missing (/usr/lib/postgresql/*/bin)")
    return Path(found[-1]).parent


def _free_port() -> int:
    for port in PORTS:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError(f"no free port in {PORTS}")


@dataclass
class PrivateServer:
    """A running server of the test's own: its folder, port and programs, the addresses it
    listens on, and the command prefix it runs under."""

    folder: Path
    port: int
    programs: Path
    as_user: tuple[str, ...]
    listen: str = "127.0.0.1"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url_at(self, address: str) -> str:
        return f"postgresql://postgres@{address}:{self.port}/postgres"

    @property
    def socket_conninfo(self) -> str:
        """Through its socket in its folder: reachable from any network namespace."""
        return f"host={self.folder} port={self.port} user=postgres dbname=postgres"

    def _pg_ctl(self, *args: str) -> None:
        done = subprocess.run(
            [*self.as_user, str(self.programs / "pg_ctl"), "-D", str(self.folder / "data"),
             "-l", str(self.folder / "server.log"), "-w", "-t", "60", *args],
            capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"pg_ctl {args}: {done.stdout}{done.stderr}" \
                                     f"{self.server_log()}"

    def start(self) -> None:
        options = (f"-p {self.port} -c listen_addresses={self.listen} "
                   f"-c unix_socket_directories={self.folder} -c fsync=off")
        self._pg_ctl("-o", options, "start")

    def stop(self) -> None:
        """A fast shutdown: sessions are ended, as when a server is restarted."""
        self._pg_ctl("-m", "fast", "stop")

    def server_log(self) -> str:
        path = self.folder / "server.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""


@contextlib.contextmanager
def private_server(listen: str = "127.0.0.1", wrap: tuple[str, ...] = ()
                   ) -> Iterator[PrivateServer]:
    """A new server, started; stopped and deleted however the block ends. ``listen``: the
    addresses it listens on; ``wrap``: a prefix for its commands (``ip netns exec NAME``)."""
    programs = _server_programs()
    as_user: tuple[str, ...] = wrap
    folder = Path(tempfile.mkdtemp(prefix="cronduit-test-pg-"))
    if os.geteuid() == 0:  # the server will not run as root
        if shutil.which("runuser") is None:
            _missing("runuser is missing: the test server cannot run as postgres")
        as_user = (*wrap, "runuser", "-u", "postgres", "--")
        shutil.chown(folder, "postgres", "postgres")
    try:
        made = subprocess.run(
            [*as_user, str(programs / "initdb"), "-D", str(folder / "data"), "-A", "trust",
             "-U", "postgres", "-E", "UTF8", "--no-sync"],
            capture_output=True, text=True, check=False)
        assert made.returncode == 0, made.stdout + made.stderr
        with (folder / "data" / "pg_hba.conf").open("a") as hba:  # the test's own hosts
            hba.write("host all all samenet trust\n")
        server = PrivateServer(folder, _free_port(), programs, as_user, listen)
        server.start()
        try:
            yield server
        finally:
            with contextlib.suppress(AssertionError):
                server._pg_ctl("-m", "immediate", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
