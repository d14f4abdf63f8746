"""A trigger's payload: built at intake, kept as one JSON object, read once and only when
asked, and the policy of its own read only from the kinds cronduit itself writes."""

from __future__ import annotations

import json

import pytest

from cronduit.core.backfill import BackfillPolicy
from cronduit.core.enums import Overlap, TriggerKind
from cronduit.core.payload import EMPTY, SERIAL, SERIAL_CATCH_UP, Payload


def test_a_built_payload_reads_back_the_same_from_its_text() -> None:
    built = Payload.build(inputs={"REGION": "eu"}, body='{"ref": "main"}')
    stored = Payload(built.text)
    assert {"inputs": {"REGION": "eu"}, "body": '{"ref": "main"}'} == dict(stored.fields)
    assert built == stored
    assert {"REGION": "eu"} == stored.inputs


def test_the_empty_payload_carries_nothing() -> None:
    assert "{}" == EMPTY.text
    assert EMPTY.is_empty
    assert {} == EMPTY.inputs
    assert EMPTY == Payload("")  # as an older row may hold it
    assert None is EMPTY.own_policy(TriggerKind.MANUAL)


def test_a_backfills_payload_carries_its_policy_and_no_inputs() -> None:
    policy = BackfillPolicy(Overlap.ALLOW, 3)
    payload = Payload(Payload.build(backfill=policy).text)
    assert {"inputs": {}, "backfill": True, "overlap": "allow", "max_parallel": 3} == dict(
        payload.fields)
    assert policy == payload.own_policy(TriggerKind.MANUAL)


def test_a_serial_catch_ups_payload_carries_the_serial_policy() -> None:
    assert SERIAL_CATCH_UP == Payload(SERIAL.text).own_policy(TriggerKind.TIMER)
    assert (Overlap.ALLOW, 1) == (SERIAL_CATCH_UP.overlap, SERIAL_CATCH_UP.max_parallel)


@pytest.mark.parametrize("kind", [TriggerKind.WEBHOOK, TriggerKind.EVENT, TriggerKind.AFTER])
def test_a_policy_is_never_read_from_a_kind_whose_payload_comes_from_outside(
        kind: TriggerKind) -> None:
    looks_like_a_backfill = Payload(json.dumps({"backfill": True, "overlap": "allow",
                                                "catch_up": "all"}))
    assert None is looks_like_a_backfill.own_policy(kind)


def test_a_payload_is_decoded_only_when_read() -> None:
    """A burst of webhook bodies routed into a queue is never parsed: the text is kept as
    it was until something reads a field."""
    unread = Payload("{not json")  # would raise if decoded
    assert "{not json" == unread.text
    assert not unread.is_empty
    with pytest.raises(ValueError):  # noqa: PT011 - json's own error
        _ = unread.fields


def test_a_stored_empty_payload_is_the_one_empty_value() -> None:
    assert EMPTY is Payload.stored("{}")
    assert {"inputs": {}} == dict(Payload.stored('{"inputs": {}}').fields)
