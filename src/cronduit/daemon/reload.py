"""Applying a config while the daemon runs (``cronduit apply``, SIGHUP): all of it or none.

A file that cannot be read, does not validate or cannot be applied is refused, with its
reasons, and the running config stays. Only a fault of the state folder (a full disk) is
raised, with nothing applied, for the loop to try the apply again once the store can be
written. ``cronduit apply`` asks through the store (:data:`APPLY_ASKED`) and reads the answer
there (:data:`LAST_APPLY`), so it needs no channel to the daemon but its signal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from cronduit.core.config import ConfigErrors, load_config
from cronduit.core.config.changes import config_changes
from cronduit.core.config.model import Config
from cronduit.daemon.heartbeat import write_applied
from cronduit.engine import Engine
from cronduit.faults import reason_of
from cronduit.intake import audit
from cronduit.ports import Store, Transaction
from cronduit.secrets import SecretsError

NO_CHANGES = "no changes"
"""The one line of an apply that changed nothing."""
APPLY_ASKED = "apply_asked"
"""Meta key where ``cronduit apply`` leaves who asked, for the apply's audit entry."""
LAST_APPLY = "last_apply"
"""Meta key where the daemon answers the last apply: at, ok, lines."""


class _Refused(Exception):
    """An apply refused: why, in one line, and the file's errors if it has any."""

    def __init__(self, why: str, errors: list[str] | None = None, *,
                 stays: str = "the running config stays") -> None:
        super().__init__(why)
        self.why = why
        self.errors = errors or []
        self.stays = stays
        """What the refusal leaves in force, as the log says it."""


class Reloader:
    """The config the daemon applied, its text and its secrets; applies a new one."""

    def __init__(self, config_path: Path, store: Store, engine: Engine, config_text: str,
                 load_secrets: Callable[[Config], Mapping[str, str]],
                 log: Callable[[str], None]) -> None:
        self.config_path = config_path
        self.store = store
        self.engine = engine
        self.config_text = config_text
        """The text the config in force was loaded from, kept in the store as applied."""
        self._load_secrets = load_secrets
        self.secrets: Mapping[str, str] = load_secrets(engine.config)
        """Secret values by name, read at start and on every apply (not per request)."""
        self._log = log

    def record_start(self, changes: list[str], now: datetime) -> None:
        """Keep the config applied at start, and audit what it changed."""
        with self.store.transaction() as tx:
            write_applied(tx, self.config_text, str(self.config_path), now)
            if changes:  # an unchanged restart changes nothing worth auditing
                audit.record(tx, "apply", audit.ENGINE, now, start=True, ok=True,
                             changes=audit.apply_lines(changes))

    def apply(self, now: datetime) -> bool:
        """Reload the config file, all of it or none of it; whether it was applied (a
        refusal is answered and logged here). Raises only a state-folder fault."""
        try:
            text, new, secrets = self._read_config()
            lines = self._apply_config(new, text, now)
        except _Refused as refused:
            self._refuse(now, refused)
            return False
        self.secrets = secrets
        self.config_text = text
        for line in lines:
            self._log(f"apply: {line}")
        return True

    def _read_config(self) -> tuple[str, Config, Mapping[str, str]]:
        """The file's text, its config and the secrets it names; what the file holds is
        refused, never retried: trying again would not mend it."""
        try:
            text = self.config_path.read_bytes().decode("utf-8")
            new = load_config(text, str(self.config_path))
        except ConfigErrors as errors:
            raise _Refused("the config has errors", str(errors).splitlines()) from None
        except UnicodeDecodeError as error:  # where, as check says it
            data = error.object
            line = data.count(b"\n", 0, error.start) + 1
            column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
            raise _Refused("the config has errors",
                           [f"{self.config_path}:{line}:{column}: not UTF-8 text"]) from None
        except Exception as error:
            raise _Refused(f"cannot read {self.config_path}: {_why(error)}") from None
        try:
            return text, new, self._load_secrets(new)
        except SecretsError as error:
            raise _Refused("the secrets file has errors", str(error).splitlines(),
                           stays="the running config and secrets stay") from None
        except Exception as error:
            raise _Refused(f"cannot read the secrets (settings.secrets_file): {_why(error)}"
                           ) from None

    def _apply_config(self, new: Config, text: str, now: datetime) -> list[str]:
        """Apply ``new`` and record it in one transaction; what it changed."""
        try:
            lines = config_changes(self.engine.config, new)

            def record(tx: Transaction, engine_lines: list[str]) -> None:
                lines.extend(engine_lines)
                self._write_apply(tx, now, ok=True, lines=lines or [NO_CHANGES], text=text)

            self.engine.apply(new, now, record)
        except Exception as error:
            if reason_of(error) is not None:
                raise  # the store: the loop waits it out and applies again
            raise _Refused(f"cannot apply the config: {_why(error)}") from error
        return lines or [NO_CHANGES]

    def _refuse(self, now: datetime, refused: _Refused) -> None:
        """Answer ``cronduit apply`` with the refusal, then log it: one line, and one per
        error of the file."""
        with self.store.transaction() as tx:
            self._write_apply(tx, now, ok=False, lines=refused.errors or [refused.why],
                              text=None)
        self._log(f"apply refused: {refused.why}; {refused.stays}")
        for line in refused.errors:
            self._log(f"apply refused: {line}")

    def _write_apply(self, tx: Transaction, now: datetime, *, ok: bool, lines: list[str],
                     text: str | None) -> None:
        """Answer ``cronduit apply`` and write the audit entry, naming the operator that
        command left in ``apply_asked`` (a bare SIGHUP has none: ``signal``); an apply that
        was applied keeps its ``text`` as the config in force."""
        if ok and text is not None:
            write_applied(tx, text, str(self.config_path), now)
        tx.set_meta(LAST_APPLY, json.dumps({"at": now.isoformat(), "ok": ok,
                                              "lines": lines}))
        asked = json.loads(tx.get_meta(APPLY_ASKED) or "{}")
        tx.set_meta(APPLY_ASKED, "{}")
        audit.record(tx, "apply", asked.get("operator") or "signal", now, ok=ok,
                     changes=audit.apply_lines(lines))


def _why(error: Exception) -> str:
    """An error in one line: its own words, else its kind."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    if isinstance(error, UnicodeDecodeError):  # its words would show a byte of the file
        return "not UTF-8 text"
    words = " ".join(str(error).split())
    return f"{type(error).__name__}: {words}" if words else type(error).__name__




def ask_apply(tx: Transaction, operator: str | None, at: datetime) -> None:
    """``cronduit apply``: leave who asks, for the apply's audit entry, before signalling."""
    tx.set_meta(APPLY_ASKED, json.dumps({"operator": operator, "at": at.isoformat()}))


def apply_answer(tx: Transaction, asked: datetime) -> dict[str, Any] | None:
    """The daemon's answer to an apply asked at ``asked`` (at, ok, lines), once it has
    given one."""
    raw = tx.get_meta(LAST_APPLY)
    result: dict[str, Any] | None = json.loads(raw) if raw else None
    if result and datetime.fromisoformat(result["at"]) >= asked:
        return result
    return None
