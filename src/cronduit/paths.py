"""Where cronduit keeps things on disk, in one place: every edge asks here.

A relative ``settings.state`` is read from the config file's folder, like ``dir``, so the
daemon and the CLI find the same store wherever they are started from. With a PostgreSQL
state the same layout, minus the database, is under ``settings.runs_dir`` on each host.

    <state>/cronduit.db                         the SQLite store
    <state>/runs/<run>/log                      stdout and stderr of every attempt
    <state>/runs/<run>/output/                  $CRONDUIT_OUTPUT_DIR, kept with the run
    <state>/runs/<run>/trigger.json             $CRONDUIT_TRIGGER_FILE
    <state>/runs/<run>/attempt-<n>              the attempt's lock, pid and exit status
    <state>/runs/<run>/attempt-<n>.retry_after  $CRONDUIT_RETRY_AFTER_FILE, if the job wrote it
    <state>/runs/<run>/attempt-<n>.outputs      $CRONDUIT_OUTPUT_FILE, a step attempt's outputs
    <state>/runs/<run>/attempt-<n>.log          a step attempt's own log (a durable run)
    <state>/runs/<run>/workspace                what the run was told of its workspace
    <state>/workspaces/<repository>-<hash>/     checkouts (:mod:`cronduit.executor.workspace`)
    <state>/daemon.lock                         held by the one daemon serving this state
    <state>/lease                               by when this node's jobs must be gone, while
                                                its daemon holds a lease (PostgreSQL state)

The attempt file's format is :mod:`cronduit.executor.files`'s; the retry hint's name is
derived from it there, so only the attempt file is named here. The lease file's format is
:mod:`cronduit.executor.lease`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from cronduit.core.config.model import Config

DEFAULT_RUNS_DIR = ".cronduit"
"""Where runs' files go beside the config when the state is in PostgreSQL."""


@dataclass(frozen=True)
class StatePaths:
    """The layout of one state directory."""

    root: Path

    @staticmethod
    def of(config: Config, config_path: Path) -> StatePaths:
        """The state directory; with a PostgreSQL state, the local folder for runs' files
        (``settings.runs_dir``, by default ``.cronduit`` beside the config): there is no
        ``cronduit.db`` in it then, only runs, workspaces and the daemon's lock."""
        settings = config.settings
        if settings.uses_postgres:
            state = Path(settings.runs_dir or DEFAULT_RUNS_DIR)
        else:
            state = Path(settings.state)
        if not state.is_absolute():
            state = config_path.resolve().parent / state
        return StatePaths(state)

    @property
    def database(self) -> Path:
        return self.root / "cronduit.db"

    @cached_property
    def runs(self) -> Path:
        return self.root / "runs"

    @property
    def lease(self) -> Path:
        """The node's lease file, which every supervisor of the daemon reads."""
        return self.root / "lease"

    def run(self, run_id: str) -> Path:
        return self.runs / run_id

    def log(self, run_id: str) -> Path:
        return self.run(run_id) / "log"

    def attempt(self, run_id: str, attempt: int) -> Path:
        """The attempt's one file (a file, not a folder: each create costs at launch)."""
        return self.run(run_id) / f"attempt-{attempt}"

    def step_log(self, run_id: str, attempt: int) -> Path:
        """The own log of attempt ``attempt`` of a durable run (each step attempt's apart;
        :func:`cronduit.executor.files.step_log_path` names it from the attempt file)."""
        return self.run(run_id) / f"attempt-{attempt}.log"

    def log_of(self, run_id: str, attempt: int, durable: bool) -> Path:
        """Where attempt ``attempt`` of a run logs: its own file when the run is a durable
        execution's, else the run's one log that every attempt appends to."""
        return self.step_log(run_id, attempt) if durable else self.log(run_id)
