"""What a loaded config holds: stored forms, defaults, inheritance, and derived values."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest
from pydantic import ValidationError

from cronduit.core.config import (
    CatchUp,
    Config,
    ConfigErrors,
    Job,
    OverlapSpec,
    Retry,
    Settings,
    Step,
    load_config,
)
from cronduit.core.cron import DstPolicy
from cronduit.core.enums import CatchUpMode, DstFold, DstGap, Outcome, Overlap, TriggerKind
from cronduit.core.inputs import InputSpec

EXAMPLE = Path(__file__).parents[2] / "examples" / "cronduit.yaml"


def load(text: str) -> Config:
    return load_config(dedent(text), "c.yaml")


def job(text: str, settings: str = "") -> Job:
    """The one job ``a`` declared by the flow mapping ``text``, with optional settings."""
    prefix = f"settings: {settings}\n" if settings else ""
    return load(f"{prefix}jobs:\n  a: {text}\n").jobs["a"]


# -- the spec's own example --------------------------------------------------------------


SPEC_EXAMPLE = """\
    settings:
      state: .cronduit
      listen: 127.0.0.1:8770
      timeout: 1h
      catch_up: 6h
      kept_runs: 20
      secrets_file: secrets.env
      webhook_secret: HOOK_KEY
      github_secret: GH_KEY
      api_token: API_KEY
    notifiers:
      ops: {url: "https://hooks.example/ops", on: [failure, timeout, skipped]}
    jobs:
      report:     {command: ["./report.sh"], cron: "0 9,13,18 * * *", time_zone: Europe/London}
      refresh:    {run: "make refresh", at: ["05:17"]}
      tick:       {run: "./tick", every: 60m}
      post:       {run: "./post", on: {events: [push], branches: [main],
                                       paths: ["data/reels/*.json", "!data/reels/posted.json"]}}
      red-main:   {run: "./fix", on: {events: [check_suite.completed], branches: [main],
                                      conclusions: [failure, timed_out]}}
      poke:       {run: "./poke", webhook: true}
      by-hand:    {run: "./once"}
    """


def test_the_spec_example_loads_with_jobs_in_file_order() -> None:
    """SPEC §1's example is valid, and ``jobs`` keeps the order of the file."""
    config = load(SPEC_EXAMPLE)
    assert ["report", "refresh", "tick", "post", "red-main", "poke", "by-hand"] == list(config.jobs)
    assert "c.yaml" == config.filename


def test_the_spec_example_holds_stored_forms() -> None:
    """Durations in seconds, times in minutes after midnight, outcomes as enum members."""
    config = load(SPEC_EXAMPLE)
    assert 3600 == config.settings.timeout
    assert (5 * 60 + 17,) == config.jobs["refresh"].at
    assert 3600 == config.jobs["tick"].every
    assert ("./report.sh",) == config.jobs["report"].command
    assert (Outcome.FAILURE, Outcome.TIMEOUT, Outcome.SKIPPED) == config.notifiers["ops"].on
    assert ("failure", "timed_out") == config.jobs["red-main"].on.conclusions  # type: ignore[union-attr]


def test_the_example_file_loads() -> None:
    """``examples/cronduit.yaml`` is a valid quick-start config."""
    config = load_config(EXAMPLE.read_text(encoding="utf-8"), str(EXAMPLE))
    assert ".cronduit" == config.settings.state
    assert {"morning-report", "heartbeat", "refresh", "poke", "say-hello"} == set(config.jobs)


# -- settings ----------------------------------------------------------------------------


def test_settings_default_when_the_section_is_left_out() -> None:
    """A config with only jobs gets every documented default."""
    settings = load("jobs: {}\n").settings
    assert Settings() == settings
    assert (".cronduit", "127.0.0.1:8770", 3600, 20) == (
        settings.state,
        settings.listen,
        settings.timeout,
        settings.kept_runs,
    )
    assert CatchUp(window=6 * 3600, mode=CatchUpMode.LATEST, max_runs=10) == settings.catch_up


