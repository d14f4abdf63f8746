"""Every config error names its FILE:LINE:COL, the field and the rule, and never a secret."""

from __future__ import annotations

from textwrap import dedent

import pytest

from cronduit.core.config import ConfigErrors, load_config
from cronduit.core.config.errors import dotted


def errors(text: str, filename: str = "c.yaml") -> list[str]:
    """The errors ``load_config`` reports for ``text``, one string each, in order."""
    with pytest.raises(ConfigErrors) as caught:
        load_config(dedent(text), filename)
    return [str(error) for error in caught.value.errors]


JOB_KEYS = (
    "at, catch_up, command, cron, dir, dst, durable, env, every, inputs, jitter, nodes, notify, "
    "on, overlap, paused_on_start, retry, run, secrets, steps, time_zone, timeout, webhook, "
    "workspace"
)


# -- unknown keys ------------------------------------------------------------------------


def test_a_typo_key_in_a_job_names_the_likely_key_and_the_allowed_ones() -> None:
    """``timezone`` for ``time_zone`` must not pass silently (SPEC §1)."""
    text = """\
        jobs:
          report:
            command: ["./report.sh"]
            cron: "0 9,13,18 * * *"
            timezone: Europe/London
        """
    expected = (
        "c.yaml:5:5: jobs.report: unknown key 'timezone' (did you mean 'time_zone'?); "
        f"allowed keys: {JOB_KEYS}"
    )
    assert [expected] == errors(text)


def test_an_unknown_key_in_settings_lists_the_settings_keys() -> None:
    """Settings are strict too."""
    text = """\
        settings:
          state: .cronduit
          time_out: 1h
        """
    expected = (
        "c.yaml:3:3: settings: unknown key 'time_out' (did you mean 'timeout'?); allowed keys: "
        "api_token, catch_up, github_secret, github_token, kept_runs, lease, listen, max_log, "
        "node, runs_dir, secrets_file, state, state_password, timeout, webhook_secret"
    )
    assert [expected] == errors(text)


def test_an_unknown_top_level_key_lists_the_three_sections() -> None:
    """A misspelt section is caught, not ignored."""
    assert [
        "c.yaml:1:1: unknown key 'job' (did you mean 'jobs'?); allowed keys: jobs, notifiers, "
        "settings"
    ] == errors("job:\n  a: {run: x}\n")


def test_an_unknown_key_inside_a_nested_mapping_lists_that_mappings_keys() -> None:
    """Allowed keys come from the mapping that holds the key, here ``retry``."""
    text = "jobs:\n  a: {run: x, retry: {attempts: 2, back_off: 1m}}\n"
    expected = (
        "c.yaml:2:36: jobs.a.retry: unknown key 'back_off' (did you mean 'backoff'?); "
        "allowed keys: attempts, backoff, max_backoff"
    )
    assert [expected] == errors(text)


def test_a_name_key_inside_a_job_is_refused_because_the_key_is_the_name() -> None:
    """A second, silent name would be worse than none."""
    [found] = errors("jobs:\n  a: {run: x, name: b}\n")
    assert found.startswith("c.yaml:2:15: jobs.a: unknown key 'name'")
    assert found.endswith("(the job's name is its key)")


# -- timing ------------------------------------------------------------------------------


def test_a_bad_cron_field_is_reported_at_the_cron_value() -> None:
    """The cron parser's message names the field."""
    [found] = errors('jobs:\n  a:\n    run: x\n    cron: "61 * * * *"\n')
    assert found.startswith("c.yaml:4:11: jobs.a.cron: minute field")


def test_a_tz_prefix_in_a_cron_points_at_time_zone() -> None:
    """``TZ=`` inside the expression is refused with a pointer to the right key."""
    text = 'jobs:\n  a:\n    run: x\n    cron: "TZ=Europe/Paris 0 9 * * *"\n'
    assert [
        "c.yaml:4:11: jobs.a.cron: a TZ= prefix is not supported in the expression; "
        "set the job's time_zone instead"
    ] == errors(text)


def test_an_unknown_zone_is_reported_at_the_zone_value() -> None:
    """Zone names are safe to echo and help spot the typo."""
    text = 'jobs:\n  report:\n    run: x\n    cron: "0 9 * * *"\n    time_zone: Europe/Londn\n'
    assert [
        "c.yaml:5:16: jobs.report.time_zone: unknown time zone 'Europe/Londn': "
        "use an IANA name such as Europe/London"
    ] == errors(text)


