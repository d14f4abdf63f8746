"""What validating one part of a config may know about the rest of it.

The loader validates ``settings``, each notifier and each job on its own, so that one
broken job cannot hide another's errors. A job still needs a few facts from outside its
own mapping (the settings it inherits defaults from, the other jobs' names), and a rule
must not run on a field whose value already failed. Pydantic's validation context carries
those facts to the validators; code that builds models directly passes none, and then
values are taken as Python values (durations as seconds) and cross-section rules that
need facts nobody gave simply do not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationInfo

if TYPE_CHECKING:
    from cronduit.core.config.model import Settings

_KEY = "cronduit"


@dataclass(frozen=True)
class LoadContext:
    """Facts given to the validators of one section of a config file."""

    section: type | None = None
    """The model whose top-level keys ``doubtful`` names."""
    doubtful: frozenset[str] = frozenset()
    """Keys of ``section`` whose values failed, so rules reading them must not run."""
    job_name: str | None = None
    """A job's name is its key under ``jobs``, not a key of its own mapping."""
    settings: Settings | None = None
    """The settings a job inherits ``timeout`` and ``catch_up`` from."""
    settings_doubtful: frozenset[str] = frozenset()
    declared_jobs: frozenset[str] | None = None
    """Every job name in the file, valid or not, for ``on.after.job``."""
    job_doubtful: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def as_pydantic(self) -> dict[str, Any]:
        """The form pydantic's ``context=`` takes."""
        return {_KEY: self}

    def doubtful_for(self, model: object) -> frozenset[str]:
        """``doubtful`` applies to the section's own model, not to models nested in it."""
        return self.doubtful if type(model) is self.section else frozenset()


def load_context(info: ValidationInfo) -> LoadContext | None:
    """The context the loader gave, or ``None`` when code builds a model directly."""
    context = info.context
    if isinstance(context, dict):
        found = context.get(_KEY)
        if isinstance(found, LoadContext):
            return found
    return None


def from_config(info: ValidationInfo) -> bool:
    """Whether the value came from a config file, where durations must carry a unit."""
    return load_context(info) is not None
