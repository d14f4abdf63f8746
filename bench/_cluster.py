"""Several ``cronduit serve`` daemons on one PostgreSQL schema, for ``bench/postgres.py``.

Each daemon is a real subprocess started as a user starts it (``_daemon.daemon``), in a
folder of its own (its config, its runs' local files, its output in ``log``), with its own
``settings.node`` name and HTTP port; the config's jobs are the same for all, and the state
is the same schema. The bench kills, restarts and stops them one by one, by pid.

Whether this cronduit can do it at all is asked of cronduit itself: :func:`unavailable` runs
``cronduit check`` on such a config and returns its refusal, if any, and for more than one
daemon asks whether its PostgreSQL schema keeps node leases (without them, daemons sharing a
schema would route and adopt each other's work), so a part prints why it cannot run rather
than a figure.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import psycopg

from _daemon import Served, daemon

FIRST_PORT = 18400
"""The bench's HTTP ports are FIRST_PORT and up (this machine gives it 18400-18999)."""
NODES = ("bench-a", "bench-b", "bench-c", "bench-d", "bench-e")


@dataclass(frozen=True)
class Settings:
    """What the daemons' configs say besides their jobs (the same for every daemon)."""

    state: str
    lease: str | None = None
    kept_runs: int = 1000
    extra: tuple[str, ...] = ()
    """More ``settings`` lines (``secrets_file: ...``), indented by the writer."""


def config_text(settings: Settings, node: str, port: int, jobs: Iterable[str]) -> str:
    """One daemon's config: the shared settings, its node name and port, the jobs
    (``name: {...}`` flow mappings)."""
    lines = ["settings:", f"  state: '{settings.state}'", f"  node: {node}",
             f"  listen: 127.0.0.1:{port}", f"  kept_runs: {settings.kept_runs}"]
    if settings.lease is not None:
        lines.append(f"  lease: {settings.lease}")
    lines += [f"  {line}" for line in settings.extra]
    lines.append("jobs:")
    lines += [f"  {job}" for job in jobs]
    return "\n".join(lines) + "\n"


def unavailable(folder: Path, settings: Settings, jobs: Sequence[str], daemons: int = 1
                ) -> str | None:
    """None when ``cronduit check`` accepts a daemon's config of this shape and, for more
    than one daemon, the state keeps node leases; else why not."""
    refused = _check(folder, settings, jobs)
    if refused is not None or daemons == 1:
        return refused
    return _lease_problem(settings.state)


