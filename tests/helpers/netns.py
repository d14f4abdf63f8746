"""Hosts of a test's own: network namespaces joined by veth pairs, to cut a link between them.

One namespace is the database's host; each daemon host is a namespace of its own with a
link (a veth pair, a /30 of its own) to it, and nothing else: no route anywhere but to
the database host. Cutting a link sets the database host's end down, so the daemon's
packets go on being sent into it and are lost, as in a real partition (its connections
hang rather than fail at once). Making namespaces needs root and ``ip`` (iproute2): under
CI (``CI=true``, as root) a machine without them fails the test; elsewhere it is skipped.
Everything is deleted when the block ends.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"ip {' '.join(args)}: {done.stderr}"


@dataclass
class Hosts:
    """The database host and the daemon hosts, by namespace name."""

    tag: str
    database: str
    daemons: list[str] = field(default_factory=list)

    def wrap(self, namespace: str) -> tuple[str, ...]:
        """The command prefix that runs a program on that host."""
        return ("ip", "netns", "exec", namespace)

    @staticmethod
    def database_address(index: int) -> str:
        """The database host's address on its link to daemon host ``index``."""
        return f"10.213.{index}.1"

    @staticmethod
    def daemon_address(index: int) -> str:
        return f"10.213.{index}.2"

    def _link(self, index: int) -> str:
        return f"cd{self.tag}d{index}"

    def cut(self, index: int) -> None:
        """Cut daemon host ``index`` off the database: its link goes down at the far end."""
        _ip("-n", self.database, "link", "set", self._link(index), "down")

    def mend(self, index: int) -> None:
        _ip("-n", self.database, "link", "set", self._link(index), "up")


@contextlib.contextmanager
def hosts(count: int) -> Iterator[Hosts]:
    """A database host and ``count`` daemon hosts linked to it."""
    if os.geteuid() != 0:
        _missing("network namespaces need root")
    if shutil.which("ip") is None:
        _missing("ip (iproute2) is missing: apt-get install iproute2")
    tag = secrets.token_hex(2)
    made = Hosts(tag, f"cronduit-{tag}-db")
    namespaces = [made.database]
    try:
        _ip("netns", "add", made.database)
        _ip("-n", made.database, "link", "set", "lo", "up")
        for index in range(count):
            name = f"cronduit-{tag}-{index}"
            _ip("netns", "add", name)
            namespaces.append(name)
            made.daemons.append(name)
            near, far = made._link(index), f"cd{tag}h{index}"
            _ip("-n", made.database, "link", "add", near, "type", "veth", "peer", "name",
                far, "netns", name)
            _ip("-n", made.database, "addr", "add", f"{made.database_address(index)}/30",
                "dev", near)
            _ip("-n", name, "addr", "add", f"{made.daemon_address(index)}/30", "dev", far)
            for namespace, link in ((made.database, near), (name, far), (name, "lo")):
                _ip("-n", namespace, "link", "set", link, "up")
        yield made
    finally:
        for namespace in reversed(namespaces):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True,
                           check=False)