def test_two_timings_are_refused_at_the_second_one() -> None:
    """A job has at most one of cron, every and at."""
    text = 'jobs:\n  a:\n    run: x\n    cron: "0 9 * * *"\n    every: 1h\n'
    assert [
        "c.yaml:5:5: jobs.a.every: give at most one of cron, every or at (this job has cron and "
        "every)"
    ] == errors(text)


def test_time_zone_without_cron_or_at_is_refused() -> None:
    """An interval counts elapsed time, which has no zone."""
    text = "jobs:\n  a: {run: x, every: 1h, time_zone: UTC}\n"
    assert [
        "c.yaml:2:26: jobs.a.time_zone: applies only to cron and at: "
        "every counts elapsed time, in no zone"
    ] == errors(text)


def test_unquoted_times_of_day_are_read_and_bad_ones_located() -> None:
    """``at: [12:30]`` works unquoted; ``24:00`` is refused at its item."""
    text = "jobs:\n  a: {run: x, at: [12:30, 24:00, 12:30]}\n"
    assert [
        "c.yaml:2:27: jobs.a.at[1]: must be a time of day HH:MM, from 00:00 to 23:59",
    ] == errors(text)


def test_a_repeated_time_of_day_is_refused_at_the_repeat() -> None:
    """The same time twice is a slip."""
    assert ["c.yaml:2:27: jobs.a.at[1]: repeats '12:30' (first at [0])"] == errors(
        "jobs:\n  a: {run: x, at: [12:30, 12:30]}\n"
    )


def test_a_duration_without_a_unit_is_refused() -> None:
    """``every: 60`` could mean seconds or minutes: cronduit asks for the unit."""
    assert [
        "c.yaml:2:22: jobs.a.every: must be a duration such as 30s, 15m, 6h, 1d or 1h30m: "
        "a number alone has no unit"
    ] == errors("jobs:\n  a: {run: x, every: 60}\n")


def test_dst_on_a_wildcard_cron_is_refused_because_it_has_no_effect() -> None:
    """A wildcard job follows real time; its DST policy would be ignored."""
    [found] = errors('jobs:\n  a: {run: x, cron: "*/5 * * * *", dst: {gap: skip}}\n')
    assert found.startswith("c.yaml:2:36: jobs.a.dst: has no effect: ")


# -- types and required keys -------------------------------------------------------------


def test_gap_skip_that_removes_every_slot_is_refused_at_dst() -> None:
    """A job that would never run is refused at check, not left unarmed by the daemon."""
    [found] = errors('jobs:\n  a: {run: x, cron: "30 2 8-14 3 */7", time_zone: '
                     'America/New_York,\n      dst: {gap: skip}}\n')
    assert ("c.yaml:3:7: jobs.a.dst: '30 2 8-14 3 */7' never runs in America/New_York with "
            "dst gap: skip: every time it names falls in a spring-forward gap") == found


def test_a_wrong_type_says_what_was_expected() -> None:
    """``yes`` is not a boolean under the core schema, and the message says what is."""
    assert [
        "c.yaml:2:24: jobs.a.webhook: must be true or false",
        "c.yaml:2:38: jobs.a.timeout: must be a duration such as 30s, 15m, 6h, 1d or 1h30m",
    ] == errors("jobs:\n  a: {run: x, webhook: yes, timeout: [1h]}\n")


def test_a_command_given_as_a_string_points_at_run() -> None:
    """``command`` is an argument list; a shell line belongs in ``run``."""
    assert [
        "c.yaml:2:16: jobs.a.command: must be a list: the program, then its arguments "
        "(for a shell line use run)"
    ] == errors("jobs:\n  a: {command: ls -l}\n")


def test_a_job_without_command_or_run_is_refused_at_its_name() -> None:
    """What to run is the one thing every job needs."""
    assert ["c.yaml:2:3: jobs.a: needs command or run: what to run"] == errors(
        'jobs:\n  a:\n    cron: "0 9 * * *"\n'
    )


def test_a_missing_required_key_is_reported_at_its_mapping() -> None:
    """``catch_up`` as a mapping must give its window."""
    assert ["c.yaml:2:15: jobs.a.catch_up: missing required key 'window'"] == errors(
        'jobs:\n  a: {run: x, catch_up: {mode: all}, cron: "0 * * * *"}\n'
    )


