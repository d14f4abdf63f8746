"""Reading config records the way tests state what they expect of them."""

from __future__ import annotations

from cronduit.core.config.model import OverlapSpec
from cronduit.core.enums import Overlap, TriggerKind


def policy_for(spec: OverlapSpec, kind: TriggerKind) -> Overlap:
    """The policy an ``overlap`` setting gives a trigger of ``kind``: its own if the file
    names one, else ``default``."""
    return spec.by_kind.get(kind, spec.default)
