"""Fuzzing the config loader: any text in, a config or located one-line errors out.

Six kinds of case, each a :class:`ConfigCase` (the text, the file name it is loaded as, and
the instant the engine is asked about):

- any text at all (control characters, surrogates, byte order marks, line separators);
- YAML token soup: the pieces YAML is made of (indentation, flow brackets, anchors, aliases,
  tags, merge keys, directives, quotes) in random order;
- documents of any shape, in the config's words or not, written as YAML or JSON;
- near-valid configs: a config that loads, mutated field by field (a value replaced by one of
  another type or out of every bound, a key dropped, added, misspelt or wrapped);
- the same config with its numbers and durations set anywhere from 0 to far past every
  bound, each of its own type, so that many of them load and reach the engine;
- deep nesting and alias bombs.

:func:`check` loads the text. The loader may refuse it only with :class:`ConfigErrors`, each
error naming the file, a line and a column inside the text, in a one-line message that does
not repeat :data:`CANARY` (written into the values that may be secret). A config that loads
is handed to :func:`engine_view`, which computes what the engine would from it (next slots,
deadlines, backoffs, catch-up windows) with the core's pure functions: a value the loader let
through must not overflow there either.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from cronduit.core.catchup import (
    arm_edited,
    arm_new,
    decide_firing,
    decide_interval_firing,
    slot_instant,
)
from cronduit.core.config import Config, ConfigError, ConfigErrors, Job, Retry, load_config
from cronduit.core.enums import EX_TEMPFAIL
from cronduit.core.lifecycle import AttemptReport, judge_attempt
from cronduit.core.timespec import (
    CalendarSchedule,
    IntervalSchedule,
    Slot,
    next_jittered,
    schedule_of,
)
from cronduit.executor.retry import parse_retry_after
from tests.fuzzing import cron as cron_fuzz
from tests.fuzzing.findings import Finding, expect
from tests.fuzzing.values import (
    RAW_NUMBERS,
    deep_json,
    deep_yaml,
    documents,
    mutated,
    parent_of,
    paths_of,
    scalars,
    texts,
    to_json,
    to_yaml,
    weighted,
)

CANARY = "canary-7f3a9e"
"""Written into values that may be secret (env values, commands, URLs, a workspace's git
remote): no error message may repeat it."""
SQLITE_INTEGER = 2**63
"""Counts the store keeps (``kept_runs``) must stay below SQLite's integer range."""
NO_RETRY = Retry()
"""What the engine retries by when a job has no ``retry``: only an exit with EX_TEMPFAIL."""

LONGEST_HINTS = tuple(hint for text in (b"9" * 12, b"999999999d", b"3650d")
                      if (hint := parse_retry_after(text)) is not None)
"""The longest waits a job can ask for in ``$CRONDUIT_RETRY_AFTER_FILE``, as the executor
reads them: a retry after one must not overflow either."""

FILENAMES = ("cronduit.yaml", "c.yml", "cronduit.json", "config")
ERROR_LINE = re.compile(r"[^\n]+:[1-9][0-9]*:[1-9][0-9]*: \S[^\n]*")


@dataclass(frozen=True)
class ConfigCase:
    """One input of the loader: ``text`` loaded as ``filename``, the engine asked at ``now``."""

    text: str
    filename: str
    now: datetime


# -- the check -----------------------------------------------------------------------------


def check(case: ConfigCase) -> None:
    """Load the case: a config whose engine view computes, or clean located errors."""
    try:
        config = load_config(case.text, case.filename)
    except ConfigErrors as errors:
        check_errors(errors, case)
        return
    engine_view(config, case.now)