def test_a_bad_job_name_is_reported_at_the_key_and_its_other_errors_too() -> None:
    """A bad name does not hide the job's other errors."""
    assert [
        "c.yaml:2:3: jobs.Report: not a valid job name: use a lower-case letter, then up to 62 "
        "lower-case letters, digits, _ or -",
        "c.yaml:2:27: jobs.Report.every: must be at least 1s",
    ] == errors("jobs:\n  Report: {run: x, every: 0s}\n")


def test_max_runs_without_mode_all_is_refused() -> None:
    """Only mode all runs several missed slots, so max_runs means nothing with latest."""
    assert ["c.yaml:2:57: jobs.a.catch_up.max_runs: applies only with mode: all"] == errors(
        "jobs:\n  a: {run: x, cron: '0 * * * *', catch_up: {window: 1h, max_runs: 3}}\n"
    )


# -- retries -----------------------------------------------------------------------------


def test_a_retry_whose_backoff_does_not_fit_the_timeout_says_both_numbers() -> None:
    """Sleeps of 10m, 20m and 30m (capped) add up to 1h, which is not under the 1h timeout."""
    text = """\
        jobs:
          a:
            run: x
            timeout: 1h
            retry: {attempts: 4, backoff: 10m, max_backoff: 30m}
        """
    assert [
        "c.yaml:5:5: jobs.a.retry: worst-case total backoff (1h) is not smaller than the "
        "timeout (1h): the last attempt could never start"
    ] == errors(text)


def test_the_retry_budget_uses_the_timeout_inherited_from_settings() -> None:
    """A job without its own timeout is checked against settings.timeout."""
    text = """\
        settings: {timeout: 5m}
        jobs:
          a: {run: x, retry: {attempts: 2, backoff: 5m}}
        """
    [found] = errors(text)
    assert found.startswith("c.yaml:3:15: jobs.a.retry: worst-case total backoff (5m)")


def test_a_broken_settings_timeout_does_not_also_fail_the_jobs_retry_budget() -> None:
    """The rule needs a trustworthy timeout; with a bad one only the bad one is reported."""
    text = """\
        settings: {timeout: soon}
        jobs:
          a: {run: x, retry: {attempts: 3, backoff: 1h, max_backoff: 1h}}
        """
    [found] = errors(text)
    assert found.startswith("c.yaml:1:21: settings.timeout: must be a duration")


# -- code-host events --------------------------------------------------------------------


def test_a_bad_conclusion_lists_the_allowed_values() -> None:
    """Conclusions are a closed list; the message gives all of it."""
    text = """\
        settings: {github_secret: GH}
        jobs:
          a:
            run: x
            on: {events: [check_suite.completed], conclusions: [FAILURE, timedout]}
        """
    assert [
        "c.yaml:5:66: jobs.a.on.conclusions[1]: unknown conclusion 'timedout'; allowed: "
        "action_required, cancelled, failure, neutral, skipped, stale, startup_failure, "
        "success, timed_out"
    ] == errors(text)


def test_paths_with_only_negative_rules_are_refused() -> None:
    """A filter that includes nothing would never run the job."""
    text = """\
        settings: {github_secret: GH}
        jobs:
          a:
            run: x
            on:
              events: [push]
              paths: ["!docs/**", "!*.md"]
        """
    assert [
        "c.yaml:7:14: jobs.a.on.paths: only ! rules: nothing is included, so the job could never "
        "run"
    ] == errors(text)


def test_filters_need_events() -> None:
    """Branches filter deliveries, so a job with only ``after`` cannot have them."""
    text = "jobs:\n  a: {run: x}\n  b: {run: y, on: {after: {job: a}, branches: [main]}}\n"
    assert [
        "c.yaml:3:37: jobs.b.on.branches: filters code-host events, so it needs events"
    ] == errors(text)


def test_events_need_the_github_secret_and_webhooks_the_webhook_secret() -> None:
    """Deliveries that cannot be verified must not be accepted, so the config says so now."""
    text = "jobs:\n  a: {run: x, webhook: true, on: {events: [push]}}\n"
    assert [
        "c.yaml:2:15: jobs.a.webhook: needs settings.webhook_secret: the secret that signs "
        "webhook URLs",
        "c.yaml:2:35: jobs.a.on.events: needs settings.github_secret: the secret that verifies "
        "GitHub deliveries",
    ] == errors(text)


