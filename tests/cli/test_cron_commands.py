"""``cronduit cron next`` and ``cronduit cron explain`` as a user runs them."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from cronduit import Cron
from cronduit.cli import cli
from cronduit.cli.context import Runtime
from cronduit.testing import FakeClock


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_cron_next_prints_utc_instants_across_the_london_spring_gap() -> None:
    """The DST night answer, one Z-suffixed instant a line."""
    code, out, _ = run("cron", "next", "30 1 * * *", "--tz", "Europe/London",
                       "--after", "2026-03-28T00:00:00Z", "--count", "3")
    assert 0 == code
    assert "2026-03-28T01:30:00Z\n2026-03-29T01:00:00Z\n2026-03-30T00:30:00Z\n" == out


def test_cron_next_on_the_new_york_fall_back_night() -> None:
    """01:30 repeats on 1 November 2026; the fixed-time job runs at the first one."""
    code, out, _ = run("cron", "next", "30 1 * * *", "--tz", "America/New_York",
                       "--after", "2026-10-31T12:00:00Z", "--count", "2")
    assert 0 == code
    assert ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"] == out.split()


def test_cron_next_takes_the_dst_knobs() -> None:
    """--dst-fold twice runs both 01:30s; --dst-gap skip drops the nonexistent one."""
    _, twice, _ = run("cron", "next", "30 1 * * *", "--tz", "Europe/London",
                      "--after", "2026-10-24T12:00:00Z", "--count", "2", "--dst-fold", "twice")
    assert ["2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"] == twice.split()
    _, skip, _ = run("cron", "next", "30 1 * * *", "--tz", "Europe/London",
                     "--after", "2026-03-28T12:00:00Z", "--count", "1", "--dst-gap", "skip")
    assert ["2026-03-30T00:30:00Z"] == skip.split()


def test_a_naive_after_is_read_on_the_zones_wall_clock() -> None:
    """--after without an offset means wall-clock time in --tz."""
    _, out, _ = run("cron", "next", "0 9 * * *", "--tz", "Europe/London",
                    "--after", "2026-06-01T08:59:00", "--count", "1")
    assert ["2026-06-01T08:00:00Z"] == out.split()


def test_an_invalid_expression_exits_2_with_one_line_on_stderr() -> None:
    """Scripts get status 2 and a single line naming the problem."""
    code, out, err = run("cron", "next", "61 * * * *")
    assert (2, "") == (code, out)
    assert ["cronduit: minute field: 61 is outside 0-59"] == err.splitlines()


def test_an_unknown_zone_exits_2() -> None:
    """A zone that is not an IANA name is refused the same way."""
    code, _, err = run("cron", "next", "0 * * * *", "--tz", "Mars/Olympus")
    assert 2 == code
    assert 1 == len(err.splitlines())
    assert "unknown time zone 'Mars/Olympus'" in err


def test_cron_next_refuses_an_expression_its_dst_gap_option_would_never_run() -> None:
    """With --dst-gap skip, 02:30 on New York's spring-forward Sundays never exists."""
    code, out, err = run("cron", "next", "30 2 8-14 3 */7", "--tz", "America/New_York",
                         "--dst-gap", "skip")
    assert (2, "") == (code, out)
    assert ["cronduit: '30 2 8-14 3 */7' never runs in America/New_York with dst gap: skip: "
            "every time it names falls in a spring-forward gap"] == err.splitlines()


def test_a_bad_after_exits_2() -> None:
    """An --after that is not ISO 8601 is refused with status 2."""
    code, _, err = run("cron", "next", "0 * * * *", "--after", "yesterday")
    assert 2 == code
    assert "--after" in err


def test_cron_explain_says_it_in_words() -> None:
    """explain prints one sentence."""
    code, out, _ = run("cron", "explain", "30 2 * * 1-5")
    assert (0, "At 02:30, Monday through Friday\n") == (code, out)


