"""Where a run's log is, for ``job logs`` on a state shared by many hosts, and how the tail
stored with the run is introduced when this host has no log file
(:mod:`cronduit.core.log_tails`).

A run's record names the node it went on; the nodes' table says where that node's daemon
listens. Every name read back from the store is cleaned before it is printed.
"""

from __future__ import annotations

import socket

from cronduit.cli.context import State
from cronduit.core.nodes import node_name
from cronduit.core.text import clean
from cronduit.ports import Run, RunLogTail
from cronduit.store import membership_of


def elsewhere(state: State, run: Run) -> bool:
    """Whether the run's files are on another host. Only a state shared by many hosts has
    runs of other hosts; the run's node says which host has them, and a run recorded with
    no node has them here when its folder is here (the host that starts a run makes its
    folder before its job starts)."""
    if not state.config.settings.uses_postgres:
        return False
    if run.node is not None:
        return run.node != node_name(state.config.settings.node, socket.gethostname())
    return not state.paths.run(run.id).exists()


def on_node(run: Run, state: State | None = None) -> str:
    """`` on node NAME`` as the run's record says (nothing when it names none); given the
    state, with where that node's daemon listens, when the nodes' table says."""
    if run.node is None:
        return ""
    where = f" on node {clean(run.node)}"
    membership = membership_of(state.store) if state is not None else None
    if membership is not None:
        listen = next((node.listen for node in membership.nodes() if node.name == run.node),
                      None)
        if listen:
            where += f" (its daemon listens on {clean(listen)})"
    return where


def tail_note(run: Run, stored: RunLogTail) -> str:
    """The line printed (on stderr) before a stored tail: that it is one, how much of the
    log it is, and where the log itself is."""
    shown = (f"all {stored.size} bytes" if len(stored.tail) == stored.size
             else f"its last {len(stored.tail)} bytes of {stored.size}")
    cut = f" (max_log had cut {stored.cut} bytes out of its middle)" if stored.cut else ""
    ran = f"it ran{on_node(run)}" if run.node is not None else "it ran on another host"
    return (f"cronduit: no log file of run {run.id} on this host ({ran}); the tail stored "
            f"with the run when attempt {stored.attempt} ended follows: {shown}{cut}")
