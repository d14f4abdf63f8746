"""Durable multi-step executions with the real daemon, SIGKILLed at the two points SPEC §8
names, on SQLite and on PostgreSQL; what ran is counted from the steps' own output.

Each step appends a line to ``ran.txt`` as it starts: a step run twice would show twice.
"""

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

from tests.helpers.postgres import URL, fresh_schema

JOBS = """\
jobs:
  etl:
    timeout: 5m
    steps:
      - id: sync
        run: 'echo "sync $CRONDUIT_EXECUTION_ID $CRONDUIT_ATTEMPT_ID" >> ran.txt;
              printf "{\\"SNAPSHOT\\": \\"s-1\\"}" > "$CRONDUIT_OUTPUT_FILE"'
        outputs: [SNAPSHOT]
      - id: index
        run: 'echo "index $CRONDUIT_EXECUTION_ID $CRONDUIT_ATTEMPT_ID $FROM" >> ran.txt;
              while [ ! -e release ]; do sleep 0.05; done;
              printf "{\\"COUNT\\": \\"12\\"}" > "$CRONDUIT_OUTPUT_FILE"'
        outputs: [COUNT]
        inputs: {FROM: sync.SNAPSHOT}
      - id: publish
        run: 'echo "publish $CRONDUIT_EXECUTION_ID $CRONDUIT_ATTEMPT_ID $N" >> ran.txt'
        inputs: {N: index.COUNT}
"""


@dataclass
class Site:
    """One config folder, its daemons, and the CLI on it."""

    folder: Path
    state: str | None
    """A PostgreSQL URL, or None for the SQLite state in the folder."""
    daemons: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def config(self) -> Path:
        return self.folder / "cronduit.yaml"

    def write(self) -> None:
        state = f"  state: '{self.state}'\n  node: steps-a\n" if self.state else ""
        self.config.write_text(f"settings:\n  listen: 127.0.0.1:0\n{state}{JOBS}")

    def serve(self, crash_at: str | None = None) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("CRONDUIT_CRASH_AT", None)
        if crash_at:
            env["CRONDUIT_CRASH_AT"] = crash_at
        with (self.folder / f"daemon-{len(self.daemons)}.log").open("wb") as log:
            daemon = subprocess.Popen(
                [sys.executable, "-m", "cronduit", "serve", "-c", str(self.config)],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.folder)
        self.daemons.append(daemon)
        return daemon

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cronduit", *args, "-c", str(self.config)],
                              capture_output=True, text=True, cwd=self.folder, check=False)

    def ran(self) -> list[list[str]]:
        path = self.folder / "ran.txt"
        return [line.split() for line in path.read_text().splitlines()] if path.exists() else []

    def executions(self) -> list[dict[str, object]]:
        listed = self.cli("execution", "list", "--json")
        return [json.loads(line) for line in listed.stdout.splitlines()]

    def wait_for(self, what: Callable[[], object], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if what():
                return
            time.sleep(0.05)
        logs = "\n".join(path.read_text() for path in sorted(self.folder.glob("daemon-*.log")))
        raise AssertionError(f"timed out; daemon logs:\n{logs}")


@pytest.fixture(params=["sqlite", "postgresql"])
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Site]:
    if request.param == "sqlite":
        made = Site(tmp_path, None)
        made.write()
        yield made
    else:
        with fresh_schema("steps") as schema:
            made = Site(tmp_path, f"{URL}?options=-csearch_path%3D{schema}")
            made.write()
            yield made
            _stop(made)
    _stop(made)
    subprocess.run(["pkill", "-KILL", "-f", str(tmp_path)], check=False)


def _stop(site: Site) -> None:
    for daemon in site.daemons:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGKILL)
            daemon.wait(timeout=10)


def _succeeded(site: Site) -> bool:
    return [x["state"] for x in site.executions()] == ["succeeded"]


def _check_once_each(site: Site) -> None:
    """Each step ran once, with one execution id, its inputs from the steps before."""
    ran = site.ran()
    assert ["sync", "index", "publish"] == [line[0] for line in ran], ran
    assert 1 == len({line[1] for line in ran})
    assert (["s-1"], ["12"]) == (ran[1][3:], ran[2][3:])
    [execution] = site.executions()
    shown = json.loads(site.cli("execution", "inspect", str(execution["execution"]),
                                "--json").stdout)
    assert [("sync", "done", 1), ("index", "done", 1), ("publish", "done", 1)] == [
        (step["step"], step["state"], len(step["tries"])) for step in shown["step_details"]]
    assert ({"SNAPSHOT": "s-1"}, {"COUNT": "12"}) == (shown["step_details"][0]["outputs"],
                                                      shown["step_details"][1]["outputs"])


def test_a_daemon_killed_during_a_step_adopts_it_and_saves_its_exit_and_outputs(
        site: Site) -> None:
    """SIGKILL while index runs; index ends while no daemon watches; the next daemon adopts
    it, saves its exit status and outputs, and publish runs with them; nothing twice."""
    first = site.serve()
    site.wait_for(lambda: "listening on" in (site.folder / "daemon-0.log").read_text())
    assert 0 == site.cli("job", "run", "etl", "--detach").returncode
    site.wait_for(lambda: [line[0] for line in site.ran()] == ["sync", "index"])
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    (site.folder / "release").touch()
    site.wait_for(lambda: any(site.folder.rglob("attempt-2.outputs")))  # index has ended
    site.serve()
    site.wait_for(lambda: _succeeded(site))
    _check_once_each(site)


def test_a_daemon_killed_between_a_steps_exit_and_its_save_saves_it_after_restart(
        site: Site) -> None:
    """The daemon is killed once it has seen sync's exit and before it records it: the next
    daemon reads sync's exit status and outputs from the run's folder and saves them, then
    the execution goes on; sync is not run again (the docs say when a step would be)."""
    (site.folder / "release").touch()
    crashing = site.serve(crash_at="ending")
    site.wait_for(lambda: "listening on" in (site.folder / "daemon-0.log").read_text())
    assert 0 == site.cli("job", "run", "etl", "--detach").returncode
    crashing.wait(timeout=30)
    assert -signal.SIGKILL == crashing.returncode
    assert "crash test: SIGKILL after ending" in (site.folder / "daemon-0.log").read_text()
    assert ["sync"] == [line[0] for line in site.ran()]
    [waiting] = site.executions()
    assert ("running", 0) == (waiting["state"], waiting["steps_done"])
    site.serve()
    site.wait_for(lambda: _succeeded(site))
    _check_once_each(site)