def check_errors(errors: ConfigErrors, case: ConfigCase) -> None:
    """Every error names the file and a line and column inside the text, in one line."""
    expect(bool(errors.errors), "ConfigErrors without an error")
    lines = len(case.text.splitlines()) or 1
    for error in errors.errors:
        printed = str(error)
        expect(isinstance(error, ConfigError), "not a ConfigError: %r", error)
        expect(case.filename == error.filename, "another file named: %s", printed)
        expect(1 <= error.line <= lines + 1, "line outside the text: %s", printed)
        expect(error.column >= 1, "column outside the text: %s", printed)
        expect(ERROR_LINE.fullmatch(printed) is not None, "not FILE:LINE:COL: message: %r",
               printed)
        expect(CANARY not in printed, "an error repeats a secret value: %r", printed)
    expect(len(errors.errors) == len(str(errors).split("\n")), "errors run over lines: %r",
           str(errors))


def engine_view(config: Config, now: datetime) -> None:
    """What the engine computes from ``config`` at ``now``, with the core's pure functions:
    each timer's first slot and due time, a firing after an outage, a run's deadline, every
    retry's backoff, the catch-up window; none may raise."""
    settings = config.settings
    expect(settings.kept_runs < SQLITE_INTEGER, "kept_runs %d does not fit the store",
           settings.kept_runs)
    now + timedelta(seconds=settings.timeout)
    for job in config.jobs.values():
        deadline = now + timedelta(seconds=job.timeout)
        _retries(job, now, deadline)
        _timing(job, now)
        if job.workspace is not None:
            now - timedelta(seconds=job.workspace.retain_failed)
        if job.durable is not None:
            now + timedelta(seconds=job.durable.retention)
        expect(job.overlap.max_parallel < SQLITE_INTEGER, "max_parallel does not fit the store")
        expect(job.catch_up.max_runs < SQLITE_INTEGER, "max_runs does not fit the store")


def _retries(job: Job, now: datetime, deadline: datetime) -> None:
    retry = job.retry or NO_RETRY
    retry.worst_case_backoff  # noqa: B018 - computed for its overflow, if any
    reports = [AttemptReport(1), AttemptReport(EX_TEMPFAIL),
               *(AttemptReport(EX_TEMPFAIL, retry_after=hint) for hint in LONGEST_HINTS)]
    for attempt in range(1, min(retry.attempts, 100) + 1):
        for report in reports:
            verdict = judge_attempt(report, attempt, retry, now, deadline)
            if verdict.retry_at is not None:
                expect(now < verdict.retry_at < deadline, "a retry at %s, outside the run",
                       verdict.retry_at)


def _timing(job: Job, now: datetime) -> None:
    schedule = schedule_of(job)
    if schedule is None:
        return
    if isinstance(schedule, IntervalSchedule):
        firing = decide_interval_firing(schedule, now, now)
        decide_interval_firing(schedule, now - timedelta(days=3), now)
        expect(firing.next_due is not None and firing.next_due > now, "every re-arms in the past")
        return
    policy = job.catch_up
    due_of = _due_of(job, schedule)
    arming = arm_new(schedule, now, due_of)
    arm_edited(schedule, "a name that never ran", now, policy, due_of)
    if arming is None:
        raise Finding(f"a timed job with no slot after {now}: {job.cron or job.at}")
    expect(arming.due >= now, "armed for %s, before now", arming.due)
    later = arming.due + timedelta(hours=1)
    firing = decide_firing(schedule, arming.slot, None, later, policy, due_of)
    expect(firing.next_slot is not None, "the schedule ends after one slot")
    policy.admits((later - arming.due).total_seconds())


def _due_of(job: Job, schedule: CalendarSchedule) -> Callable[[Slot], datetime]:
    if not job.jitter:
        return slot_instant

    def due(slot: Slot) -> datetime:
        return next_jittered(schedule, job.name, slot, job.jitter)

    return due


# -- the cases -----------------------------------------------------------------------------

nows = st.datetimes(datetime(2020, 1, 1), datetime(2100, 1, 1), timezones=st.just(UTC))

