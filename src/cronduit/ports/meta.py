"""The store's small facts about the installation, by key: the daemon's heartbeat and
identity (``cronduit status``; a second daemon is refused), the config it applied, an apply
the CLI asked for and its answer, and the jobs it has seen (``paused_on_start``)."""

from __future__ import annotations

from typing import Protocol


class InstallationMeta(Protocol):
    """A small key-value table of text."""

    def get_meta(self, key: str) -> str | None:
        """The value stored under ``key``, or None when there is none."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` under ``key``, replacing any value it had. Concurrency: of two
        transactions writing one key, the last commit wins; a reader sees one value whole."""
        ...
