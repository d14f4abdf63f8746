"""``cronduit doctor`` and ``cronduit status`` on a state shared by many daemons: the live
nodes, and the jobs whose ``nodes:`` no live node matches."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import psycopg
from click.testing import CliRunner

from cronduit.cli import cli
from cronduit.ports import NodeClaim
from cronduit.store.postgres import PostgresStore
from tests.helpers.postgres import URL, fresh_schema


def _doctor(folder: Path, schema: str, command: str = "doctor") -> tuple[int, str]:
    state = f"{URL}?options={quote(f'-csearch_path={schema}')}"
    (folder / "cronduit.yaml").write_text(
        f"settings:\n  state: '{state}'\n  listen: 127.0.0.1:9201\n"
        "jobs:\n  backup: {run: 'true', nodes: [db-*]}\n  report: {run: 'true'}\n")
    result = CliRunner().invoke(cli, [command, "-c", str(folder / "cronduit.yaml")])
    return result.exit_code, result.output


def test_a_job_no_live_node_matches_is_a_problem(tmp_path: Path) -> None:
    with fresh_schema() as schema:
        store = PostgresStore(f"{URL}?options={quote(f'-csearch_path={schema}')}")
        try:
            store.membership.register(NodeClaim("web-1", "h1", 1, 1), 30, lambda _, __: False)
            store.membership.register(NodeClaim("db-1", "h2", 1, 1), 30, lambda _, __: False)
            with psycopg.connect(store._conninfo, autocommit=True) as db:  # db-1 died
                db.execute("UPDATE nodes SET expires_at = clock_timestamp() - interval '1s' "
                           "WHERE name = 'db-1'")
            code, output = _doctor(tmp_path, schema)
        finally:
            store.close()
    assert 1 == code, output
    assert "nodes: 1 live (web-1)" in output
    assert ("warning: job backup: no live node matches nodes: [db-*]; its runs wait until a "
            "daemon with a matching settings.node serves") in output
    assert "job report: no live node" not in output


def test_no_live_node_at_all_is_a_problem(tmp_path: Path) -> None:
    with fresh_schema() as schema:
        PostgresStore(f"{URL}?options={quote(f'-csearch_path={schema}')}").close()
        code, output = _doctor(tmp_path, schema)
    assert 1 == code
    assert "warning: nodes: 0 live" in output


def test_status_lists_the_live_nodes(tmp_path: Path) -> None:
    with fresh_schema() as schema:
        store = PostgresStore(f"{URL}?options={quote(f'-csearch_path={schema}')}")
        try:
            store.membership.register(NodeClaim("web-1", "h1", 1, 1, "127.0.0.1:8770"), 30,
                                      lambda _, __: False)
            _, output = _doctor(tmp_path, schema, "status")
        finally:
            store.close()
    assert "nodes: web-1 (h1, http://127.0.0.1:8770)" in output