def test_after_must_name_another_existing_job() -> None:
    """Chaining to itself or to nothing is refused; a typo gets the name echoed."""
    text = """\
        jobs:
          a: {run: x, on: {after: {job: a}}}
          b: {run: x, on: {after: {job: nope}}}
        """
    assert [
        "c.yaml:2:33: jobs.a.on.after.job: names this job itself: a job cannot run after its own "
        "runs",
        "c.yaml:3:33: jobs.b.on.after.job: names no job of this config ('nope')",
    ] == errors(text)


def test_after_may_name_a_job_that_is_itself_invalid() -> None:
    """The other job exists even if it has errors; only its own errors are reported."""
    assert ["c.yaml:2:3: jobs.a: needs command or run: what to run"] == errors(
        "jobs:\n  a: {}\n  b: {run: x, on: {after: {job: a}}}\n"
    )


def test_jobs_that_run_after_each_other_in_a_loop_are_refused_once() -> None:
    """A loop of chained jobs would never end; it is reported once, at its first job."""
    text = """\
        jobs:
          c: {run: x, on: {after: {job: a}}}
          a: {run: x, on: {after: {job: b}}}
          b: {run: x, on: {after: {job: c}}}
        """
    assert [
        "c.yaml:3:33: jobs.a.on.after.job: jobs run after each other in a loop "
        "(a after b after c after a): it would never end"
    ] == errors(text)


# -- inputs ------------------------------------------------------------------------------


def test_input_declaration_errors_come_from_the_inputs_rules_at_the_inputs_name() -> None:
    """The rules live in cronduit.core.inputs; the config places their messages."""
    text = """\
        jobs:
          a:
            run: x
            env: {REGION: eu}
            inputs:
              REGION: {enum: [eu, us], default: eu}
              day: {pattern: "[0-9]+", default: "x"}
              MODE: {enum: [a], pattern: "b", default: a}
              SIZE: {pattern: "[0-9]+", default: "1", help: size}
        """
    assert [
        "c.yaml:6:7: jobs.a.inputs.REGION: name repeats a key of env: the variable would have "
        "two values",
        "c.yaml:7:7: jobs.a.inputs.day: default must match the whole pattern [0-9]+",
        "c.yaml:7:7: jobs.a.inputs.day: name must be an upper-case identifier ([A-Z_][A-Z0-9_]*)",
        "c.yaml:8:7: jobs.a.inputs.MODE: give exactly one of enum or pattern, not both",
        "c.yaml:9:47: jobs.a.inputs.SIZE: unknown key 'help'; allowed keys: default, "
        "description, enum, pattern",
    ] == errors(text)


def test_an_input_default_that_is_a_number_asks_for_quotes() -> None:
    """Input values are strings; YAML makes ``7`` a number."""
    [found] = errors('jobs:\n  a:\n    run: x\n    inputs: {N: {pattern: "[0-9]", default: 7}}\n')
    assert "c.yaml:4:14: jobs.a.inputs.N: default must be a string (quote it in YAML)" == found


# -- steps -------------------------------------------------------------------------------


def test_a_valid_steps_job_and_a_durable_single_command_job_pass_check() -> None:
    """Steps and durable run (SPEC §8): a valid job with each passes."""
    text = """\
        jobs:
          a:
            steps: [{id: one, run: x, outputs: [V]}, {id: two, run: y, inputs: {V: one.V}}]
            durable: {retention: 1d}
          b: {run: x, durable: {retention: 30d}}
        """
    config = load_config(dedent(text), "c.yaml")
    assert (2, 30 * 86400) == (len(config.jobs["a"].steps or ()),
                               config.jobs["b"].durable.retention if config.jobs["b"].durable
                               else 0)


