"""The HTTP edge: health, job webhooks, GitHub deliveries and the run-now API.

Every request that brings a trigger goes through :mod:`cronduit.intake` (the same checks as
the CLI) and :class:`cronduit.intake.acceptor.Acceptor` (durable before the answer), then wakes the
engine; nothing here decides policy.
"""

from cronduit.http.app import create_app
from cronduit.http.gateway import Gateway

__all__ = [
    "Gateway", "create_app", "server",
]
