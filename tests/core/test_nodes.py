"""Node names and which jobs' runs a node may start (``settings.node``, ``nodes:``)."""

from __future__ import annotations

import pytest

from cronduit.core.config.loader import load_config
from cronduit.core.nodes import (
    FALLBACK_NODE,
    daemon_url,
    excluded_jobs,
    live_matches,
    node_name,
    runs_on,
)


@pytest.mark.parametrize(
    ("configured", "hostname", "expected"),
    [
        ("web-1", "ignored", "web-1"),
        (None, "db1.example.com", "db1.example.com"),
        (None, "host with spaces", "host-with-spaces"),
        (None, "-leading", "leading"),
        (None, "h" * 80, "h" * 63),
        (None, "ÿÿÿ", FALLBACK_NODE),
        (None, "", FALLBACK_NODE),
    ],
)
def test_a_node_is_named_by_settings_or_by_its_host(configured: str | None, hostname: str,
                                                    expected: str) -> None:
    assert expected == node_name(configured, hostname)


@pytest.mark.parametrize(
    ("globs", "node", "expected"),
    [
        (None, "any", True),
        (("db-*",), "db-1", True),
        (("db-*",), "web-1", False),
        (("db-?",), "db-12", False),
        (("a.b",), "aXb", False),  # a dot is a dot, not any character
        (("DB-*",), "db-1", False),  # case counts
        (("web-*", "disk1"), "disk1", True),
    ],
)
def test_a_job_runs_on_the_nodes_its_globs_match(globs: tuple[str, ...] | None, node: str,
                                                 expected: bool) -> None:
    assert expected is runs_on(globs, node)


def test_the_jobs_a_node_leaves_to_others_are_those_it_does_not_match() -> None:
    config = load_config("jobs:\n  b: {run: x, nodes: [db-*]}\n  a: {run: x, nodes: [web-*]}\n"
                         "  c: {run: x}\n", "c.yaml")
    assert ("a",) == excluded_jobs(config.jobs.values(), "db-1")
    assert ("a", "b") == excluded_jobs(config.jobs.values(), "other")


def test_doctor_can_tell_when_no_live_node_matches() -> None:
    assert live_matches(("db-*",), ["web-1", "db-2"])
    assert not live_matches(("db-*",), ["web-1"])
    assert not live_matches(("db-*",), [])


@pytest.mark.parametrize(("listen", "host", "expected"), [
    ("127.0.0.1:8770", "box", "http://127.0.0.1:8770"),
    ("[::1]:9000", "box", "http://[::1]:9000"),
    ("0.0.0.0:8770", "box", "http://box:8770"),
    ("[::]:8770", "box", "http://box:8770"),
    ("127.0.0.1:0", "box", None),
    (None, "box", None),
    ("nonsense", "box", None),
])
def test_a_nodes_daemon_is_asked_where_its_row_says_it_listens(
        listen: str | None, host: str, expected: str | None) -> None:
    assert expected == daemon_url(listen, host)
