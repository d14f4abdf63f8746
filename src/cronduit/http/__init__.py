"""The HTTP edge: health, job webhooks, GitHub deliveries, the run-now API and the reads.

Every request that brings a trigger goes through :mod:`cronduit.intake` (the same checks as
the CLI) and :class:`cronduit.intake.acceptor.Acceptor` (durable before the answer), then wakes the
engine; nothing here decides policy.
"""

from cronduit.http.app import create_app
from cronduit.http.gateway import Gateway
from cronduit.http.reader import Reader

__all__ = [
    "Gateway", "Reader", "create_app", "server",
]
