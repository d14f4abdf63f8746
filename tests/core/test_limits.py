"""Every number and duration of the config has an upper bound, refused at ``check`` with
FILE:LINE:COL, the field and the bound: the bound itself passes, one more does not.

Each case is one line of YAML with ``{}`` where the value goes; the error must point at
that value. Durations are refused one second past their bound, counts one past theirs.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from cronduit.core.catchup import decide_interval_firing
from cronduit.core.config import ConfigErrors, Job, Retry, Settings, load_config
from cronduit.core.config.model import Durable
from cronduit.core.durations import DurationTooLong, format_duration, parse_duration
from cronduit.core.lifecycle import AttemptReport, judge_attempt
from cronduit.core.limits import (
    MAX_ATTEMPTS,
    MAX_CATCH_UP_RUNS,
    MAX_DURATION,
    MAX_KEPT_RUNS,
    MAX_PARALLEL,
    MAX_RETENTION,
)
from cronduit.core.timespec import IntervalSchedule, cron_schedule, next_jittered

TEN_YEARS = "3650d"
ONE_SECOND_MORE = "3650d1s"


def job(keys: str) -> str:
    """A template of one job with ``keys`` (their braces doubled, ``{}`` for the value)."""
    return "jobs:\n  j: {{run: x, " + keys + "}}\n"


def _case(template: str, at_bound: str, over: str, field: str, bound: str) -> object:
    return pytest.param(template, at_bound, over, f"{field}: must be at most {bound}", id=field)


CASES = [
    _case("settings: {{timeout: {}}}\n", TEN_YEARS, ONE_SECOND_MORE, "settings.timeout",
          TEN_YEARS),
    _case("settings: {{catch_up: {}}}\n", TEN_YEARS, ONE_SECOND_MORE, "settings.catch_up",
          TEN_YEARS),
    _case("settings: {{catch_up: {{window: {}}}}}\n", TEN_YEARS, ONE_SECOND_MORE,
          "settings.catch_up.window", TEN_YEARS),
    _case("settings: {{kept_runs: {}}}\n", str(MAX_KEPT_RUNS), str(MAX_KEPT_RUNS + 1),
          "settings.kept_runs", str(MAX_KEPT_RUNS)),
    _case("settings: {{max_log: {}}}\n", "1TiB", "1025GiB", "settings.max_log", "1TiB"),
    _case(job("every: {}"), TEN_YEARS, ONE_SECOND_MORE, "jobs.j.every", TEN_YEARS),
    _case(job("timeout: {}"), TEN_YEARS, ONE_SECOND_MORE, "jobs.j.timeout", TEN_YEARS),
    _case(job("cron: '0 3 * * *', jitter: {}"), TEN_YEARS, ONE_SECOND_MORE,
          "jobs.j.jitter", TEN_YEARS),
    _case(job("cron: '0 3 * * *', catch_up: {}"), TEN_YEARS, ONE_SECOND_MORE,
          "jobs.j.catch_up", TEN_YEARS),
    _case(job("at: ['03:00'], catch_up: {{window: 1d, mode: all, max_runs: {}}}"),
          str(MAX_CATCH_UP_RUNS), str(MAX_CATCH_UP_RUNS + 1), "jobs.j.catch_up.max_runs",
          str(MAX_CATCH_UP_RUNS)),
    _case(job("overlap: {{default: allow, max_parallel: {}}}"), str(MAX_PARALLEL),
          str(MAX_PARALLEL + 1), "jobs.j.overlap.max_parallel", str(MAX_PARALLEL)),
    _case(job("timeout: 3650d, retry: {{attempts: {}, backoff: 1s, max_backoff: 1s}}"),
          str(MAX_ATTEMPTS), str(MAX_ATTEMPTS + 1), "jobs.j.retry.attempts",
          str(MAX_ATTEMPTS)),
    _case(job("retry: {{backoff: {}, max_backoff: 3650d}}"), TEN_YEARS,
          ONE_SECOND_MORE, "jobs.j.retry.backoff", TEN_YEARS),
    _case(job("retry: {{max_backoff: {}}}"), TEN_YEARS, ONE_SECOND_MORE,
          "jobs.j.retry.max_backoff", TEN_YEARS),
    _case(job("workspace: {{git: repo, retain_failed: {}}}"), TEN_YEARS,
          ONE_SECOND_MORE, "jobs.j.workspace.retain_failed", TEN_YEARS),
]


def _where(text: str, value: str) -> str:
    """``LINE:COL`` of ``value`` in ``text`` (the last occurrence: keys come first)."""
    offset = text.rindex(value)
    line = text.count("\n", 0, offset) + 1
    return f"{line}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


@pytest.mark.parametrize(("template", "at_bound", "over", "message"), CASES)
def test_each_bound_passes_check(template: str, at_bound: str, over: str,
                                 message: str) -> None:
    """The largest value allowed is allowed."""
    load_config(template.format(at_bound), "c.yaml")


@pytest.mark.parametrize(("template", "at_bound", "over", "message"), CASES)
def test_one_past_each_bound_is_refused_at_the_value_naming_the_field_and_the_bound(
        template: str, at_bound: str, over: str, message: str) -> None:
    """``FILE:LINE:COL: field: must be at most BOUND``, and no other error."""
    text = template.format(over)
    with pytest.raises(ConfigErrors) as caught:
        load_config(text, "c.yaml")
    assert [f"c.yaml:{_where(text, over)}: {message}"] == [str(e) for e in caught.value.errors]


@pytest.mark.parametrize("huge", ["9999999999999h", "3000000d", "9999999d",
                                  "9" * 5_000 + "s", "0" * 5_000 + "3651d"])
def test_huge_durations_are_refused_without_being_computed(huge: str) -> None:
    """The values that once passed check and crashed the daemon, and numbers far past what
    Python converts: all refused as past the bound."""
    text = job("every: {}").format(huge)
    with pytest.raises(ConfigErrors) as caught:
        load_config(text, "c.yaml")
    assert ["c.yaml:2:22: jobs.j.every: must be at most 3650d"] == [
        str(e) for e in caught.value.errors]


@pytest.mark.parametrize("written", ["1" + "0" * 30, "9" * 5_000, "0x" + "f" * 200,
                                     "-" + "9" * 200, "0" * 5_000 + "5"])
def test_a_whole_number_longer_than_every_bound_is_refused_at_its_position(
        written: str) -> None:
    """``kept_runs: 10^30`` is refused by its bound; a number of more than 100 digits by its
    length, never converted (Python refuses to convert numbers of thousands of digits)."""
    text = f"settings:\n  kept_runs: {written}\n"
    with pytest.raises(ConfigErrors) as caught:
        load_config(text, "c.yaml")
    message = ("a number of more than 100 digits: past every bound cronduit takes"
               if len(written) > 100 else "must be at most 1000000")
    assert [f"c.yaml:2:14: settings.kept_runs: {message}"] == [
        str(e) for e in caught.value.errors]


def test_a_json_number_longer_than_every_bound_is_refused_at_its_position() -> None:
    """JSON is read by ``json``, which would refuse such a number with a bare ValueError."""
    text = '{"settings": {"kept_runs": ' + "9" * 5_000 + "}}"
    with pytest.raises(ConfigErrors) as caught:
        load_config(text, "c.json")
    assert ["c.json:1:28: settings.kept_runs: a number of more than 100 digits: past every "
            "bound cronduit takes"] == [str(e) for e in caught.value.errors]


def test_records_built_by_code_keep_the_same_bounds() -> None:
    """Seconds given by code pass the bounds the file's durations pass."""
    assert MAX_DURATION == Job(name="j", run="x", every=MAX_DURATION).every
    with pytest.raises(ValidationError, match="must be at most 3650d"):
        Job(name="j", run="x", every=MAX_DURATION + 1)
    with pytest.raises(ValidationError, match="must be at most 30d"):
        Durable(retention=MAX_RETENTION + 1)
    with pytest.raises(ValidationError, match="less than or equal to 1000000"):
        Settings(kept_runs=MAX_KEPT_RUNS + 1)
    with pytest.raises(ValidationError, match="must be at most 3650d"):
        Retry(backoff=MAX_DURATION + 1)


