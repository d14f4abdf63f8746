"""Takeover: the runs of a node whose lease expired are recorded lost and retried elsewhere.

Any live daemon sweeps (SPEC §10): it claims each expired node's row (locked, skipping rows
another daemon's sweep or the node's own late transaction holds), records each of the node's
running attempts as failed with reason ``node lost (node NAME)``, which the job's ``retry``
then judges like any failed attempt, releases the node's runs sleeping before a retry so any
node may claim them, and retires the node, all in one transaction. The lost node's own
supervisor ended those processes before its lease ran out, so the retry never runs beside
them; and a lost daemon that comes back changes nothing, since each of its transactions
first checks its own lease (the fence, :mod:`cronduit.store.postgres`).
"""

from __future__ import annotations

from datetime import datetime

from cronduit.core.enums import RunState
from cronduit.core.lifecycle import AttemptReport
from cronduit.engine.ending import attempt_ended
from cronduit.engine.outbox import Outbox
from cronduit.engine.plan import Stage
from cronduit.ports import Transaction

NODES_PER_SWEEP = 16
"""Lost nodes settled per transaction: a cluster that lost many at once settles them in a
few turns, each short."""


def sweep_lost_nodes(stage: Stage, tx: Transaction, now: datetime, outbox: Outbox) -> int:
    """Settle up to :data:`NODES_PER_SWEEP` lost nodes; how many."""
    lost = tx.lost_nodes(stage.node, NODES_PER_SWEEP)
    for name, epoch in lost:
        ended = 0
        for run in tx.active_runs_of_node(name):
            if run.state == RunState.RUNNING:
                attempt_ended(stage, tx, run, run.attempts, AttemptReport(None, node_lost=name),
                              now, outbox)
                ended += 1
        tx.release_backoffs(name)
        tx.retire_node(name, epoch, stage.node)
        runs = f"{ended} run{'' if ended == 1 else 's'}"
        outbox.lines.append(f"node {name} lost (its lease expired): {runs} going there "
                            "recorded as failed, node lost")
    return len(lost)