def test_max_log_is_64mib_unless_set_and_held_in_bytes() -> None:
    """The default cap, and a cap as written in the file, both as a number of bytes."""
    assert [64 << 20, 3 << 30] == [
        load("jobs: {}\n").settings.max_log,
        load("settings: {max_log: 3GiB}\njobs: {}\n").settings.max_log,
    ]


@pytest.mark.parametrize(
    ("listen", "expected"),
    [
        ("127.0.0.1:8770", ("127.0.0.1", 8770)),
        ("[::1]:80", ("::1", 80)),
        ("localhost:1", ("localhost", 1)),
    ],
)
def test_listen_addresses_split_into_host_and_port(listen: str, expected: tuple[str, int]) -> None:
    """IPv6 hosts are written in brackets and come out without them."""
    assert expected == load(f"settings: {{listen: '{listen}'}}\n").settings.listen_address


def test_a_postgresql_state_url_is_a_valid_setting_for_code() -> None:
    """``state`` is a directory or a PostgreSQL URL (SPEC §10): the model takes the URL."""
    assert Settings(state="postgresql://cronduit@db/cronduit").uses_postgres


def test_a_postgresql_state_url_in_a_file_is_taken_with_its_node_settings() -> None:
    """A file names a PostgreSQL state with this daemon's node, its lease and where its
    runs' files go (SPEC §10)."""
    config = load("settings:\n  state: 'postgresql://cronduit@db/cronduit'\n  node: web-1.a\n"
                  "  lease: 1m\n  runs_dir: /var/lib/cronduit\n  state_password: PG_PASS\n")
    settings = config.settings
    assert (True, "web-1.a", 60, "/var/lib/cronduit", "PG_PASS") == (
        settings.uses_postgres, settings.node, settings.lease, settings.runs_dir,
        settings.state_password)


def test_node_settings_have_their_defaults() -> None:
    """No node name (the host's), a 30 s lease, runs beside the config."""
    settings = load("settings: {state: 'postgresql://db/x'}\n").settings
    assert (None, 30, None) == (settings.node, settings.lease, settings.runs_dir)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("settings: {node: '-x'}", "c.yaml:1:18: settings.node: must be 1 to 63 letters, digits, "
         "dots, dashes or underscores, starting with a letter or digit"),
        ("settings: {node: 'a b'}", "c.yaml:1:18: settings.node: must be 1 to 63 letters, "
         "digits, dots, dashes or underscores, starting with a letter or digit"),
        (f"settings: {{node: {'a' * 64}}}", "c.yaml:1:18: settings.node: must be 1 to 63 "
         "letters, digits, dots, dashes or underscores, starting with a letter or digit"),
        ("settings: {lease: 2s}", "c.yaml:1:19: settings.lease: must be at least 3s"),
        ("settings: {lease: 11m}", "c.yaml:1:19: settings.lease: must be at most 10m"),
        ("settings: {runs_dir: /r}", "c.yaml:1:22: settings.runs_dir: applies only with a "
         "postgresql:// state; with SQLite the state directory holds the runs' logs and outputs"),
        ("jobs: {j: {run: x, nodes: []}}", "c.yaml:1:27: jobs.j.nodes: must list at "
         "least 1 node"),
        ("jobs: {j: {run: x, nodes: ['a/b']}}", "c.yaml:1:28: jobs.j.nodes[0]: must be a node "
         "name, with * and ? standing for any characters"),
        ("jobs: {j: {run: x, nodes: [a, a]}}", "c.yaml:1:31: jobs.j.nodes[1]: repeats 'a' "
         "(first at [0])"),
    ],
)
def test_node_settings_are_refused_at_the_value_naming_the_rule(line: str, expected: str) -> None:
    with pytest.raises(ConfigErrors) as caught:
        load(line + "\n")
    assert [expected] == [str(error) for error in caught.value.errors]


def test_a_job_names_the_nodes_it_may_run_on() -> None:
    job = load("jobs: {backup: {run: x, nodes: ['db-*', disk1]}}\n").jobs["backup"]
    assert ("db-*", "disk1") == job.nodes


def test_empty_sections_read_as_empty() -> None:
    """``jobs:`` with every job commented out is a config with no jobs."""
    config = load("settings:\nnotifiers:\njobs:\n")
    assert ({}, {}) == (dict(config.notifiers), dict(config.jobs))


