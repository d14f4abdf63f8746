"""Accepting outside triggers: the labels they get, checked on a real store."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from cronduit import intake
from cronduit.core.config import load_config
from cronduit.store.sqlite import SqliteStore

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def test_an_operator_with_control_characters_gets_a_clean_manual_label(
        tmp_path: Path) -> None:
    """The label shows the operator's ESC as an escape; the run's operator field keeps it."""
    job = load_config('jobs:\n  quiet: {run: "true"}\n', "cronduit.yaml").jobs["quiet"]
    store = SqliteStore(tmp_path / "cronduit.db")
    with store.transaction() as tx:
        accepted = intake.accept_manual(tx, job, {}, queue=False, operator="ana\x1b[8m",
                                        now=T0)
    store.close()
    assert ("manual by ana\\x1b[8m", "ana\x1b[8m") == (accepted.event.label,
                                                       accepted.event.operator)


def test_a_webhook_label_cleans_only_what_it_shows() -> None:
    """A long body is cut at the label's limit whatever follows, and nothing unsafe shows."""
    label = intake.webhook_label("\x00" * 10_000)
    assert "webhook " + "\\x00" * 14 + "…" == label
    assert len("webhook ") + intake.LABEL_BODY_CHARS >= len(label)