def test_durable_retention_is_at_most_thirty_days_and_says_so() -> None:
    """A field with a bound below ten years names its own, even for a number far past both."""
    assert MAX_RETENTION == Durable.model_validate({"retention": "30d"}).retention
    for written in ("30d1s", "9" * 50 + "d"):
        with pytest.raises(ValidationError, match="must be at most 30d"):
            Durable.model_validate({"retention": written})


def test_parse_duration_refuses_past_ten_years_or_the_maximum_asked() -> None:
    """The one parser every duration goes through (config, ``job wait --timeout``, ``job
    pause --until``) never returns more than ten years."""
    assert MAX_DURATION == parse_duration("3650d")
    assert 90 == parse_duration("0" * 5_000 + "90s")
    assert 3600 == parse_duration("1h", maximum=3600)
    for text, maximum in (("3650d1s", MAX_DURATION), ("1h1s", 3600),
                          ("3651d", 10 * MAX_DURATION)):
        with pytest.raises(DurationTooLong, match="must be at most "):
            parse_duration(text, maximum)


# -- what the engine computes from what the loader accepts ---------------------------------

NOW = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9800, 1, 1),
                   timezones=st.just(UTC))
SECONDS = st.one_of(
    st.integers(1, MAX_DURATION),
    st.sampled_from([1, MAX_DURATION - 1, MAX_DURATION, MAX_DURATION + 1]),
    st.integers(MAX_DURATION, 10**15),
)
"""Durations mostly inside the bound, at its edge, and past it (which the loader refuses)."""