def test_the_console_script_runs_as_a_real_process() -> None:
    """python -m cronduit answers like the installed command, exit codes included."""
    ok = subprocess.run([sys.executable, "-m", "cronduit", "cron", "next", "@daily",
                         "--after", "2026-01-01T00:00:00Z", "--count", "1"],
                        capture_output=True, text=True, check=False)
    assert (0, "2026-01-02T00:00:00Z\n") == (ok.returncode, ok.stdout)
    bad = subprocess.run([sys.executable, "-m", "cronduit", "cron", "next", "0 0 30 2 *"],
                         capture_output=True, text=True, check=False)
    assert 2 == bad.returncode
    assert "can never match a real date" in bad.stderr


JOBS = """\
jobs:
  report:
    run: echo report
    cron: "30 1 * * *"
    time_zone: Europe/London
    jitter: 10m
  plain:
    run: echo plain
    at: ["05:17"]
  tick:
    run: echo tick
    every: 5m
"""


def test_cron_next_for_a_job_shows_its_jittered_due_times(tmp_path: Path) -> None:
    """--job prints the job's slots in its own zone, each moved by its stable jitter."""
    config = tmp_path / "cronduit.yaml"
    config.write_text(JOBS)
    args = ("cron", "next", "--job", "report", "-c", str(config),
            "--after", "2026-03-28T00:00:00Z", "--count", "3")
    code, out, _ = run(*args)
    assert 0 == code
    due = [datetime.fromisoformat(line.replace("Z", "+00:00")) for line in out.split()]
    slots = list(itertools.islice(Cron("30 1 * * *", "Europe/London").after(
        datetime(2026, 3, 28, tzinfo=UTC)), 3))
    assert all(s <= d < s + timedelta(minutes=10) for s, d in zip(slots, due, strict=True))
    assert out == run(*args)[1]


def test_cron_next_for_an_at_job_without_jitter_is_its_times(tmp_path: Path) -> None:
    """An at job without jitter is due exactly at its times, UTC by default."""
    config = tmp_path / "cronduit.yaml"
    config.write_text(JOBS)
    _, out, _ = run("cron", "next", "--job", "plain", "-c", str(config),
                    "--after", "2026-06-01T00:00:00Z", "--count", "2")
    assert ["2026-06-01T05:17:00Z", "2026-06-02T05:17:00Z"] == out.split()


def test_cron_next_refuses_an_interval_job_and_an_unknown_one(tmp_path: Path) -> None:
    """An every job has no calendar slots; an unknown job name is an error."""
    config = tmp_path / "cronduit.yaml"
    config.write_text(JOBS)
    assert 2 == run("cron", "next", "--job", "tick", "-c", str(config))[0]
    code, _, err = run("cron", "next", "--job", "nope", "-c", str(config))
    assert 2 == code
    assert "no job named 'nope'" in err


def test_cron_next_needs_exactly_one_of_expression_and_job() -> None:
    """Neither, or both, is a usage error."""
    assert 2 == run("cron", "next")[0]


def test_a_tz_prefix_points_at_the_tz_option() -> None:
    """``cron next`` has no time_zone key: the refusal names --tz, with the zone given."""
    code, out, err = run("cron", "next", "TZ=Europe/Paris 0 9 * * *")
    assert (2, "", "cronduit: a TZ= prefix is not supported in the expression; give the zone "
                   "with --tz Europe/Paris instead\n") == (code, out, err)


def test_explain_refuses_a_tz_prefix_without_pointing_at_a_config_key() -> None:
    """Words do not depend on the zone: the refusal says to leave it out, and where a zone
    does go on this command line."""
    code, out, err = run("cron", "explain", "TZ=Europe/Paris 0 9 * * *")
    assert (2, "", "cronduit: a TZ= prefix is not supported in the expression; leave it out, "
                   "since the words do not depend on the zone (cron next takes a zone with "
                   "--tz)\n") == (code, out, err)