MODEL_KEYS = (
    "settings", "jobs", "notifiers", "state", "listen", "timeout", "catch_up", "kept_runs",
    "secrets_file", "webhook_secret", "github_secret", "github_token", "api_token", "max_log",
    "url", "on", "format", "command", "run", "steps", "cron", "every", "at", "time_zone", "dst",
    "gap", "fold", "jitter", "webhook", "overlap", "default", "max_parallel", "timer",
    "manual", "event", "after", "retry", "attempts", "backoff", "max_backoff", "notify", "env",
    "inputs", "enum", "pattern", "description", "secrets", "dir", "workspace", "git", "mode",
    "retain_failed", "paused_on_start", "durable", "retention", "window", "max_runs",
    "events", "branches", "paths", "conclusions", "job", "outcomes", "id", "outputs", "name",
    "TARGET", "a", "<<", "", " ", "timezone",
)

DURATIONS = ("0s", "1s", "59s", "1m", "90m", "1h30m", "1d", "365d", "3650d", "3000000d",
             "9999999999999h", "99999999999999999999s", "1" * 5000 + "s", "1h1h", "-1s",
             "1.5h", "1 h", " 1h", "1H", "\u0663s", "\uff11s", "1d1s")
SIZES = ("1MiB", "64MiB", "1TiB", "2TiB", "0MiB", "1KiB", "99999999999999999999TiB",
         "1.5GiB", "64 MiB", "64mib", "1" * 5000 + "MiB")
COUNTS = (0, 1, 2, 100, 101, 2**31, 2**63 - 1, 2**63, 10**30, -1, True, 1.0, "5",
          *RAW_NUMBERS)
TIMES = ("00:00", "23:59", "24:00", "12:60", "7:05", "07:05 ", "0:0", 750, "12:30:00",
         ["05:17", "05:17"], [], ["23:59", "00:00"])
ZONES = ("UTC", "Europe/London", "Nope/Zone", "../etc/passwd", "", "utc", "Etc/GMT+12",
         "Etc/GMT-14", "Pacific/Kiritimati", "posixrules", "Factory", "localtime",
         "/usr/share/zoneinfo/UTC", "Europe/London\n", "EST5EDT", "America/St_Johns")
URLS = (f"https://h.example/{CANARY}", f"http://[::1/{CANARY}", f"http://h:99999/{CANARY}",
        f"ftp://h/{CANARY}", "https://", f"https://{CANARY}.example:0/")
LISTENS = ("127.0.0.1:0", ":8770", "[::1]:8770", "[zz]:1", "host:99999", "h" * 300 + ":1",
           "127.0.0.1:08770", "0.0.0.0:65535", "localhost:")
NAMES = ("a", "job", "Job", "1job", "j" * 63, "j" * 64, "a b", "a\nb", "CRONDUIT_X", "X",
         "TARGET", "build.VERSION", "-x")
EVENTS = ("push", "release.published", "check_suite.completed", "check_run.completed",
          "Push", "push.", ".push", "*", "pull_request.opened", "")
PATTERNS = ("main", "!main", "**", "src/**", "!", "[", "a[!b]", "\\", "a{b,c}", "***",
            "docs/*.md", "")
REGEXES = ("[0-9]+", "(a+)+$", "a{9999999999}", "(?P<", "", ".*", "\\", "[z-a]")

_BY_KEY: dict[str, tuple[Any, ...]] = {
    **dict.fromkeys(("timeout", "every", "backoff", "max_backoff", "jitter", "retention",
                     "retain_failed", "window", "catch_up"), DURATIONS),
    "max_log": SIZES,
    **dict.fromkeys(("kept_runs", "max_parallel", "max_runs", "attempts"), COUNTS),
    "at": TIMES,
    "time_zone": ZONES,
    "url": URLS,
    "listen": LISTENS,
    "events": (list(EVENTS[:4]), *EVENTS),
    "branches": PATTERNS,
    "paths": PATTERNS,
    "pattern": REGEXES,
    "job": NAMES,
    "id": NAMES,
}


_ANYTHING = documents(scalars, st.sampled_from(MODEL_KEYS) | texts, max_leaves=6)
_CRON_VALUES = st.one_of(cron_fuzz.cron_texts(), _ANYTHING)
_OTHER_VALUES = st.one_of(_ANYTHING, st.sampled_from(NAMES + EVENTS + DURATIONS))
_OWN_VALUES = {key: st.one_of(st.sampled_from(own), st.sampled_from(own), _ANYTHING)
               for key, own in _BY_KEY.items()}


