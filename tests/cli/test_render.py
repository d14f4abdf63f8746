"""What the CLI prints: values stored raw by an older version cannot drive the terminal."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from cronduit.cli import cli
from cronduit.cli.render import echo_line, echo_table, json_text
from cronduit.core.text import UNSAFE
from cronduit.ports import Run
from cronduit.store.sqlite import SqliteStore

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
RAW = "webhook \x1b[2J\x1b]0;pwned\x07\x00\u202eevil\x9b"


def test_a_table_shows_control_characters_as_escapes(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """A cell with ESC and NUL prints as text, and the columns still line up."""
    echo_table(["RUN", "TRIGGER"], [["r1", "a\x1b[2Jb"], ["r2", "plain"]])
    assert ["RUN  TRIGGER", "r1   a\\x1b[2Jb", "r2   plain"] == capsys.readouterr().out.splitlines()


def test_a_line_shows_control_characters_as_escapes(capsys: pytest.CaptureFixture[str]) -> None:
    """A line cannot be split in two or recolour the terminal."""
    echo_line("reason: a\nb\x1b[31m")
    assert "reason: a\\x0ab\\x1b[31m\n" == capsys.readouterr().out


@pytest.mark.parametrize("value", [RAW, {"label": RAW, "n": 1, "list": ["\x7f", "\ud800"]}])
def test_json_reads_back_whole_with_nothing_unsafe_on_the_line(value: object) -> None:
    """JSON escapes what a terminal would act on, and still reads back as the same value."""
    text = json_text(value)
    assert UNSAFE.search(text) is None
    assert value == json.loads(text)


def test_job_history_of_a_label_stored_raw_prints_it_cleaned(tmp_path: Path) -> None:
    """A run recorded before labels were cleaned shows escapes in the table; --json keeps it."""
    (tmp_path / "cronduit.yaml").write_text('jobs:\n  poke: {run: "true"}\n')
    store = SqliteStore(tmp_path / ".cronduit" / "cronduit.db")
    with store.transaction() as tx:
        tx.insert_run(Run("r1", "poke", "webhook", RAW, "ended", T0, outcome="success"))
    store.close()
    config = ["-c", str(tmp_path / "cronduit.yaml")]
    table = CliRunner().invoke(cli, ["job", "history", "poke", *config])
    as_json = CliRunner().invoke(cli, ["job", "history", "poke", "--json", *config])
    assert (0, 0) == (table.exit_code, as_json.exit_code), table.output + as_json.output
    assert "webhook \\x1b[2J\\x1b]0;pwned\\x07\\x00\\u202eevil\\x9b" in table.output
    assert UNSAFE.search((table.output + as_json.output).replace("\n", "")) is None
    assert RAW == json.loads(as_json.output)["label"]