def test_step_inputs_must_come_from_earlier_steps_outputs() -> None:
    """Forward, self and unknown references are each refused at the input."""
    text = """\
        jobs:
          a:
            steps:
              - {id: build, run: x, outputs: [VERSION], inputs: {NEXT: ship.URL}}
              - {id: ship, run: y, outputs: [URL], inputs: {SELF: ship.URL, V: build.NOPE}}
              - {id: tell, run: z, inputs: {WHO: nobody.X, V: build.VERSION}}
        """
    assert [
        "c.yaml:4:64: jobs.a.steps[0].inputs.NEXT: refers to step 'ship', which runs later: "
        "an input must come from an earlier step",
        "c.yaml:5:59: jobs.a.steps[1].inputs.SELF: refers to its own step: an input must come "
        "from an earlier step",
        "c.yaml:5:72: jobs.a.steps[1].inputs.V: step 'build' declares no output NOPE "
        "(its outputs: VERSION)",
        "c.yaml:6:42: jobs.a.steps[2].inputs.WHO: names no step of this job ('nobody')",
    ] == errors(text)


def test_step_ids_must_be_unique_and_steps_need_command_or_run() -> None:
    """Ids identify steps across resumes, so a repeated one is refused."""
    text = """\
        jobs:
          a:
            steps:
              - {id: one, run: x}
              - {id: one, run: y}
        """
    assert ["c.yaml:5:14: jobs.a.steps[1].id: repeats the id of steps[0]"] == errors(text)


def test_at_most_32_steps_and_32_outputs() -> None:
    """The limits of SPEC §8, worded with what they count."""
    steps = "\n".join(f"      - {{id: s{i}, run: x}}" for i in range(33))
    outputs = ", ".join(f"O{i}" for i in range(33))
    text = (
        f"jobs:\n  a:\n    steps:\n{steps}\n  b:\n    steps:\n"
        f"      - {{id: s, run: x, outputs: [{outputs}]}}\n"
    )
    assert [
        "c.yaml:4:7: jobs.a.steps: must list at most 32 steps",
        "c.yaml:39:34: jobs.b.steps[0].outputs: must list at most 32 outputs",
    ] == errors(text)


def test_the_steps_backoff_must_fit_the_timeout_together() -> None:
    """Each step's retry (its own or the job's) adds its worst case to one budget."""
    text = """\
        jobs:
          a:
            timeout: 10m
            retry: {attempts: 2, backoff: 4m}
            steps:
              - {id: one, run: x}
              - {id: two, run: y, retry: {attempts: 2, backoff: 6m}}
        """
    assert [
        "c.yaml:5:5: jobs.a.steps: the steps' worst-case total backoff (10m) is not smaller "
        "than the timeout (10m): the last attempt could never start"
    ] == errors(text)


def test_a_step_timeout_longer_than_the_jobs_is_refused_at_the_step() -> None:
    """Every step shares the job's deadline, so a longer step timeout could never apply."""
    text = """\
        jobs:
          a:
            timeout: 10m
            steps:
              - {id: one, run: x, timeout: 10m}
              - {id: two, run: y, timeout: 11m}
        """
    assert [
        "c.yaml:6:27: jobs.a.steps[1].timeout: is longer than the job's timeout (10m): the "
        "job's deadline, which every step shares, would always come first",
    ] == errors(text)


# -- all errors at once, and no secrets --------------------------------------------------


@pytest.mark.parametrize(("value", "message"), [
    ("512KiB", "must be at least 1MiB"),
    ("2TiB", "must be at most 1TiB"),
    ("67108864", "must be a size such as 512KiB, 64MiB or 2GiB (a whole number; units KiB, "
                 "MiB, GiB, TiB): a number alone has no unit"),
    ("64MB", "must be a size such as 512KiB, 64MiB or 2GiB (a whole number; units KiB, MiB, "
             "GiB, TiB): spell the unit just so (powers of 1024), with no space"),
])
def test_a_max_log_out_of_bounds_or_without_its_unit_is_refused_at_its_value(
    value: str, message: str,
) -> None:
    """A log's cap is at least 1MiB (a head and a tail worth keeping) and at most 1TiB."""
    assert [f"c.yaml:1:21: settings.max_log: {message}"] == errors(
        f"settings: {{max_log: {value}}}\n")


def test_several_errors_across_jobs_are_reported_at_once_sorted_by_position() -> None:
    """One broken job never hides another's errors, and settings errors come first."""
    text = """\
        jobs:
          b:
            run: x
            cron: "0 25 * * *"
          a:
            command: []
            every: 1h
            time_zone: Mars/Base
        settings:
          kept_runs: 0
        """
    assert [
        "c.yaml:4:11: jobs.b.cron: hour field: 25 is outside 0-23",
        "c.yaml:6:14: jobs.a.command: must list the program to run, then its arguments",
        "c.yaml:8:16: jobs.a.time_zone: unknown time zone 'Mars/Base': use an IANA name such "
        "as Europe/London",
        "c.yaml:10:14: settings.kept_runs: must be at least 1",
    ] == errors(text)