def _field_values(key: str | int | None) -> st.SearchStrategy[Any]:
    """Values for a field: its own edge cases often, any value sometimes."""
    if key == "cron":
        return _CRON_VALUES
    return _OWN_VALUES.get(key, _OTHER_VALUES) if isinstance(key, str) else _OTHER_VALUES


BASE: dict[str, Any] = {
    "settings": {
        "state": ".cronduit", "listen": "127.0.0.1:8770", "timeout": "1h", "catch_up": "6h",
        "kept_runs": 20, "secrets_file": "secrets.env", "webhook_secret": "HOOK_KEY",
        "github_secret": "GH_KEY", "github_token": "GH_TOKEN", "api_token": "API_KEY",
        "max_log": "64MiB",
    },
    "notifiers": {
        "ops": {"url": f"https://hooks.example/{CANARY}", "on": ["failure", "timeout"],
                "format": "slack"},
    },
    "jobs": {
        "report": {"command": ["./report.sh", CANARY], "cron": "0 9,13,18 * * 1-5",
                   "time_zone": "Europe/London", "dst": {"gap": "skip", "fold": "twice"},
                   "jitter": "5m", "catch_up": {"window": "2h", "mode": "all", "max_runs": 3},
                   "retry": {"attempts": 3, "backoff": "30s", "max_backoff": "10m"},
                   "timeout": "2h", "notify": ["failure", "success"]},
        "refresh": {"run": f"make refresh {CANARY}", "at": ["05:17", "23:59"],
                    "time_zone": "America/St_Johns", "overlap": "skip", "catch_up": False},
        "tick": {"run": "./tick", "every": "60m", "jitter": "10s",
                 "overlap": {"timer": "queue", "default": "allow", "max_parallel": 2},
                 "env": {"REGION": CANARY}, "secrets": ["API_KEY"]},
        "post": {"run": "./post", "on": {"events": ["push"], "branches": ["main"],
                                         "paths": ["data/*.json", "!data/posted.json"]},
                 "workspace": {"git": f"https://{CANARY}@git.example/r.git", "mode": "fresh",
                               "retain_failed": "1d"}},
        "red-main": {"run": "./fix", "on": {"events": ["check_suite.completed"],
                                            "branches": ["main"],
                                            "conclusions": ["failure", "timed_out"]}},
        "poke": {"run": "./poke", "webhook": True, "paused_on_start": True,
                 "inputs": {"TARGET": {"enum": ["a", "b"], "default": "a",
                                       "description": "where"},
                            "COUNT": {"pattern": "[0-9]+", "default": "1"}}},
        "chained": {"run": "./next", "on": {"after": {"job": "tick",
                                                      "outcomes": ["success", "failure"]}},
                    "dir": "/tmp"},
        "by-hand": {"run": "./once", "catch_up": True},
    },
}


WRITERS: tuple[Callable[[Any], str], ...] = (
    to_yaml, lambda document: to_yaml(document, flow=True), to_json,
    lambda document: to_json(document, indent=2),
)
"""Block YAML, flow YAML, JSON on one line, indented JSON."""
_writers = st.sampled_from(WRITERS)