# -- jobs inherit from settings ----------------------------------------------------------


def test_a_job_inherits_timeout_and_catch_up_from_settings() -> None:
    """Per-job values default to the settings, not to the built-in defaults."""
    inherited = job("{run: x}", settings="{timeout: 10m, catch_up: false}")
    assert (600, CatchUp(window=0)) == (inherited.timeout, inherited.catch_up)


def test_a_job_overrides_what_it_inherits() -> None:
    """A job's own timeout and catch_up win."""
    own = job("{run: x, cron: '0 * * * *', timeout: 5m, catch_up: 1h}", settings="{timeout: 10m}")
    assert (300, CatchUp(window=3600)) == (own.timeout, own.catch_up)


@pytest.mark.parametrize(
    ("form", "expected"),
    [
        ("true", CatchUp(window=None)),
        ("false", CatchUp(window=0)),
        ("90m", CatchUp(window=5400)),
        (
            "{window: 1d, mode: all, max_runs: 3}",
            CatchUp(window=86_400, mode=CatchUpMode.ALL, max_runs=3),
        ),
        ("{window: true, mode: all}", CatchUp(window=None, mode=CatchUpMode.ALL)),
    ],
)
def test_catch_up_forms(form: str, expected: CatchUp) -> None:
    """true is no limit, false never late, a duration a window, a mapping all three."""
    assert expected == job(f"{{run: x, cron: '0 * * * *', catch_up: {form}}}").catch_up


# -- job defaults and forms --------------------------------------------------------------


def test_job_defaults() -> None:
    """An untimed job gets the documented defaults."""
    plain = job("{run: echo hi}")
    assert ("UTC", DstPolicy(), 0, False, False) == (
        plain.time_zone,
        plain.dst,
        plain.jitter,
        plain.webhook,
        plain.paused_on_start,
    )
    assert ((Outcome.FAILURE, Outcome.TIMEOUT), None, None) == (plain.notify, plain.retry, plain.on)
    assert (OverlapSpec(), {}, {}, ()) == (plain.overlap, plain.env, plain.inputs, plain.secrets)


def test_times_of_day_are_sorted_minutes_after_midnight() -> None:
    """``at`` is stored sorted, whatever the file's order; a single string is one time."""
    assert (0, 330, 1439) == job("{run: x, at: ['23:59', '05:30', '00:00']}").at
    assert (750,) == job("{run: x, at: '12:30'}").at


def test_dst_policy_is_read_into_the_cron_modules_record() -> None:
    """``dst: {gap, fold}`` becomes a ``DstPolicy``."""
    timed = job("{run: x, cron: '30 2 * * *', dst: {gap: skip, fold: twice}}")
    assert DstPolicy(DstGap.SKIP, DstFold.TWICE) == timed.dst


def test_overlap_as_a_word_sets_the_default_policy() -> None:
    """``overlap: skip`` applies to every trigger kind."""
    spec = job("{run: x, overlap: skip}").overlap
    assert [Overlap.SKIP] * 5 == [spec.of(kind) for kind in TriggerKind]


def test_overlap_per_trigger_kind() -> None:
    """Kinds not listed fall back to ``default``."""
    spec = job(
        "{run: x, overlap: {timer: queue, manual: allow, default: skip, max_parallel: 2}}"
    ).overlap
    assert {TriggerKind.TIMER: Overlap.QUEUE, TriggerKind.MANUAL: Overlap.ALLOW} == spec.by_kind
    assert (Overlap.SKIP, Overlap.ALLOW, 2) == (
        spec.of(TriggerKind.WEBHOOK),
        spec.of(TriggerKind.MANUAL),
        spec.max_parallel,
    )


def test_inputs_become_input_specs() -> None:
    """Declarations are stored as the inputs module's records."""
    declared = job("{run: x, inputs: {DAY: {pattern: '[0-9]+', default: '1', description: day}}}")
    assert {"DAY": InputSpec("DAY", None, "[0-9]+", "1", "day")} == declared.inputs


