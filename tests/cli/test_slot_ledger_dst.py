"""``cronduit schedule slots`` after the real engine, on a fake clock, passes both London DST
nights of 2026 (29 March 01:00 GMT -> 02:00 BST; 25 October 02:00 BST -> 01:00 GMT)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from cronduit.cli import cli
from cronduit.cli.context import Runtime
from cronduit.core.config import load_config
from cronduit.engine import Engine
from cronduit.store import open_store
from cronduit.testing import FakeClock, FakeRunner

CONFIG = """\
settings: {state: state}
jobs:
  close: {run: ./close, cron: "30 1 * * *", time_zone: Europe/London, dst: {gap: skip}}
"""


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def live_through(path: Path, start: datetime, end: datetime) -> None:
    """Run the engine from ``start`` to ``end``, each run exiting 0 as it starts."""
    config = load_config(CONFIG, str(path))
    store = open_store(config, path)
    try:
        runner = FakeRunner()
        engine = Engine(config, store, runner)
        engine.apply(config, start)
        now: datetime | None = start
        while now is not None and now <= end:
            for run_id in runner.running():
                runner.finish(run_id, 0)
            due = engine.tick(now)
            now = None if due is None else max(due, now + timedelta(microseconds=1))
    finally:
        store.close()


def slots(path: Path, *args: str) -> tuple[int, str]:
    runtime = Runtime(clock=FakeClock(utc("2026-10-26T00:00")), nudge=lambda _: None)
    result = CliRunner().invoke(cli, ["schedule", "slots", "close", *args, "-c", str(path)],
                                obj=runtime)
    return result.exit_code, result.stdout


def test_schedule_slots_lists_the_times_the_dst_rule_removed(tmp_path: Path) -> None:
    """Both nights: the 01:30 that does not exist and the repeated 01:30 are listed as
    missed, each with the rule that removed it, among the days that ran; a window given by
    the instant a row prints finds it."""
    path = tmp_path / "cronduit.yaml"
    path.write_text(CONFIG)
    live_through(path, utc("2026-03-28T00:00"), utc("2026-10-26T00:00"))
    spring = slots(path, "--from", "2026-03-28T00:00Z", "--to", "2026-03-30T12:00Z")
    assert (0, [
        ["SLOT", "NAME", "FATE", "REASON", "RUN"],
        ["2026-03-28T01:30:00Z", "2026-03-28 01:30 Europe/London", "ran"],
        ["2026-03-29T01:00:00Z", "2026-03-29 01:30 Europe/London", "missed",
         "missed: 01:30 does not exist on 2026-03-29 (dst gap: skip)", "-"],
        ["2026-03-30T00:30:00Z", "2026-03-30 01:30 Europe/London", "ran"],
    ]) == (spring[0], [cells[:3] if cells[2] == "ran" else cells
                       for cells in table(spring[1])])
    code, out = slots(path, "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert (0, [
        ("2026-03-29T01:00:00Z", "2026-03-29 01:30 Europe/London",
         "missed: 01:30 does not exist on 2026-03-29 (dst gap: skip)"),
        ("2026-10-25T01:30:00Z", "2026-10-25 01:30 Europe/London (repeated)",
         "missed: 01:30 repeated, only its first occurrence runs (dst fold: once)"),
    ]) == (code, [(r["slot"], r["name"], r["reason"]) for r in rows if r["fate"] == "missed"])
    assert 211 == sum(1 for r in rows if r["fate"] == "ran")
    code, out = slots(path, "--json", "--from", "2026-03-29T01:00:00Z",
                      "--to", "2026-03-29T01:00:00Z")
    assert (0, ["2026-03-29 01:30 Europe/London"]) == (
        code, [json.loads(line)["name"] for line in out.splitlines()])


def table(text: str) -> list[list[str]]:
    """The cells of a table the CLI printed: columns are two or more spaces apart."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if line.strip()]
