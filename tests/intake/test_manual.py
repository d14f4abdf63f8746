"""Accepting outside triggers: the labels they get, checked on a real store."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronduit import intake
from cronduit.core import backfill
from cronduit.core.config import load_config
from cronduit.store.sqlite import SqliteStore

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def test_an_operator_with_control_characters_is_refused_and_nothing_is_written(
        tmp_path: Path) -> None:
    """ESC in an operator would reach the label, the log and the history table: 422 naming
    the field, whichever edge called, and no event."""
    job = load_config('jobs:\n  quiet: {run: "true"}\n', "cronduit.yaml").jobs["quiet"]
    store = SqliteStore(tmp_path / "cronduit.db")
    with pytest.raises(intake.RequestRefused) as refused, store.transaction() as tx:
        intake.accept_manual(tx, job, {}, queue=False, operator="ana\x1b[8m", now=T0)
    with store.transaction() as tx:
        assert [] == tx.new_events(10)
    store.close()
    assert (422, "operator: control characters (newlines, tabs, escapes) are refused, and "
                 "it holds \\x1b") == (refused.value.status, str(refused.value))


def test_a_backfill_operator_is_held_to_the_same_rule(tmp_path: Path) -> None:
    """A line separator: 422, no slot accepted."""
    job = load_config('jobs:\n  tick: {run: "true", every: 1h}\n', "cronduit.yaml").jobs["tick"]
    store = SqliteStore(tmp_path / "cronduit.db")
    with pytest.raises(intake.RequestRefused) as refused, store.transaction() as tx:
        intake.accept_backfill(tx, job, [], backfill.BackfillPolicy.named(backfill.SERIAL),
                               window=(T0, T0), operator="ana\u2028bo", now=T0)
    store.close()
    assert 422 == refused.value.status
    assert str(refused.value).startswith("operator: ")


def test_a_webhook_label_cleans_only_what_it_shows() -> None:
    """A long body is cut at the label's limit whatever follows, and nothing unsafe shows."""
    label = intake.webhook_label("\x00" * 10_000)
    assert "webhook " + "\\x00" * 14 + "…" == label
    assert len("webhook ") + intake.LABEL_BODY_CHARS >= len(label)
