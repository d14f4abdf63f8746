"""A daemon that cannot listen on its address stops with one line, having started nothing."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronduit.core.config import load_config
from cronduit.daemon import ListenError
from cronduit.daemon.heartbeat import read_applied, read_daemon
from cronduit.daemon.loop import Daemon
from cronduit.http import server
from cronduit.store.sqlite import SqliteStore
from cronduit.testing import FakeClock, FakeRunner

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def config_text(port: int) -> str:
    return f"settings:\n  listen: 127.0.0.1:{port}\njobs:\n  tick: {{run: 'true', every: 1h}}\n"


class Rig:
    """A daemon on a store in a temporary folder, with what it logged and launched."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lines: list[str] = []
        self.runner = FakeRunner()
        self.store = SqliteStore(folder / "cronduit.db")

    def serve(self, port: int, bind: Callable[[str, int], socket.socket] | None = None) -> str:
        """Serve until the daemon stops; the one line it stopped with."""
        text = config_text(port)
        daemon = Daemon(self.folder / "cronduit.yaml", load_config(text, "cronduit.yaml"),
                        self.store, self.runner, FakeClock(T0), dry_run=False,
                        log=self.lines.append, config_text=text, bind=bind,
                        open_store=lambda: SqliteStore(self.folder / "cronduit.db"))
        with pytest.raises(ListenError) as stopped:
            asyncio.run(daemon.serve())
        return str(stopped.value)

    def started_nothing(self) -> tuple[list[str], int, bool, bool]:
        """What a daemon that started would have left: log lines, launches, the config it
        applied and its heartbeat."""
        return (self.lines, len(self.runner.launched), read_applied(self.store) is not None,
                read_daemon(self.store) is not None)


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    made = Rig(tmp_path)
    yield made
    made.store.close()


def test_a_port_in_use_stops_the_daemon_before_anything_starts(rig: Rig) -> None:
    """Another process listens on the port: one line, and no config applied, no run started."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        stopped = rig.serve(port)
    assert f"cannot listen on 127.0.0.1:{port} (settings.listen): Address already in use" == (
        stopped)
    assert ([], 0, False, False) == rig.started_nothing()


def test_a_port_taken_between_bind_and_listen_stops_the_daemon_the_same_way(rig: Rig) -> None:
    """The bind goes through, then another process listens first: the same one line."""
    other = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    other.bind(("127.0.0.1", 0))
    port = other.getsockname()[1]

    def bind_then_lose_the_port(host: str, at: int) -> socket.socket:
        bound = server.bind(host, at)
        other.listen()
        return bound

    with other:
        stopped = rig.serve(port, bind=bind_then_lose_the_port)
    assert f"cannot listen on 127.0.0.1:{port} (settings.listen): Address already in use" == (
        stopped)
    assert ([], 0, False, False) == rig.started_nothing()


def test_an_address_not_of_this_host_stops_the_daemon_the_same_way(rig: Rig) -> None:
    """A bind that fails for another reason than a port in use: the same one line."""
    def bind_elsewhere(_host: str, at: int) -> socket.socket:
        return server.bind("192.0.2.1", at)  # TEST-NET-1: never an address of this host

    stopped = rig.serve(8770, bind=bind_elsewhere)
    assert ("cannot listen on 127.0.0.1:8770 (settings.listen): Cannot assign requested "
            "address") == stopped
    assert ([], 0, False, False) == rig.started_nothing()
