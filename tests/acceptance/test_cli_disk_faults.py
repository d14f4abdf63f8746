"""The CLI on a state folder that is full or read-only: one line and exit 1, never a
traceback, and nothing already in the store lost."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from tests.acceptance.conftest import Deployment
from tests.helpers.mounts import fill, free, small_tmpfs

CONFIG = """
settings:
  state: state
jobs:
  hello:
    run: 'echo hello'
"""


def cli(deployment: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cronduit", *args, "-c", str(deployment.config)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False,
                          cwd=deployment.folder)


def _one_line_refusal(done: subprocess.CompletedProcess[str], words: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("cronduit: ")
    assert words in lines[0]


def test_job_run_and_pause_on_a_full_state_disk_say_so_in_one_line(
        deployment: Deployment) -> None:
    """With the state folder's disk full, `job run` and `job pause` each print one line and
    exit 1; the run accepted before the disk filled is still there once it has room."""
    state = deployment.folder / "state"
    with small_tmpfs(state, "4m"):
        deployment.write(CONFIG)
        first = cli(deployment, "job", "run", "hello", "--detach")
        assert first.returncode == 0, first.stderr
        # Held open as a daemon holds it, so the WAL stays and the CLI's open succeeds: the
        # write is what meets the full disk.
        with closing(sqlite3.connect(state / "cronduit.db")) as held:
            held.execute("SELECT count(*) FROM events").fetchall()
            filler = fill(state)
            _one_line_refusal(cli(deployment, "job", "run", "hello", "--detach", "--queue"),
                              "full")
            _one_line_refusal(cli(deployment, "job", "pause", "hello", "--reason", "disk"), "full")
            free(filler)
        again = cli(deployment, "job", "run", "hello", "--detach", "--queue")
        assert again.returncode == 0, again.stderr
        with closing(sqlite3.connect(state / "cronduit.db")) as db:
            kept = [row[0] for row in db.execute(
                "SELECT delivery_id FROM events WHERE job = 'hello' ORDER BY seq")]
        assert kept == [first.stdout.strip().split()[-1], again.stdout.strip().split()[-1]]


def test_serve_on_a_read_only_state_folder_says_so_in_one_line(deployment: Deployment) -> None:
    """`serve` whose state folder cannot be written exits 1 with one line naming why."""
    state = deployment.folder / "state"
    with small_tmpfs(state, "4m"):
        deployment.write(CONFIG)
        remount = subprocess.run(["mount", "-o", "remount,ro", str(state)],
                                 capture_output=True, text=True, check=False)
        assert remount.returncode == 0, remount.stderr
        done = subprocess.run([sys.executable, "-m", "cronduit", "serve", "-c",
                               str(deployment.config)], capture_output=True, text=True,
                              timeout=60, check=False, cwd=deployment.folder)
        _one_line_refusal(done, "Read-only file system")
        assert not any(Path(state).iterdir())
