"""Cron expressions in words (being written)."""

from __future__ import annotations

from cronduit.core.cron import CronExpression


def explain(text: str) -> str:
    """Say ``text`` in English; raises CronError for an invalid expression."""
    return CronExpression.parse(text).text
