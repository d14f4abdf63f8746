"""Which secrets a config names and nobody has set, and what their absence turns off.

The config holds secret names only; the values come from the secrets file or the
environment at the edge. A name with no value is not an error (a user may set it later, and
an apply reads the values again), but each one switches something off, so ``serve`` warns
of each at start and ``doctor`` lists them. Pure: the caller says which names are set.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from cronduit.core.config.model import Config

EFFECTS = {
    "webhook_secret": "job webhooks answer 404 until it is set",
    "github_secret": "GitHub deliveries answer 401 until it is set",
    "api_token": "the API refuses run-now, pause and resume (401) until it is set",
    "github_token": "a check's branch is confirmed only by a job's workspace clone",
}
"""What each secret of ``settings`` switches off while it has no value."""


@dataclass(frozen=True)
class UnsetSecret:
    """A secret name the config gives and no value backs."""

    name: str
    where: str
    """The key that names it: ``settings.webhook_secret``, ``jobs.deploy.secrets``."""
    effect: str


def unset_secrets(config: Config, available: Container[str]) -> list[UnsetSecret]:
    """Every secret named by ``config`` and not in ``available``, each once, settings first."""
    found: dict[str, UnsetSecret] = {}
    for key, effect in EFFECTS.items():
        name = getattr(config.settings, key)
        if name and name not in available:
            found.setdefault(name, UnsetSecret(name, f"settings.{key}", effect))
    for job in config.jobs.values():
        for name in job.secrets:
            if name not in available:
                found.setdefault(name, UnsetSecret(
                    name, f"jobs.{job.name}.secrets", f"runs of {job.name} get no {name}"))
    return list(found.values())