def _lease_problem(state: str) -> str | None:
    """None when cronduit's PostgreSQL schema (migrated here, into the empty schema the
    daemons will share) has a table of node leases; else why not."""
    from cronduit.store.postgres import PostgresStore  # noqa: PLC0415

    PostgresStore(state).close()
    with psycopg.connect(state) as db:
        tables = [row[0] for row in db.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = current_schema() ORDER BY 1")]
    if any("node" in table for table in tables):
        return None
    return ("many daemons on one PostgreSQL state: this cronduit's schema keeps no node "
            f"leases yet (its tables: {', '.join(tables)})")


def _check(folder: Path, settings: Settings, jobs: Sequence[str]) -> str | None:
    path = folder / "check.yaml"
    path.write_text(config_text(settings, NODES[0], FIRST_PORT, jobs))
    done = subprocess.run([sys.executable, "-m", "cronduit", "check", "-c", str(path)],
                          capture_output=True, text=True, check=False, cwd=folder)
    if done.returncode == 0:
        return None
    said = (done.stderr or done.stdout).strip().splitlines()
    return "; ".join(line.replace(str(path), "config") for line in said[:3]) or (
        f"cronduit check exited {done.returncode}")


@dataclass
class Node:
    """One daemon of the cluster: where it lives, and its process while it runs."""

    name: str
    port: int
    folder: Path
    config: Path
    served: Served | None = None

    @property
    def alive(self) -> bool:
        return self.served is not None and self.served.popen.poll() is None

    @property
    def pid(self) -> int:
        assert self.served is not None
        return self.served.popen.pid


@dataclass
class Cluster:
    """``count`` daemons sharing ``settings.state``, started by :meth:`start`."""

    folder: Path
    settings: Settings
    jobs: Sequence[str]
    count: int
    first_port: int = FIRST_PORT
    nodes: list[Node] = field(default_factory=list)

    def __post_init__(self) -> None:
        for index in range(self.count):
            name = NODES[index]
            folder = self.folder / name
            folder.mkdir(parents=True, exist_ok=True)
            config = folder / "cronduit.yaml"
            port = self.first_port + index
            config.write_text(config_text(self.settings, name, port, self.jobs))
            self.nodes.append(Node(name, port, folder, config))

    def start(self, timeout: float = 120.0) -> None:
        """Start every daemon at once, then wait until each is serving and listening."""
        for node in self.nodes:
            node.served = daemon(node.config)
        for node in self.nodes:
            self.wait_up(node, timeout)

    def restart(self, node: Node, timeout: float = 120.0) -> float:
        """Start ``node`` again (after a kill); seconds until it serves and listens."""
        node.served = daemon(node.config)
        return self.wait_up(node, timeout)

    @staticmethod
    def wait_up(node: Node, timeout: float) -> float:
        """Seconds from the daemon's start to its ``listening on`` line, which it writes once
        it serves its jobs (and the HTTP server is up)."""
        assert node.served is not None
        return node.served.wait_for("listening on", timeout)

    def kill(self, node: Node) -> None:
        """SIGKILL the daemon alone (its supervisor and runs live on, as after an OOM kill)."""
        os.kill(node.pid, signal.SIGKILL)
        assert node.served is not None
        node.served.popen.wait()

    def stop(self) -> None:
        """SIGINT to every live daemon, as an operator stops them; each waited for."""
        for node in self.nodes:
            if node.alive:
                assert node.served is not None
                os.kill(node.pid, signal.SIGINT)
        for node in self.nodes:
            if node.served is not None:
                node.served.stop()

    def exited(self) -> list[str]:
        """Each way daemons exited unasked (where the bench kills and stops none): the
        nodes that did, their exit status and the last line of their logs (a traceback's
        error), once for the nodes that said the same."""
        said: dict[str, list[str]] = {}
        for node in self.nodes:
            if node.served is not None and node.served.popen.poll() is not None:
                lines = (node.folder / "log").read_text().strip().splitlines() or [""]
                what = f"exited {node.served.popen.returncode}: {lines[-1]}"
                said.setdefault(what, []).append(node.name)
        return [f"{', '.join(names)} {what}" for what, names in said.items()]

    def log_port(self, node: Node) -> int:
        """The port the daemon says it listens on (its log's ``listening on`` line)."""
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", (node.folder / "log")
                          .read_text())
        assert found is not None, f"{node.name} is not listening"
        return int(found.group(1))

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


@contextmanager
def cluster(folder: Path, settings: Settings, jobs: Sequence[str], count: int,
            first_port: int = FIRST_PORT) -> Iterator[Cluster]:
    """A started cluster, stopped afterwards with every run it left killed."""
    nodes = Cluster(folder, settings, jobs, count, first_port)
    try:
        nodes.start()
        yield nodes
    finally:
        nodes.stop()
        stop_runs(settings.state)


def stop_runs(state: str) -> None:
    """Runs outlive their daemon by design; the bench ends those it started, each in its
    process group, once the process is checked to be that run's (its ``CRONDUIT_RUN_ID``), so
    a pid reused by anything else is left alone. Their supervisors then exit on their own."""
    with psycopg.connect(state) as db:
        rows = db.execute("SELECT id, pid FROM runs WHERE pid IS NOT NULL AND state <> 'ended'"
                          ).fetchall()
    for run_id, pid in rows:
        with suppress(psutil.Error, ProcessLookupError, PermissionError):
            if psutil.Process(pid).environ().get("CRONDUIT_RUN_ID") == run_id:
                os.killpg(pid, signal.SIGKILL)