def test_a_rule_does_not_run_on_a_field_that_already_failed() -> None:
    """A bad cron does not also yield "time_zone applies only to cron and at"."""
    [found] = errors('jobs:\n  a: {run: x, cron: "bad", time_zone: Europe/Paris}\n')
    assert found.startswith("c.yaml:2:21: jobs.a.cron: ")


def test_a_json_config_reports_errors_at_json_positions() -> None:
    """JSON files get the same FILE:LINE:COL errors."""
    text = '{"jobs": {\n  "a": {"run": "x", "cron": "0 9 * * *", "timezone": "UTC"}\n}}\n'
    [found] = errors(text, "c.json")
    assert found.startswith(
        "c.json:2:42: jobs.a: unknown key 'timezone' (did you mean 'time_zone'?)"
    )


SECRET = "hunter2-s3cr3t-Zq9"


@pytest.mark.parametrize(
    "text",
    [
        f"jobs:\n  a: {{run: x, env: {{TOKEN: [{SECRET}]}}}}\n",
        f"jobs:\n  a: {{run: x, env: {{CRONDUIT_TOKEN: {SECRET}}}}}\n",
        f"jobs:\n  a: {{run: x, env: {{TOKEN: {SECRET}}}, inputs: {{TOKEN: {{pattern: x, default: "
        f"x}}}}}}\n",
        f"settings: {{api_token: '{SECRET}!'}}\n",
        f"settings: {{webhook_secret: '{SECRET} '}}\n",
        f"settings: {{state: 'mysql://u:{SECRET}@db/x'}}\n",
        f"notifiers:\n  ops: {{url: 'ftp://u:{SECRET}@hooks.example/x'}}\n",
        f"jobs:\n  a: {{run: x, workspace: {{git: '', mode: {SECRET}}}}}\n",
        f"jobs:\n  a: {{command: [{SECRET}], run: {SECRET}}}\n",
        f"jobs:\n  a: {{run: x, secrets: ['{SECRET}-']}}\n",
        f"jobs:\n  a: {{run: x, inputs: {{K: {{pattern: '[a-z]+', default: '{SECRET}'}}}}}}\n",
    ],
)
def test_a_secret_looking_value_never_appears_in_any_message(text: str) -> None:
    """Messages name the field and the rule; the value stays out of logs and terminals."""
    found = errors(text)
    assert found
    assert [] == [line for line in found if "s3cr3t" in line]


def test_every_error_is_one_line_even_when_it_quotes_a_newline() -> None:
    """Keys and values with control characters are escaped, never printed raw."""
    text = 'jobs:\n  "a\\nb": {run: x, "time\\tzone": 1}\n'
    found = errors(text)
    assert [
        "c.yaml:2:3: jobs.'a\\nb': not a valid job name: use a lower-case letter, then up to 62 "
        "lower-case letters, digits, _ or -",
        "c.yaml:2:20: jobs.'a\\nb': unknown key 'time\\tzone' (did you mean 'time_zone'?); "
        f"allowed keys: {JOB_KEYS}",
    ] == found


@pytest.mark.parametrize(("path", "shown"), [
    (("jobs", "etl", "steps", 0, "id"), "jobs.etl.steps[0].id"),
    ((" ", "", "default"), "' '.''.default"),
    (("jobs", " a"), "jobs.' a'"),
    (("jobs", "a.b"), "jobs.'a.b'"),
    (("jobs", "a\nb"), "jobs.'a\\nb'"),
])
def test_a_path_quotes_the_keys_a_dot_or_a_blank_would_make_ambiguous(
        path: tuple[str | int, ...], shown: str) -> None:
    """Found by fuzzing: a key that is one space started an error's message with a space."""
    assert shown == dotted(path)


def test_a_job_named_by_a_space_is_named_quoted_in_a_located_error() -> None:
    with pytest.raises(ConfigErrors) as raised:
        load_config('jobs:\n  " ": {run: "true"}\n', "config")
    assert str(raised.value).startswith("config:2:3: jobs.' ': not a valid job name")
