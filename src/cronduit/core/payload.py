"""What a trigger carries besides its own fields, as one typed value across the pipeline.

Intake builds a payload from what it accepted (a manual run's or a webhook's inputs, a
webhook's body, a code-host delivery's facts, a backfill's own overlap policy) and the
firing path from a serial catch-up; the store keeps it as one JSON object; the engine reads
the policy and the inputs, the executor writes the whole of it into the trigger file. Each
payload is encoded at most once and decoded at most once, and only when asked: a burst of
webhook bodies routed into a queue is never parsed by the engine, which needs none of it.

A payload is a value: equal when its JSON text is, never changed once built.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from cronduit.core import backfill
from cronduit.core.backfill import BackfillPolicy, trigger_policy
from cronduit.core.enums import TriggerKind

CATCH_UP_ALL = "all"
"""What a serial catch-up's triggers say in their payload (``catch_up``)."""
_EMPTY_TEXT = "{}"
RESUME = "resume"
"""The field of a resume trigger: the id of the execution it activates again (SPEC §8)."""


class Payload:
    """A trigger's payload: its fields (see :meth:`build`) and their JSON text."""

    __slots__ = ("_fields", "_text")

    def __init__(self, text: str = _EMPTY_TEXT) -> None:
        """A payload as stored; decoded when first read."""
        self._text: str | None = text or _EMPTY_TEXT
        self._fields: Mapping[str, Any] | None = None

    @classmethod
    def stored(cls, text: str) -> Payload:
        """A payload as a store reads it back: the one :data:`EMPTY` value for the many
        triggers that carry nothing, so reading a burst of timer events builds none."""
        return EMPTY if text == _EMPTY_TEXT else cls(text)

    @classmethod
    def build(cls, *, inputs: Mapping[str, str] | None = None, body: str | None = None,
              delivery: Mapping[str, object] | None = None,
              backfill: BackfillPolicy | None = None, serial_catch_up: bool = False,
              resume: str | None = None) -> Payload:
        """A payload from its parts; encoded when first stored."""
        fields: dict[str, object] = {}
        if resume is not None:
            fields[RESUME] = resume
        if inputs is not None or backfill is not None:
            fields["inputs"] = dict(inputs or {})
        if body is not None:
            fields["body"] = body
        if delivery is not None:
            fields["delivery"] = dict(delivery)
        if backfill is not None:
            fields.update(backfill.payload())
        if serial_catch_up:
            fields.update({"catch_up": CATCH_UP_ALL, "overlap": SERIAL_CATCH_UP.overlap.value,
                           "max_parallel": SERIAL_CATCH_UP.max_parallel})
        payload = cls.__new__(cls)
        payload._text = None
        payload._fields = MappingProxyType(fields)
        return payload

    @property
    def text(self) -> str:
        """The JSON object the store keeps."""
        if self._text is None:
            assert self._fields is not None
            self._text = json.dumps(dict(self._fields), sort_keys=True)
        return self._text

    @property
    def fields(self) -> Mapping[str, Any]:
        """Every field, as the trigger file shows them after the trigger's own."""
        if self._fields is None:
            assert self._text is not None
            decoded = json.loads(self._text) if self._text != _EMPTY_TEXT else {}
            self._fields = MappingProxyType(decoded if isinstance(decoded, dict) else {})
        return self._fields

    @property
    def is_empty(self) -> bool:
        return self._text == _EMPTY_TEXT if self._text is not None else not self._fields

    @property
    def inputs(self) -> dict[str, str]:
        """The inputs the trigger was accepted with (none for a timer's or a delivery's)."""
        given = self.fields.get("inputs")
        return dict(given) if isinstance(given, dict) else {}

    @property
    def resume(self) -> str | None:
        """The execution a resume trigger activates again (SPEC §8); None for any other."""
        if self.is_empty:
            return None
        value = self.fields.get(RESUME)
        return value if isinstance(value, str) else None

    def own_policy(self, kind: TriggerKind) -> BackfillPolicy | None:
        """The overlap policy the trigger follows instead of its kind's: a backfill's (a
        manual trigger) or a serial catch-up's (a timer one); None for every other. Only
        kinds whose payload cronduit itself writes are read: a webhook's or a delivery's
        comes from outside."""
        if self.is_empty:
            return None
        if kind is TriggerKind.MANUAL:
            if self.resume is not None:
                return RESUME_POLICY
            return trigger_policy(self.fields)
        if kind is TriggerKind.TIMER and self.fields.get("catch_up") == CATCH_UP_ALL:
            return SERIAL_CATCH_UP
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Payload) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"Payload({self.text!r})"


SERIAL_CATCH_UP = BackfillPolicy.named(backfill.SERIAL)
RESUME_POLICY = BackfillPolicy.named(backfill.SERIAL)
"""A resume's own policy: its own run, after the job's runs going, never merged with other
triggers (a resume activates one execution; coalesced, it would start another)."""
"""The policy a serial catch-up's triggers follow: ``allow`` with at most one run going, so
each slot is its own run and they run one after another, oldest first (as a backfill's)."""
EMPTY = Payload()
"""The payload of a trigger that carries nothing (most timers', an ``on.after`` one)."""
SERIAL = Payload.build(serial_catch_up=True)
"""The payload of a serial catch-up's timer triggers."""