@pytest.mark.parametrize("knob", [["--dst-gap", "skip"], ["--dst-fold", "twice"],
                                  ["--dst-fold", "once"]])
def test_dst_knobs_on_a_wildcard_expression_exit_2(knob: list[str]) -> None:
    """A wildcard expression follows real time, so a DST knob given for it is refused, as
    the config refuses ``dst`` on such a job, even when it names the default."""
    code, out, err = run("cron", "next", "*/30 1 * * *", "--tz", "Europe/London", *knob)
    assert (2, "", f"cronduit: {knob[0]} has no effect: this cron expression's minute or hour "
                   "field starts with *, so it follows real time through DST changes\n") == (
        code, out, err)


def test_cron_next_json_is_one_slot_a_line_with_its_wall_clock_name() -> None:
    """The London gap night: the 01:30 slot runs at 02:00 BST, and its name says so; an
    expression has no jitter, so it is due at its slot."""
    code, out, _ = run("cron", "next", "30 1 * * *", "--tz", "Europe/London", "--json",
                       "--after", "2026-03-28T12:00:00Z", "--count", "2")
    assert (0, [
        {"slot": "2026-03-29T01:00:00Z", "name": "2026-03-29 02:00 Europe/London",
         "due": "2026-03-29T01:00:00Z"},
        {"slot": "2026-03-30T00:30:00Z", "name": "2026-03-30 01:30 Europe/London",
         "due": "2026-03-30T00:30:00Z"},
    ]) == (code, [json.loads(line) for line in out.splitlines()])


def test_cron_next_json_for_a_job_gives_the_slot_and_its_jittered_due_time(
    tmp_path: Path,
) -> None:
    """The due times are the ones the plain output prints; each slot is the one it jitters."""
    config = tmp_path / "cronduit.yaml"
    config.write_text(JOBS)
    args = ("cron", "next", "--job", "report", "-c", str(config),
            "--after", "2026-06-01T00:00:00Z", "--count", "2")
    _, plain, _ = run(*args)
    code, out, _ = run(*args, "--json")
    records = [json.loads(line) for line in out.splitlines()]
    assert (0, plain.split(), [("2026-06-01T00:30:00Z", "2026-06-01 01:30 Europe/London"),
                               ("2026-06-02T00:30:00Z", "2026-06-02 01:30 Europe/London")]) == (
        code, [r["due"] for r in records], [(r["slot"], r["name"]) for r in records])


@pytest.mark.parametrize("after", ["0001-01-01T00:00:00Z", "9999-12-31T00:00:00Z"])
def test_cron_next_refuses_an_instant_outside_the_calendar_it_searches(after: str) -> None:
    """Slots searched from year 1 or 9999 would leave the calendar (an OverflowError): the
    instants cronduit takes run from 1970 to 9000, said in one line."""
    assert (2, "", f"cronduit: --after: '{after}' is outside the instants cronduit takes (from "
                   "1970-01-01 to 9000-01-01, UTC)\n") == run("cron", "next", "* * * * *",
                                                               "--after", after)


def test_cron_next_stops_at_the_latest_instant_cronduit_takes() -> None:
    """Even 100,000 yearly slots end in the year 9000, not past the calendar."""
    code, out, _ = run("cron", "next", "@yearly", "--after", "8990-06-01T00:00:00Z",
                       "--count", "100000")
    assert (0, "9000-01-01T00:00:00Z", 10) == (code, out.split()[-1], len(out.split()))


def test_cron_next_without_after_counts_from_the_runtimes_clock() -> None:
    """"Now" is the runtime's clock, as for every command, so it can be set in a test."""
    clock = FakeClock(datetime(2026, 3, 28, 0, 0, tzinfo=UTC))
    result = CliRunner().invoke(cli, ["cron", "next", "30 1 * * *", "--count", "2"],
                                obj=Runtime(clock=clock))
    assert 0 == result.exit_code, result.output
    assert ["2026-03-28T01:30:00Z", "2026-03-29T01:30:00Z"] == result.output.split()