def test_conclusions_are_stored_lower_case() -> None:
    """They compare without case, so they are kept in one case."""
    events = job(
        "{run: x, on: {events: [check_run.completed], conclusions: [TIMED_OUT]}}",
        "{github_secret: G}",
    )
    assert ("timed_out",) == events.on.conclusions  # type: ignore[union-attr]


def test_on_gives_the_matching_rule_for_deliveries() -> None:
    """``OnSpec.rule`` is what the HTTP edge hands to ``matching.rule_matches``."""
    events = job(
        "{run: x, on: {events: [push], branches: [main], paths: ['src/**']}}", "{github_secret: G}"
    )
    rule = events.on.rule  # type: ignore[union-attr]
    assert (("push",), ("main",), ("src/**",), ()) == (
        rule.events,  # type: ignore[union-attr]
        rule.branches,  # type: ignore[union-attr]
        rule.paths,  # type: ignore[union-attr]
        rule.conclusions,  # type: ignore[union-attr]
    )


def test_after_defaults_to_success() -> None:
    """Chaining without outcomes means after a successful run."""
    config = load("jobs:\n  a: {run: x}\n  b: {run: y, on: {after: {job: a}}}\n")
    after = config.jobs["b"].on.after  # type: ignore[union-attr]
    assert ("a", (Outcome.SUCCESS,)) == (after.job, after.outcomes)  # type: ignore[union-attr]


# -- retry -------------------------------------------------------------------------------


def test_retry_sleeps_double_up_to_the_cap() -> None:
    """Backoff doubles after each failure and never exceeds max_backoff (SPEC §5)."""
    retry = Retry(attempts=6, backoff=30, max_backoff=100)
    assert [30, 60, 100, 100, 100] == [retry.delay_after(n) for n in range(1, 6)]
    assert 390 == retry.worst_case_backoff


def test_a_single_attempt_never_sleeps() -> None:
    """The default retry is no retry."""
    assert 0 == Retry().worst_case_backoff


def test_a_step_inherits_the_jobs_retry_unless_it_has_its_own() -> None:
    """``retry_for`` says which retry governs a step."""
    steps = (Step(id="a", run="x"), Step(id="b", run="y", retry=Retry(attempts=3)))
    steps_job = Job(name="a", timeout=3600, retry=Retry(attempts=2), steps=steps)
    first, second = steps_job.steps or ()
    assert (Retry(attempts=2), Retry(attempts=3)) == (
        steps_job.retry_for(first),
        steps_job.retry_for(second),
    )


# -- timing keys -------------------------------------------------------------------------


def test_is_timed_means_cron_or_at() -> None:
    """Intervals are not calendar timings."""
    assert [True, True, False, False] == [
        job(spec).is_timed
        for spec in (
            "{run: x, cron: '0 * * * *'}",
            "{run: x, at: ['01:00']}",
            "{run: x, every: 1h}",
            "{run: x}",
        )
    ]


def test_the_timing_key_ignores_spelling() -> None:
    """Names and numbers for the same days give the same key: no needless re-arm."""
    assert (
        job("{run: x, cron: '0 9 * * MON-FRI'}").timing_key
        == job("{run: x, cron: '0 9 * * 1-5'}").timing_key
    )


@pytest.mark.parametrize(
    "changed",
    [
        "{run: x, cron: '0 10 * * *'}",
        "{run: x, cron: '0 9 * * *', time_zone: Europe/Paris}",
        "{run: x, cron: '0 9 * * *', dst: {gap: skip}}",
        "{run: x, cron: '0 9 * * *', jitter: 1m}",
        "{run: x, at: ['09:00']}",
    ],
)
def test_the_timing_key_changes_with_the_timing(changed: str) -> None:
    """Schedule, zone, DST policy, jitter and kind all count."""
    assert job("{run: x, cron: '0 9 * * *'}").timing_key != job(changed).timing_key


def test_the_timing_key_ignores_what_is_not_timing() -> None:
    """Editing the command or the timeout must not re-arm a timer (SPEC §3)."""
    before = job("{run: x, every: 5m}")
    after = job("{run: y, every: 5m, timeout: 2m}")
    assert (before.timing_key, "every 300s jitter 0s") == (after.timing_key, before.timing_key)