def _written(documents: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    return st.builds(lambda document, write: write(document), documents, _writers)


_DURATION_KEYS = frozenset(("timeout", "every", "backoff", "max_backoff", "jitter",
                            "retain_failed", "window"))
_COUNT_KEYS = frozenset(("kept_runs", "max_parallel", "max_runs", "attempts"))
_NUMBER_PATHS = tuple(path for path in paths_of(BASE)
                      if path[-1] in _DURATION_KEYS | _COUNT_KEYS | {"max_log"})
_magnitudes = st.one_of(st.integers(0, 100), st.integers(0, 10**6), st.integers(0, 10**13),
                        st.integers(0, 10**30), st.sampled_from([3650, 3651, 2**31, 2**63]))
_EXTREME = {
    "duration": st.builds("{}{}".format, _magnitudes, st.sampled_from("dhms")),
    "count": _magnitudes,
    "size": st.builds("{}{}".format, _magnitudes, st.sampled_from(["KiB", "MiB", "GiB", "TiB"])),
}


def _kind(key: str) -> str:
    return "duration" if key in _DURATION_KEYS else "count" if key in _COUNT_KEYS else "size"


@st.composite
def _with_extremes(draw: st.DrawFn) -> Any:
    document = copy.deepcopy(BASE)
    for path in draw(st.lists(st.sampled_from(_NUMBER_PATHS), min_size=1, max_size=3,
                              unique=True)):
        parent_of(document, path)[path[-1]] = draw(_EXTREME[_kind(path[-1])])
    return document


def extreme_numbers() -> st.SearchStrategy[str]:
    """The base config with one to three of its numbers and durations set anywhere from 0 to
    far past every bound, each still of its own type: a config that may well load, so that
    its numbers reach the engine."""
    return _written(_with_extremes())


def near_valid() -> st.SearchStrategy[str]:
    """The base config, mutated one to four times, as YAML (block or flow) or JSON."""
    return _written(mutated(BASE, _field_values, st.sampled_from(MODEL_KEYS) | texts))


YAML_PIECES = (
    "settings:", "jobs:", "notifiers:", "  ", "    ", "\n", "\n", "- ", ": ", ":", "{", "}",
    "[", "]", ", ", "&a ", "*a", "*b", "&b ", "!!str ", "!!int ", "!!float ", "!!binary ",
    "!!map ", "!!seq ", "!foo ", "!!python/object/apply:os.system ", "! ", "<<: ", "<<",
    "---\n", "...\n", "%YAML 1.2\n", "%TAG !e! tag:e.example,2000:\n", "# c", "'", '"',
    "|\n", ">-\n", "? ", "\t", "run: x", "cron: '* * * * *'", "every: 1s", "0x1F", "0o17",
    "1e999", ".nan", "-.inf", "~", "null", "true", "\ufeff", "\x00", "\u2028", "\r", "\x85",
    "a", "report", "timeout: 1h", "command: [a]", "at: [12:30]", "on: {events: [push]}",
    "\\", "\\u00", "%", "@", "`", "=", "*/5 * * * *", "0" * 30, "-" * 3,
)


@st.composite
def yaml_soup(draw: st.DrawFn) -> str:
    """Pieces of YAML syntax strung together at random."""
    return "".join(draw(st.lists(st.sampled_from(YAML_PIECES), max_size=40)))


def any_shape() -> st.SearchStrategy[str]:
    """A document of any shape: mostly under the config's own keys, sometimes not."""
    keys = st.sampled_from(MODEL_KEYS) | texts
    leaves = st.one_of(scalars, st.sampled_from(DURATIONS + SIZES + TIMES[:6] + ZONES + NAMES),
                       cron_fuzz.cron_texts())
    body = documents(leaves, keys, max_leaves=40)
    jobs = st.dictionaries(st.sampled_from(NAMES) | texts,
                           st.dictionaries(st.sampled_from(MODEL_KEYS), leaves, max_size=8),
                           max_size=4)
    return _written(st.one_of(
        st.dictionaries(st.sampled_from(("settings", "jobs", "notifiers")), body, max_size=3),
        st.builds(lambda given: {"jobs": given}, jobs),
        body,
    ))


_TEXTS = weighted(
    (6, near_valid()), (4, extreme_numbers()), (4, any_shape()), (2, yaml_soup()),
    (1, st.text(st.characters(codec=None), max_size=200)), (1, st.text(max_size=60)),
    (1, deep_yaml()), (1, deep_json()),
)


@st.composite
def config_cases(draw: st.DrawFn) -> ConfigCase:
    """Any of the five kinds of case, loaded as any of the file names."""
    return ConfigCase(draw(_TEXTS), draw(st.sampled_from(FILENAMES)), draw(nows))
