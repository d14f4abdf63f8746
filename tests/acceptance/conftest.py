"""``cronduit serve`` as a real subprocess: start it, kill it, read what it recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cronduit.daemon.heartbeat import read_daemon
from cronduit.ports import Run
from cronduit.store.sqlite import SqliteStore


@dataclass
class Deployment:
    """A config in a temporary folder and the daemons started on it."""

    folder: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def config(self) -> Path:
        return self.folder / "cronduit.yaml"

    def write(self, text: str) -> None:
        """Write the config; every daemon of the suite listens on a port the system picks,
        so tests never collide with each other or with a daemon running on this machine."""
        if "listen:" not in text:
            if "settings:\n" in text:
                text = text.replace("settings:\n", "settings:\n  listen: 127.0.0.1:0\n", 1)
            else:
                text = "settings:\n  listen: 127.0.0.1:0\n" + text
        self.config.write_text(text)

    def serve(self, *args: str, crash_at: str | None = None,
              extra_env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **(extra_env or {})}
        env.pop("CRONDUIT_CRASH_AT", None)
        if crash_at:
            env["CRONDUIT_CRASH_AT"] = crash_at
        with (self.folder / f"daemon-{len(self.processes)}.log").open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "cronduit", "serve", "-c", str(self.config), *args],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.folder)
        self.processes.append(process)
        return process

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def daemon_log(self, index: int = -1) -> str:
        return (self.folder / f"daemon-{len(self.processes) + index if index < 0 else index}.log"
                ).read_text()

    def runs(self, job: str) -> list[Run]:
        store = SqliteStore(self.folder / ".cronduit" / "cronduit.db")
        try:
            with store.transaction() as tx:
                return list(reversed(tx.history(job, 1000)))
        finally:
            store.close()

    def wait_for(self, what: Callable[[], bool], timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if what():
                return
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting; daemon log:\n{self.daemon_log()}")

    def heartbeat(self) -> str | None:
        """When the daemon last beat, as it wrote it in the store; None before any beat."""
        store = SqliteStore(self.folder / ".cronduit" / "cronduit.db")
        try:
            info = read_daemon(store)
        finally:
            store.close()
        return None if info is None else info.heartbeat_at

    def wait_for_a_turn(self, timeout: float = 15.0) -> None:
        """Until the serving daemon has gone round its loop once since this call, its tick
        included: what it was going to do about anything already recorded, it has done.

        In its loop the daemon beats at the start of a turn, then ticks. The first beat
        newer than the one read now may start a turn begun before, but that turn's tick
        comes after the beat; a second new beat starts the next turn, so the tick is done.
        (The one beat outside the loop comes before "listening on", waited for first.)
        """
        self.wait_for(lambda: "listening on http://" in self.daemon_log(), timeout)
        beats = [self.heartbeat()]

        def beat_twice() -> bool:
            if (latest := self.heartbeat()) != beats[-1]:
                beats.append(latest)
            return len(beats) > 2

        self.wait_for(beat_twice, timeout)

    def lines(self, name: str) -> list[str]:
        path = self.folder / name
        return path.read_text().splitlines() if path.exists() else []

    def history_json(self, job: str) -> list[dict[str, object]]:
        out = subprocess.run(
            [sys.executable, "-m", "cronduit", "job", "history", job, "--json", "-c",
             str(self.config)], capture_output=True, text=True, check=True)
        return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    made = Deployment(tmp_path)
    yield made
    for process in made.processes:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
    subprocess.run(["pkill", "-KILL", "-f", str(tmp_path)], check=False)