def test_an_untimed_job_has_no_timing_key() -> None:
    """Nothing to arm, nothing to compare."""
    assert job("{run: x, webhook: true}", "{webhook_secret: H}").timing_key is None


# -- records built by code ---------------------------------------------------------------


def test_code_may_build_records_with_stored_forms() -> None:
    """Seconds and minutes after midnight are accepted from code (not from files)."""
    built = Job(name="a", run="x", at=(30,), timeout=120, jitter=5)
    assert ((30,), 120, 5) == (built.at, built.timeout, built.jitter)


def test_code_built_records_obey_the_same_rules() -> None:
    """A record that exists passed the rules, however it was built."""
    with pytest.raises(ValidationError) as caught:
        Job(name="a", run="x", command=("ls",))
    assert "give only one of command, run or steps" in str(caught.value)


def test_records_are_frozen() -> None:
    """Nothing changes a loaded config behind the loop's back."""
    step = Step(id="a", run="x")
    with pytest.raises(ValidationError):
        step.id = "b"  # type: ignore[misc]


def test_a_built_config_checks_cross_job_rules() -> None:
    """``on.after`` must name another job of the config, even when built by code."""
    chained = Job.model_validate({"name": "b", "run": "x", "on": {"after": {"job": "zzz"}}})
    with pytest.raises(ValidationError) as caught:
        Config(jobs={"b": chained}, filename="x")
    assert "names no job of this config ('zzz')" in str(caught.value)


# -- memory: what jobs share -------------------------------------------------------------


TWINS = """\
    jobs:
      a: {command: [./x, failure], cron: "0 9 * * *", timeout: 5m, notify: [failure]}
      b: {command: [./x, failure], cron: "0 9 * * *", timeout: 5m, notify: [failure]}
    """


def test_equal_text_and_durations_of_a_file_are_kept_once() -> None:
    """Ten thousand jobs that run the same program hold one copy of its name."""
    config = load(TWINS)
    a, b = config.jobs["a"], config.jobs["b"]
    assert (a.command, a.timeout) == (b.command, b.timeout)
    assert a.command[0] is b.command[0]
    assert a.timeout is b.timeout


def test_sharing_never_turns_an_outcome_into_its_text() -> None:
    """``Outcome.FAILURE == "failure"``, yet notify keeps members and commands keep text."""
    config = load(TWINS.replace("[./x, failure]", "[failure]"))
    a = config.jobs["a"]
    assert (str, Outcome) == (type(a.command[0]), type(a.notify[0]))


def test_compacted_records_read_compare_and_dump_as_before() -> None:
    """A loaded job equals the same job built by code, attribute by attribute."""
    loaded = load(TWINS).jobs["a"]
    built = Job(name="a", command=("./x", "failure"), cron="0 9 * * *", timeout=300,
                notify=(Outcome.FAILURE,))
    assert built == loaded
    assert built.model_dump() == loaded.model_dump()
    given = {"name", "command", "cron", "timeout", "notify", "catch_up"}  # catch_up inherited
    assert given == loaded.model_fields_set


def test_copying_a_record_leaves_the_records_it_shares_a_field_set_with_alone() -> None:
    """Records giving the same fields share one set of their names; pydantic copies it first."""
    config = load(TWINS)
    a, b = config.jobs["a"], config.jobs["b"]
    copied = a.model_copy(update={"jitter": 5})
    assert "jitter" in copied.model_fields_set
    assert "jitter" not in b.model_fields_set
    assert 0 == b.jitter


@pytest.mark.parametrize(("listen", "open_"), [
    ("127.0.0.1:8770", True), ("127.9.9.9:1", True), ("[::1]:8770", True),
    ("localhost:8770", True), ("0.0.0.0:8770", False), ("[::]:8770", False),
    ("10.0.0.5:8770", False), ("cronduit.example.com:80", False),
])
def test_reads_are_open_on_a_loopback_listener_only(listen: str, open_: bool) -> None:
    """SPEC §9: reads need the API token on any address but loopback."""
    assert open_ == load(f"settings: {{listen: '{listen}'}}\n").settings.reads_open
