"""Rules about several fields at once: one timing, one body, retries that fit the timeout...

Each rule names the fields it reads. When the loader validates a section whose own fields
failed, it validates again without them and marks them *doubtful*; rules that read a
doubtful field do not run, so a bad ``cron`` never also yields "time_zone needs cron". This
is how every error of a file is reported at once without reporting any twice or wrongly.

Rules are generators of :class:`~cronduit.core.config.errors.Problem`; the models run them
after their fields are valid (``enforce``), so a model that exists has passed them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from pydantic import ValidationInfo

from cronduit.core.config.context import LoadContext, load_context
from cronduit.core.config.errors import Problem, rules_broken
from cronduit.core.config.fields import split_step_ref
from cronduit.core.cron import CronError, CronExpression, cron_plan
from cronduit.core.durations import format_duration
from cronduit.core.enums import Overlap

if TYPE_CHECKING:
    from cronduit.core.config.model import (
        CatchUp,
        Config,
        Job,
        OnSpec,
        OverlapSpec,
        Retry,
        Step,
    )

M = TypeVar("M")
M_contra = TypeVar("M_contra", contravariant=True)
Check = Callable[[M, LoadContext | None], Iterable[Problem]]


@dataclass(frozen=True)
class Rule(Generic[M_contra]):
    """A check over a model, and the fields it reads."""

    reads: frozenset[str]
    check: Callable[[M_contra, LoadContext | None], Iterable[Problem]]


def _registry(rules: list[Rule[M]]) -> Callable[..., Callable[[Check[M]], Check[M]]]:
    def rule(*reads: str) -> Callable[[Check[M]], Check[M]]:
        def register(check: Check[M]) -> Check[M]:
            rules.append(Rule(frozenset(reads), check))
            return check

        return register

    return rule


def enforce(model: M, rules: Sequence[Rule[M]], info: ValidationInfo) -> None:
    """Run every rule whose fields are trusted; raise all their problems together."""
    context = load_context(info)
    doubtful = context.doubtful_for(model) if context else frozenset()
    trusted = [rule for rule in rules if not rule.reads & doubtful] if doubtful else rules
    problems = [problem for rule in trusted for problem in rule.check(model, context)]
    if problems:
        raise rules_broken(problems)


def _fmt(seconds: int) -> str:
    return format_duration(seconds)


# -- catch_up, overlap, retry ------------------------------------------------------------

CATCH_UP_RULES: list[Rule[CatchUp]] = []
_catch_up_rule = _registry(CATCH_UP_RULES)


@_catch_up_rule("max_runs", "mode")
def _max_runs_needs_all(catch_up: CatchUp, context: LoadContext | None) -> Iterator[Problem]:
    """A file that sets max_runs for mode latest shows a misunderstanding worth naming;
    code that spells out every field (``CatchUp(window=..., max_runs=10)``) does not."""
    if context is None:
        return
    if "max_runs" in catch_up.model_fields_set and catch_up.mode.value != "all":
        yield Problem(("max_runs",), "applies only with mode: all", at_key=True)


OVERLAP_RULES: list[Rule[OverlapSpec]] = []
_overlap_rule = _registry(OVERLAP_RULES)


@_overlap_rule("max_parallel", "default", "by_kind")
def _max_parallel_needs_allow(overlap: OverlapSpec, _: LoadContext | None) -> Iterator[Problem]:
    policies = {overlap.default, *overlap.by_kind.values()}
    if "max_parallel" in overlap.model_fields_set and Overlap.ALLOW not in policies:
        yield Problem(("max_parallel",), "applies only when a policy is allow", at_key=True)


RETRY_RULES: list[Rule[Retry]] = []
_retry_rule = _registry(RETRY_RULES)


@_retry_rule("backoff", "max_backoff")
def _max_backoff_covers_backoff(retry: Retry, _: LoadContext | None) -> Iterator[Problem]:
    if retry.max_backoff < retry.backoff:
        yield Problem(
            ("max_backoff",),
            f"must be at least backoff ({_fmt(retry.backoff)}): it caps the doubling sleeps",
            at_key=True,
        )


# -- on ----------------------------------------------------------------------------------

ON_RULES: list[Rule[OnSpec]] = []
_on_rule = _registry(ON_RULES)


@_on_rule("events", "after")
def _something_triggers(on: OnSpec, _: LoadContext | None) -> Iterator[Problem]:
    if not on.events and on.after is None:
        yield Problem((), "needs events or after: otherwise nothing could trigger it", at_key=True)


@_on_rule("events", "branches", "paths", "conclusions")
def _filters_need_events(on: OnSpec, _: LoadContext | None) -> Iterator[Problem]:
    if on.events:
        return
    for key in ("branches", "paths", "conclusions"):
        if getattr(on, key):
            yield Problem((key,), "filters code-host events, so it needs events", at_key=True)


# -- steps -------------------------------------------------------------------------------

STEP_RULES: list[Rule[Step]] = []
_step_rule = _registry(STEP_RULES)


@_step_rule("command", "run")
def _step_body(step: Step, _: LoadContext | None) -> Iterator[Problem]:
    given = [key for key in ("command", "run") if getattr(step, key) is not None]
    if not given:
        yield Problem((), "needs command or run", at_key=True)
    if len(given) > 1:
        yield Problem(("run",), "give command or run, not both", at_key=True)


# -- job ---------------------------------------------------------------------------------

JOB_RULES: list[Rule[Job]] = []
_job_rule = _registry(JOB_RULES)
_BODIES = ("command", "run", "steps")
_TIMINGS = ("cron", "every", "at")


@_job_rule(*_BODIES)
def _one_body(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    given = [key for key in _BODIES if getattr(job, key) is not None]
    if not given:
        yield Problem((), "needs command or run: what to run", at_key=True)
    for extra in given[1:]:
        message = f"give only one of command, run or steps (this job has {' and '.join(given)})"
        yield Problem((extra,), message, at_key=True)


@_job_rule(*_TIMINGS)
def _one_timing(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    given = [key for key in _TIMINGS if getattr(job, key) is not None]
    for extra in given[1:]:
        message = f"give at most one of cron, every or at (this job has {' and '.join(given)})"
        yield Problem((extra,), message, at_key=True)


def _calendar_only(job: Job, key: str) -> Iterator[Problem]:
    """``time_zone`` and ``dst`` read wall-clock times, which only cron and at have."""
    if key in job.model_fields_set and not job.is_timed:
        why = "every counts elapsed time, in no zone" if job.every else "this job has no timing"
        yield Problem((key,), f"applies only to cron and at: {why}", at_key=True)


@_job_rule("time_zone", *_TIMINGS)
def _zone_needs_calendar(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    yield from _calendar_only(job, "time_zone")


@_job_rule("dst", *_TIMINGS)
def _dst_needs_fixed_time(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    yield from _calendar_only(job, "dst")
    if "dst" in job.model_fields_set and job.cron and CronExpression.parse(job.cron).wildcard:
        yield Problem(
            ("dst",),
            "has no effect: this cron expression's minute or hour field starts with *, "
            "so it follows real time through DST changes",
            at_key=True,
        )


@_job_rule("cron", "time_zone", "dst")
def _cron_runs_under_its_dst(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    """``gap: skip`` may remove every slot of a cron job: one that would never run."""
    if job.cron is None or "dst" not in job.model_fields_set:
        return
    try:
        cron_plan(CronExpression.parse(job.cron), job.time_zone, job.dst)
    except CronError as error:
        yield Problem(("dst",), str(error), at_key=True)


@_job_rule("jitter", *_TIMINGS)
def _jitter_needs_timing(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    if "jitter" not in job.model_fields_set:
        return
    if not job.is_timed and job.every is None:
        yield Problem(("jitter",), "needs a timing (cron, every or at) to spread", at_key=True)
    elif job.every is not None and job.jitter >= job.every:
        message = f"must be smaller than every ({_fmt(job.every)}): it would reach the next slot"
        yield Problem(("jitter",), message, at_key=True)


@_job_rule("retry", "timeout", "steps")
def _retry_fits_timeout(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    if job.steps is not None or job.retry is None:
        return
    worst = job.retry.worst_case_backoff
    if worst >= job.timeout:
        yield Problem(
            ("retry",),
            f"worst-case total backoff ({_fmt(worst)}) is not smaller than the timeout "
            f"({_fmt(job.timeout)}): the last attempt could never start",
            at_key=True,
        )


@_job_rule("retry", "timeout", "steps")
def _steps_fit_timeout(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    if job.steps is None:
        return
    worst = sum(retry.worst_case_backoff for step in job.steps if (retry := job.retry_for(step)))
    if worst >= job.timeout:
        yield Problem(
            ("steps",),
            f"the steps' worst-case total backoff ({_fmt(worst)}) is not smaller than the "
            f"timeout ({_fmt(job.timeout)}): the last attempt could never start",
            at_key=True,
        )


@_job_rule("timeout", "steps")
def _step_timeouts_fit_the_job(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    for index, step in enumerate(job.steps or ()):
        if step.timeout is not None and step.timeout > job.timeout:
            yield Problem(
                ("steps", index, "timeout"),
                f"is longer than the job's timeout ({_fmt(job.timeout)}): the job's deadline, "
                "which every step shares, would always come first",
                at_key=True,
            )


@_job_rule("dir", "workspace")
def _one_place(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    if job.dir is not None and job.workspace is not None:
        message = "give dir or workspace, not both: a workspace is where the run happens"
        yield Problem(("dir",), message, at_key=True)


@_job_rule("secrets", "env", "inputs")
def _secrets_are_own_variables(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    for index, name in enumerate(job.secrets):
        if name in job.env:
            yield Problem(
                ("secrets", index), "repeats a key of env: the variable would have two values"
            )
        if name in job.inputs:
            yield Problem(
                ("secrets", index), "repeats an input: the variable would have two values"
            )


@_job_rule("steps")
def _step_ids_unique(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    first: dict[str, int] = {}
    for index, step in enumerate(job.steps or ()):
        if step.id in first:
            yield Problem(("steps", index, "id"), f"repeats the id of steps[{first[step.id]}]")
        first.setdefault(step.id, index)


@_job_rule("steps")
def _step_inputs_come_from_earlier(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    steps = job.steps or ()
    index_of: dict[str, int] = {}
    for index, step in enumerate(steps):
        index_of.setdefault(step.id, index)
    for index, step in enumerate(steps):
        for variable, ref in step.inputs.items():
            problem = _reference_problem(steps, index_of, index, ref)
            if problem:
                yield Problem(("steps", index, "inputs", variable), problem)


def _reference_problem(
    steps: Sequence[Step], index_of: dict[str, int], index: int, ref: str
) -> str | None:
    source, output = split_step_ref(ref)
    if source == steps[index].id:
        return "refers to its own step: an input must come from an earlier step"
    if source not in index_of:
        return f"names no step of this job ('{source}')"
    if index_of[source] > index:
        return (
            f"refers to step '{source}', which runs later: an input must come from an earlier step"
        )
    declared = steps[index_of[source]].outputs
    if output not in declared:
        listed = ", ".join(declared) if declared else "none"
        return f"step '{source}' declares no output {output} (its outputs: {listed})"
    return None


@_job_rule("steps", "inputs", "env", "secrets")
def _step_variables_are_own(job: Job, _: LoadContext | None) -> Iterator[Problem]:
    taken = (
        (job.inputs, "repeats an input of the job"),
        (job.env, "repeats a key of env"),
        (set(job.secrets), "repeats a secret of the job"),
    )
    for index, step in enumerate(job.steps or ()):
        for variable in step.inputs:
            for names, message in taken:
                if variable in names:
                    path = ("steps", index, "inputs", variable)
                    yield Problem(
                        path, f"{message}: the variable would have two values", at_key=True
                    )


# -- the whole config --------------------------------------------------------------------

CONFIG_RULES: list[Rule[Config]] = []
_config_rule = _registry(CONFIG_RULES)


def _trusted(context: LoadContext | None, job: str, key: str) -> bool:
    return context is None or key not in context.job_doubtful.get(job, frozenset())


def _setting_known(context: LoadContext | None, key: str) -> bool:
    return context is None or key not in context.settings_doubtful


@_config_rule()
def _webhooks_need_secret(config: Config, context: LoadContext | None) -> Iterator[Problem]:
    if config.settings.webhook_secret or not _setting_known(context, "webhook_secret"):
        return
    for name, job in config.jobs.items():
        if job.webhook and _trusted(context, name, "webhook"):
            message = "needs settings.webhook_secret: the secret that signs webhook URLs"
            yield Problem(("jobs", name, "webhook"), message, at_key=True)


@_config_rule()
def _events_need_secret(config: Config, context: LoadContext | None) -> Iterator[Problem]:
    if config.settings.github_secret or not _setting_known(context, "github_secret"):
        return
    for name, job in config.jobs.items():
        if job.on and job.on.events and _trusted(context, name, "on"):
            message = "needs settings.github_secret: the secret that verifies GitHub deliveries"
            yield Problem(("jobs", name, "on", "events"), message, at_key=True)


@_config_rule()
def _after_names_another_job(config: Config, context: LoadContext | None) -> Iterator[Problem]:
    declared = (
        context.declared_jobs if context and context.declared_jobs else frozenset(config.jobs)
    )
    for name, job in config.jobs.items():
        after = job.on.after if job.on else None
        if after is None or not _trusted(context, name, "on"):
            continue
        path = ("jobs", name, "on", "after", "job")
        if after.job == name:
            yield Problem(path, "names this job itself: a job cannot run after its own runs")
        elif after.job not in declared:
            yield Problem(path, f"names no job of this config ('{after.job}')")


@_config_rule()
def _after_has_no_cycle(config: Config, context: LoadContext | None) -> Iterator[Problem]:
    """Each job runs after at most one other, so following ``after`` finds every loop."""
    upstream = {
        name: job.on.after.job
        for name, job in config.jobs.items()
        if job.on and job.on.after and _trusted(context, name, "on") and job.on.after.job != name
    }
    reported: set[str] = set()
    for start in upstream:
        loop = _loop_from(start, upstream)
        if loop and not reported & set(loop):
            reported.update(loop)
            first = loop.index(min(loop))
            loop = loop[first:] + loop[:first]
            chain = " after ".join([*loop, loop[0]])
            message = f"jobs run after each other in a loop ({chain}): it would never end"
            yield Problem(("jobs", loop[0], "on", "after", "job"), message)


def _loop_from(start: str, upstream: dict[str, str]) -> list[str]:
    seen: list[str] = []
    current: str | None = start
    while current is not None and current not in seen:
        seen.append(current)
        current = upstream.get(current)
    return seen[seen.index(current) :] if current is not None else []


@_config_rule()
def _job_keys_are_names(config: Config, _: LoadContext | None) -> Iterator[Problem]:
    for key, job in config.jobs.items():
        if job.name != key:
            yield Problem(("jobs", key), f"holds a job named '{job.name}': the key is the name")
