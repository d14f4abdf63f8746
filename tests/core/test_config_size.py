"""The size limits of a config file are real limits, with messages that say what they are:
a file of 100,000 jobs loads; what is refused is an alias bomb or a file past 64 MiB."""

from __future__ import annotations

import gc

import pytest

from cronduit.core.config import ConfigErrors, load_config
from cronduit.core.limits import MAX_CONFIG_CHARS


def _jobs(count: int, line: str) -> str:
    """A config of ``count`` jobs, each one line: ``line`` formatted with its index."""
    return "jobs:\n" + "".join(f"  job-{i}: {line.format(i=i)}\n" for i in range(count))


def test_a_config_of_100000_plain_jobs_loads() -> None:
    """Once refused as "too many values (alias expansion?)" from 35,000 jobs on: the values
    written in a file are the file's, and are not counted against the alias bound."""
    config = load_config(_jobs(100_000, '{{run: "echo {i}", every: 1m}}'), "c.yaml")
    assert 100_000 == len(config.jobs)
    assert ("echo 99999", 60) == (config.jobs["job-99999"].run, config.jobs["job-99999"].every)


def test_jobs_that_share_defaults_by_alias_load_too() -> None:
    """Aliases of a defaults mapping, across 20,000 jobs, add 60,000 values: far inside the
    bound, and read as quickly as the same file written out."""
    text = _jobs(20_000, '{{run: "echo {i}", every: 1m, retry: *retry}}').replace(
        "jobs:\n", "jobs:\n  first: {run: x, retry: &retry {attempts: 3, backoff: 10s}}\n")
    config = load_config(text, "c.yaml")
    retry = config.jobs["job-19999"].retry
    assert 20_001 == len(config.jobs)
    assert retry is not None
    assert (3, 10) == (retry.attempts, retry.backoff)


def test_a_file_past_64_mib_is_refused_where_the_limit_falls() -> None:
    """A file of exactly 64 MiB (in characters) is read; one character more is refused, at
    that character."""
    text = "jobs: {}\n" + ("# " + "x" * 1021 + "\n") * 65_535  # comment lines of 1 KiB
    text += "#" * (MAX_CONFIG_CHARS - len(text))
    assert {} == dict(load_config(text, "c.yaml").jobs)
    assert ["c.yaml:65537:1016: the file is longer than 67108864 characters (64MiB), the most "
            "cronduit reads"] == _errors(text + "#")


def _errors(text: str) -> list[str]:
    with pytest.raises(ConfigErrors) as caught:
        load_config(text, "c.yaml")
    return [str(error) for error in caught.value.errors]


def test_the_garbage_collector_runs_after_a_config_loads() -> None:
    """Loading leaves the process's collector as it found it: a daemon that reloads its
    config keeps collecting cycles in every thread."""
    config = load_config(_jobs(1_000, '{{run: "echo {i}", every: 1m}}'), "c.yaml")
    assert (1_000, True) == (len(config.jobs), gc.isenabled())


def test_the_garbage_collector_runs_after_a_config_is_refused() -> None:
    """A refused config leaves the collector running too."""
    errors = _errors(_jobs(1_000, '{{run: "echo {i}", every: 1m, timezone: UTC}}'))
    assert (1_000, True) == (len(errors), gc.isenabled())
