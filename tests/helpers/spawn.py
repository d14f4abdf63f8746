"""What tests ask of the launcher that the product never needs to know."""

from __future__ import annotations

from cronduit.executor import spawn


def supervisor_pid() -> int | None:
    """The pid of this process's supervisor, once a launch has started one."""
    return spawn._SUPERVISOR.pid
