"""Many real ``cronduit serve`` daemons sharing one PostgreSQL state, for the scale-out tests.

Each daemon is a node: a folder of its own (its config, and the runs' files under
``.cronduit/`` beside it, as on a host of its own), started as a real process and read back
through its log, its jobs' output files and the tables of the shared schema. A test waits
for an event (a row, a line) with a deadline, never for a fixed time.

Whatever a test does, :meth:`Cluster.close` leaves no process behind: it resumes a daemon
left stopped, then kills by pid every process the test started (the daemons, their
supervisors and their jobs, which all work in the cluster's folder), whether or not the
daemon was killed first.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

from tests.helpers.mounts import holders


@dataclass
class Node:
    """One daemon of the cluster: its node name, its folder, its process once started."""

    name: str
    folder: Path
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    """How many times it was started (each start logs to a file of its own)."""

    @property
    def config(self) -> Path:
        return self.folder / "cronduit.yaml"

    @property
    def log_path(self) -> Path:
        return self.folder / f"daemon-{self.starts}.log"

    def log(self) -> str:
        """What the daemon's latest start logged so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    @property
    def pid(self) -> int:
        assert self.process is not None, f"node {self.name} was never started"
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def kill(self) -> None:
        """SIGKILL the daemon (only the daemon: its supervisor and runs go on)."""
        self.signal(signal.SIGKILL)
        assert self.process is not None
        self.process.wait(timeout=10)

    def url(self) -> str:
        """The daemon's HTTP address, once it has logged it."""
        found = re.search(r"listening on (http://\S+)", self.log())
        assert found is not None, f"node {self.name} is not listening:\n{self.log()}"
        return found.group(1)


@dataclass
class Cluster:
    """Daemons on one PostgreSQL schema (``url`` names the server and the schema)."""

    root: Path
    url: str
    lease: str = "3s"
    nodes: dict[str, Node] = field(default_factory=dict)
    _db: psycopg.Connection[Any] | None = None

    def node(self, name: str, jobs: str, *, settings: str = "", folder: str | None = None,
             url: str | None = None) -> Node:
        """Write node ``name``'s config (in a folder of its own: ``folder``, by default the
        node's name): the shared state, its node name, the lease, ``settings`` (YAML lines
        at the settings' indent), then ``jobs`` (the YAML of the ``jobs:`` mapping)."""
        made = Node(name, self.root / (folder or name))
        made.folder.mkdir(parents=True, exist_ok=True)
        made.config.write_text(
            "settings:\n"
            "  listen: 127.0.0.1:0\n"
            f"  state: '{url or self.url}'\n"
            f"  node: {name}\n"
            f"  lease: {self.lease}\n"
            f"{settings}"
            f"jobs:\n{jobs}")
        self.nodes[folder or name] = made
        return made

    def serve(self, node: Node, *, env: dict[str, str] | None = None,
              wrap: Sequence[str] = ()) -> Node:
        """Start ``cronduit serve`` for ``node`` (under ``wrap``, a command prefix such as
        ``ip netns exec NAME``), with ``env`` added to this process's environment."""
        node.starts += 1
        environment = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        environment.pop("CRONDUIT_CRASH_AT", None)
        with node.log_path.open("wb") as log:
            node.process = subprocess.Popen(
                [*wrap, sys.executable, "-m", "cronduit", "serve", "-c", str(node.config)],
                stdout=log, stderr=subprocess.STDOUT, env=environment, cwd=node.folder)
        return node

    def wait_serving(self, *nodes: Node, timeout: float = 30.0) -> None:
        """Until each node holds its lease and listens."""
        for node in nodes:
            self.wait_for(lambda: "listening on http://" in node.log(),  # noqa: B023
                          f"node {node.name} to listen", timeout)

    # -- the shared state, read directly --------------------------------------------------

    def query(self, text: str, *params: object) -> list[tuple[Any, ...]]:
        """Rows of a query on the shared schema (autocommit: every call sees the latest);
        none before the first daemon has made the tables."""
        try:
            return self._cursor(text, *params).fetchall()
        except psycopg.errors.UndefinedTable:
            return []

    def now(self) -> datetime:
        """The database's clock: the one every daemon of the cluster fires by."""
        [(now,)] = self.query("SELECT clock_timestamp()")
        return now  # type: ignore[no-any-return]

    def rows(self, text: str, *params: object) -> list[dict[str, Any]]:
        """A query's rows as mappings by column name; none before the tables exist."""
        try:
            cursor = self._cursor(text, *params)
        except psycopg.errors.UndefinedTable:
            return []
        names = [column.name for column in cursor.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def runs(self, job: str) -> list[dict[str, Any]]:
        """The job's run records, oldest first."""
        return self.rows("SELECT * FROM runs WHERE job = %s ORDER BY seq", job)

    def node_row(self, name: str) -> dict[str, Any] | None:
        """The nodes table's row for ``name``; None before the node first took its lease."""
        found = self.rows("SELECT * FROM nodes WHERE name = %s", name)
        return found[0] if found else None

    def _cursor(self, text: str, *params: object) -> psycopg.Cursor[Any]:
        if self._db is None or self._db.closed:
            self._db = psycopg.connect(self.url, autocommit=True)
            self._db.execute("SET TIME ZONE 'UTC'")
        return self._db.execute(text.encode(), params)

    # -- waiting and cleaning up ----------------------------------------------------------

    def wait_for(self, what: Callable[[], object], description: str,
                 timeout: float = 30.0, every: float = 0.05,
                 explain: Callable[[], str] | None = None) -> float:
        """Until ``what()`` is true; the seconds that took. Fails with every daemon's log
        tail when ``timeout`` passes first, after what ``explain()`` says of the state then
        (what was still missing, so a failure names it)."""
        start = time.monotonic()
        while True:
            if what():
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                said = f"\n{explain()}" if explain is not None else ""
                raise AssertionError(f"timed out after {timeout:g}s waiting for "
                                     f"{description}{said}\n{self.logs()}")
            time.sleep(every)

    def logs(self, tail: int = 40) -> str:
        """The last lines each daemon logged, for a failure's message."""
        parts = []
        for key, node in self.nodes.items():
            lines = node.log().splitlines()[-tail:]
            parts.append(f"--- {key} (node {node.name}):\n" + "\n".join(lines))
        return "\n".join(parts)

    def close(self) -> None:
        """Stop every daemon and every process the test started, then close the
        connection. A stopped daemon is resumed first, so a SIGKILL reaches it at once."""
        for node in self.nodes.values():
            if node.running():
                with contextlib.suppress(ProcessLookupError):
                    node.signal(signal.SIGCONT)
                    node.signal(signal.SIGKILL)
                assert node.process is not None
                node.process.wait(timeout=10)
        kill_processes_in(self.root)
        if self._db is not None:
            self._db.close()


def kill_processes_in(folder: Path) -> None:
    """SIGKILL, by pid, every process that works in ``folder`` or holds a file there (the
    supervisors and jobs a daemon left going), until none is left."""
    for _ in range(100):
        pids = holders(folder)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


@contextlib.contextmanager
def cluster_in(root: Path, url: str, lease: str = "3s") -> Iterator[Cluster]:
    """A cluster on ``url`` in ``root``, closed however the block ends."""
    made = Cluster(root, url, lease)
    try:
        yield made
    finally:
        made.close()
