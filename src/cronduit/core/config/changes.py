"""What an apply changes, for the operator, and what it leaves until the next restart.

Pure: the two configs in, one line per change out. Settings are named one by one, and the
two a running daemon cannot take over without restarting (the store it has open, the address
it listens on) say so; every other setting takes effect with the apply (jobs inherit
``timeout`` and ``catch_up`` as they are loaded, secrets are read again, the HTTP edge reads
the secret names on each request, each attempt launched takes ``max_log`` as it is then).
"""

from __future__ import annotations

from cronduit.core.config.model import Config

AT_RESTART = frozenset({"state", "listen"})
"""Settings a running daemon keeps until it restarts."""


def config_changes(old: Config, new: Config) -> list[str]:
    """What an apply changes, job by job and setting by setting."""
    lines = [f"{name}: added" for name in new.jobs if name not in old.jobs]
    lines += [f"{name}: removed" for name in old.jobs if name not in new.jobs]
    lines += [
        f"{name}: changed"
        for name, job in new.jobs.items()
        if name in old.jobs and old.jobs[name] != job
    ]
    lines += [f"notifiers.{name}: {verb}" for name, verb in _notifier_changes(old, new)]
    for key in sorted(type(new.settings).model_fields):
        if getattr(old.settings, key) != getattr(new.settings, key):
            later = " (takes effect at the next restart)" if key in AT_RESTART else ""
            lines.append(f"settings.{key}: changed{later}")
    return lines


def _notifier_changes(old: Config, new: Config) -> list[tuple[str, str]]:
    changes = [(name, "added") for name in new.notifiers if name not in old.notifiers]
    changes += [(name, "removed") for name in old.notifiers if name not in new.notifiers]
    changes += [(name, "changed") for name, notifier in new.notifiers.items()
                if name in old.notifiers and old.notifiers[name] != notifier]
    return changes