def _loaded(keys: str) -> Job | None:
    """Job ``j`` with ``keys``, if the loader accepts it."""
    try:
        return load_config("jobs:\n  j: {run: x, " + keys + "}\n", "c.yaml").jobs["j"]
    except ConfigErrors:
        return None


@settings(max_examples=300, deadline=None)
@given(every=SECONDS, timeout=SECONDS, backoff=SECONDS, max_backoff=SECONDS, jitter=SECONDS,
       window=SECONDS, attempts=st.integers(1, 2 * MAX_ATTEMPTS), now=NOW,
       hint=st.one_of(st.none(), st.integers(0, 10**15)))
def test_every_duration_the_loader_accepts_can_be_computed_with(
        every: int, timeout: int, backoff: int, max_backoff: int, jitter: int, window: int,
        attempts: int, now: datetime, hint: int | None) -> None:
    """Whatever the loader accepts, the engine's arithmetic on it never overflows, for any
    clock up to the year 9800: the next slot plus every, now plus the timeout, each retry's
    time (from the backoff, or from any hint a job writes), a jittered cron slot, lateness
    against the catch-up window."""
    interval = _loaded(f"every: {format_duration(every)}")
    if interval is not None:
        assert interval.every is not None
        step = timedelta(seconds=interval.every)
        for armed in (now, now - step, now + step):
            decide_interval_firing(IntervalSchedule(interval.every), armed, now)
    retrying = _loaded(f"timeout: {format_duration(timeout)}, retry: {{attempts: {attempts}, "
                       f"backoff: {format_duration(backoff)}, "
                       f"max_backoff: {format_duration(max(backoff, max_backoff))}}}")
    if retrying is not None:
        assert retrying.retry is not None
        deadline = now + timedelta(seconds=retrying.timeout)
        for attempt in range(1, retrying.retry.attempts + 1):
            for retry_after in (None, hint):
                judge_attempt(AttemptReport(exit_status=1, retry_after=retry_after), attempt,
                              retrying.retry, now, deadline)
    timed = _loaded(f"cron: '0 0 29 2 *', jitter: {format_duration(jitter)}, "
                    f"catch_up: {format_duration(window)}")
    if timed is not None:
        calendar = cron_schedule("0 0 29 2 *")
        slot = calendar.next_after(now)
        if slot is not None:
            next_jittered(calendar, "j", slot, timed.jitter)
        since_epoch = (now - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()
        timed.catch_up.admits(since_epoch)


@settings(max_examples=50, deadline=None)
@given(now=NOW)
def test_the_longest_durations_at_once_can_be_computed_with(now: datetime) -> None:
    """Every duration at its bound in one job: the largest sums the engine makes."""
    job = _loaded("every: 3650d, timeout: 3650d, retry: {attempts: 100, backoff: 1s, "
                  "max_backoff: 1d}")
    assert job is not None
    assert job.every is not None
    assert job.retry is not None
    firing = decide_interval_firing(IntervalSchedule(job.every), now, now)
    assert firing.next_due == now.replace(microsecond=0) + timedelta(seconds=MAX_DURATION)
    verdict = judge_attempt(AttemptReport(exit_status=75, retry_after=10**15), 1, job.retry,
                            now, now + timedelta(seconds=job.timeout))
    assert "no time left before the deadline to retry" in verdict.reason
