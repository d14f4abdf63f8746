"""The config as frozen records: what the daemon, the CLI and the API read.

Every model validates on construction, fields first (types in :mod:`.fields`), then the
rules across fields (:mod:`.rules`), so a record that exists is a record the loop can
trust. Built from a config file (through :func:`~cronduit.core.config.load_config`) values
take their YAML forms (``timeout: 1h``, ``at: ["05:17"]``, ``catch_up: true``); built by
code they may also take their stored forms (seconds, minutes after midnight).

Attributes hold the stored forms: durations in whole seconds, times of day in minutes after
midnight, outcomes and policies as :mod:`cronduit.core.enums` members.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationInfo,
    field_validator,
    model_validator,
)

from cronduit.core.config import rules
from cronduit.core.config.context import from_config, load_context
from cronduit.core.config.declarations import declare_inputs
from cronduit.core.config.errors import invalid
from cronduit.core.config.fields import (
    AfterOutcomes,
    Attempts,
    CatchUpRuns,
    Command,
    Conclusions,
    CronText,
    Duration,
    EnvKey,
    Events,
    Filter,
    Flag,
    HttpUrl,
    JobSecrets,
    KeptRuns,
    LeaseDuration,
    ListenAddress,
    Name,
    NodeGlobs,
    NodeName,
    NonEmptyText,
    NotifyOutcomes,
    ParallelRuns,
    PositiveDuration,
    Retention,
    SecretName,
    Size,
    StateLocation,
    StepRef,
    Text,
    TimesOfDay,
    Variable,
    Variables,
    Window,
    ZoneName,
    choice,
    is_loopback,
    length,
    listen_parts,
)
from cronduit.core.config.messages import unknown_key_message
from cronduit.core.cron import CronExpression, DstPolicy
from cronduit.core.durations import format_duration
from cronduit.core.enums import CatchUpMode, Outcome, Overlap, TriggerKind
from cronduit.core.inputs import InputSpec
from cronduit.core.limits import MAX_STEP_INPUTS, MAX_STEP_OUTPUTS, MAX_STEPS
from cronduit.core.matching import OnRule
from cronduit.core.sizes import MiB

__all__ = [
    "AfterSpec",
    "CatchUp",
    "Config",
    "Durable",
    "Job",
    "Notifier",
    "OnSpec",
    "OverlapSpec",
    "Retry",
    "Settings",
    "Step",
    "Workspace",
]

_DEFAULT_NOTIFY = (Outcome.FAILURE, Outcome.TIMEOUT)


class _Record(BaseModel):
    """Strict about keys, immutable once built, and checked by its ``RULES`` when built."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    RULES: ClassVar[Sequence[rules.Rule[Any]]] = ()

    @model_validator(mode="wrap")
    @classmethod
    def _enforce_rules(
        cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo
    ) -> Self:
        """Fresh data passes the rules; a record already built (and frozen) already did.

        Pydantic would rerun an after-validator on a record nested in a bigger one, out of
        the context it was built in; a wrap validator can tell the two apart.
        """
        if isinstance(data, cls):
            return data
        record = handler(data)
        rules.enforce(record, cls.RULES, info)
        _compact(record)
        return record

    @classmethod
    def config_keys(cls) -> tuple[str, ...]:
        """The keys a config file may give this record."""
        return tuple(sorted(cls.model_fields))


# -- memory per record -------------------------------------------------------------------

_ATTRIBUTES: dict[type[BaseModel], dict[str, Any]] = {}
_FIELDS_SET: dict[frozenset[str], set[str]] = {}


def _compact(record: BaseModel) -> None:
    """Keep a fresh record in a quarter of the memory pydantic gave it, without changing it.

    A daemon keeps its config for its whole life, and a config may hold 10,000 jobs. The
    record's attributes move to a dict that shares its key table with every record of its
    class (PEP 412: copying a dict that shares keys shares them too), and its set of given
    fields becomes one set shared by all records that give the same fields (a record is
    frozen, and pydantic copies that set before changing it).
    """
    given = record.__dict__
    attributes = _attributes_of(type(record), given).copy()
    attributes.update(given)
    object.__setattr__(record, "__dict__", attributes)
    fields_set = record.__pydantic_fields_set__
    object.__setattr__(
        record, "__pydantic_fields_set__", _FIELDS_SET.setdefault(frozenset(fields_set), fields_set)
    )


def _attributes_of(model: type[BaseModel], given: dict[str, Any]) -> dict[str, Any]:
    """An empty attribute dict whose key table the model's records share."""
    if model not in _ATTRIBUTES:
        holder = type(f"{model.__name__}Attributes", (), {})()
        for name in given:
            setattr(holder, name, None)  # an instance's attributes share their class's keys
        _ATTRIBUTES[model] = holder.__dict__
    return _ATTRIBUTES[model]


# -- catch-up ----------------------------------------------------------------------------

SCHEDULING_TOLERANCE = 1.0
"""Seconds after its due time within which a firing counts as on time (strictly less, like a
window's edge). A firing normally happens milliseconds after its due time; one second allows
for a busy daemon without reaching the smallest window a user can write, ``1s``."""


class CatchUp(_Record):
    """Which missed slots of a cron or at job still run late (SPEC §3): the policy
    :mod:`cronduit.core.catchup` decides firings by.

    ``window`` is in seconds: a slot runs late only if ``now - slot < window``; ``None`` is
    no limit and ``0`` never runs late (only a slot fired within
    :data:`SCHEDULING_TOLERANCE` runs). Config forms: ``true``, ``false``, a duration, or
    ``{window, mode, max_runs}``.
    """

    window: Window
    mode: Annotated[CatchUpMode, choice(tuple(CatchUpMode))] = CatchUpMode.LATEST
    max_runs: CatchUpRuns = 10
    """With ``mode: all``, at most this many missed slots run, oldest first."""

    RULES: ClassVar[Sequence[rules.Rule[Any]]] = rules.CATCH_UP_RULES

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, bool | str):
            return {"window": data}
        if isinstance(data, dict | CatchUp):
            return data
        raise invalid("must be a duration, true (no limit), false (never run late) or a mapping")

    def admits(self, lateness: float) -> bool:
        """Whether a slot this many seconds late may still run (strict at the edge)."""
        window = self.window  # read once: asked for every slot a firing weighs
        if window is None:
            return True
        return lateness < (window if window > 0 else SCHEDULING_TOLERANCE)


DEFAULT_CATCH_UP = CatchUp(window=6 * 3600)
"""``catch_up: 6h``: a slot missed by less than six hours still runs, once."""


# -- settings and notifiers --------------------------------------------------------------

DEFAULT_MAX_LOG = 64 * MiB
DEFAULT_LEASE = 30
"""``lease: 30s``: renewed every 10 s; a dead daemon's work moves within 40 s."""


class Settings(_Record):
    """Daemon-wide settings and the defaults jobs inherit."""

    state: StateLocation = ".cronduit"
    """A state directory (SQLite file, logs, run outputs) or a ``postgresql://`` URL."""
    listen: ListenAddress = "127.0.0.1:8770"
    timeout: PositiveDuration = 3600
    catch_up: CatchUp = DEFAULT_CATCH_UP
    kept_runs: KeptRuns = 20
    secrets_file: NonEmptyText | None = None
    webhook_secret: SecretName | None = None
    """The *name* of the secret that signs webhook URLs (never the secret itself)."""
    github_secret: SecretName | None = None
    github_token: SecretName | None = None
    """A GitHub token's secret name: lets cronduit ask GitHub whether a check's head commit
    is in its branch (the compare API), when no workspace clone can tell."""
    api_token: SecretName | None = None
    max_log: Size = DEFAULT_MAX_LOG
    """A run's log past this many bytes keeps its head and its tail, the cut marked."""
    node: NodeName | None = None
    """This daemon's node name (None: the host's name, see :func:`node_name`)."""
    lease: LeaseDuration = DEFAULT_LEASE
    """How long a node's lease lasts unrenewed (with a PostgreSQL state)."""
    runs_dir: NonEmptyText | None = None
    """With a PostgreSQL state: the local folder for runs' logs and outputs (None:
    ``.cronduit`` beside the config). With SQLite the state directory holds them."""
    state_password: SecretName | None = None
    """The *name* of the secret that holds the PostgreSQL password, if libpq's own ways
    (``PGPASSWORD``, ``~/.pgpass``, a service file) are not used."""

    @property
    def listen_address(self) -> tuple[str, int]:
        """``(host, port)`` to bind; an IPv6 host comes without its brackets."""
        return listen_parts(self.listen)

    @property
    def reads_open(self) -> bool:
        """Whether the API's reads answer without the API token: only on a loopback
        listener (SPEC §9); on any other address they need it, as writes do."""
        return is_loopback(self.listen_address[0])

    @property
    def uses_postgres(self) -> bool:
        """Whether ``state`` is a PostgreSQL URL rather than a directory."""
        return "://" in self.state


class Notifier(_Record):
    """Where run outcomes are POSTed (SPEC §7)."""

    url: HttpUrl
    on: NotifyOutcomes = _DEFAULT_NOTIFY
    format: Literal["json", "slack"] = "json"


# -- overlap and retry -------------------------------------------------------------------

OverlapChoice = Annotated[Overlap, choice(tuple(Overlap))]
"""One overlap policy as a file names it (``queue``, ``skip``, ``replace``, ``allow``)."""
_KINDS = tuple(kind.value for kind in TriggerKind)


class OverlapSpec(_Record):
    """What a trigger does when the job already has a run going (SPEC §4): the policy
    :mod:`cronduit.core.overlap` decides by, one per trigger kind (:meth:`of`).

    Config forms: ``overlap: skip``, or ``{timer: queue, default: skip, max_parallel: 2}``
    with one key per trigger kind that differs from ``default``.
    """

    default: OverlapChoice = Overlap.QUEUE
    by_kind: Mapping[Annotated[TriggerKind, choice(tuple(TriggerKind))], OverlapChoice] = Field(
        default_factory=dict
    )
    max_parallel: ParallelRuns = 4
    """With ``allow``, at most this many runs at once."""

    RULES: ClassVar[Sequence[rules.Rule[Any]]] = rules.OVERLAP_RULES

    @classmethod
    def config_keys(cls) -> tuple[str, ...]:
        """The file names kinds as keys (``timer: queue``); ``by_kind`` is how they are kept."""
        return tuple(sorted(("default", "max_parallel", *_KINDS)))

    @model_validator(mode="before")
    @classmethod
    def _kinds_as_keys(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(data, str):
            return {"default": data}
        if not isinstance(data, dict):
            return data
        if "by_kind" in data and from_config(info):
            raise invalid(
                unknown_key_message("by_kind", cls.config_keys()), ("by_kind",), at_key=True
            )
        kinds = {key: value for key, value in data.items() if key in _KINDS}
        if not kinds:
            return data
        rest = {key: value for key, value in data.items() if key not in _KINDS}
        return {**rest, "by_kind": {**data.get("by_kind", {}), **kinds}}

    def of(self, kind: TriggerKind) -> Overlap:
        """The policy a trigger of ``kind`` follows: its kind's own if given, else
        ``default``."""
        return self.by_kind.get(kind, self.default)


class Retry(_Record):
    """Attempts of one run (SPEC §5); the first attempt counts."""

    attempts: Attempts = 1
    backoff: PositiveDuration = 30
    max_backoff: PositiveDuration = 600

    RULES: ClassVar[Sequence[rules.Rule[Any]]] = rules.RETRY_RULES

    def delay_after(self, failures: int) -> int:
        """Seconds to sleep after the ``failures``-th failed attempt: doubling, capped."""
        return int(min(self.backoff * 2 ** max(failures - 1, 0), self.max_backoff))

    @property
    def worst_case_backoff(self) -> int:
        """Seconds spent sleeping when every attempt fails: what the timeout must exceed."""
        return sum(self.delay_after(failures) for failures in range(1, self.attempts))


# -- code-host events and chaining -------------------------------------------------------


class AfterSpec(_Record):
    """Run this job when another job's run ends with one of ``outcomes``."""

    job: Name
    outcomes: AfterOutcomes = (Outcome.SUCCESS,)


class OnSpec(_Record):
    """Code-host deliveries and other jobs' runs that trigger a job (SPEC §1, §4)."""

    events: Events = ()
    branches: Filter = ()
    paths: Filter = ()
    conclusions: Conclusions = ()
    """Lower-case members of :data:`cronduit.core.matching.CONCLUSIONS`."""
    after: AfterSpec | None = None

    RULES: ClassVar[Sequence[rules.Rule[Any]]] = rules.ON_RULES

    @property
    def rule(self) -> OnRule | None:
        """The delivery filter :func:`cronduit.core.matching.rule_matches` takes, if any."""
        if not self.events:
            return None
        return OnRule(self.events, self.branches, self.paths, self.conclusions)


# -- steps, workspaces -------------------------------------------------------------------


class Step(_Record):
    """One step of a durable multi-step execution (SPEC §8)."""

    id: Name
    command: Command | None = None
    run: NonEmptyText | None = None
    outputs: Annotated[Variables, length(MAX_STEP_OUTPUTS, "outputs")] = ()
    inputs: Annotated[Mapping[Variable, StepRef], length(MAX_STEP_INPUTS, "inputs")] = Field(
        default_factory=dict
    )
    """Variable name -> ``"step.OUTPUT"`` of an earlier step."""
    retry: Retry | None = None
    """``None`` inherits the job's ``retry``."""
    timeout: PositiveDuration | None = None
    """How long one attempt of the step may take; ``None``: only the job's deadline."""

    RULES: ClassVar[Sequence[rules.Rule[Any]]] = rules.STEP_RULES


class Durable(_Record):
    """How long a multi-step execution stays resumable."""

    retention: Retention = 168 * 3600


class Workspace(_Record):
    """A git checkout the run happens in (SPEC §5)."""

    git: NonEmptyText
    """A local path or a remote URL (never shown in messages: it may hold credentials)."""
    mode: Literal["shared", "fresh"] = "shared"
    retain_failed: Duration = 86_400


# -- jobs --------------------------------------------------------------------------------


_DEFAULT_DST = DstPolicy()
_DEFAULT_OVERLAP = OverlapSpec()
_NO_ENTRIES: Mapping[str, Any] = {}
_spelled = lru_cache(maxsize=256)(format_duration)
"""``format_duration``, once per setting rather than once per job that inherits it."""


class Job(_Record):
    """One job: what it runs, when, and how its runs behave."""

    name: Name
    command: Command | None = None
    """An argument list, run without a shell."""
    run: NonEmptyText | None = None
    """A command line for ``/bin/sh -c``."""
    steps: Annotated[tuple[Step, ...], length(MAX_STEPS, "steps", minimum=1)] | None = None
    cron: CronText | None = None
    every: PositiveDuration | None = None
    at: TimesOfDay | None = None
    """Minutes after midnight, sorted."""
    time_zone: ZoneName = "UTC"
    # Shared frozen defaults come from factories: a plain default is deep-copied into every
    # job, which cost a fifth of loading a 10,000-job config.
    dst: DstPolicy = Field(default_factory=lambda: _DEFAULT_DST)
    jitter: Duration = 0
    on: OnSpec | None = None
    webhook: Flag = False
    timeout: PositiveDuration = 3600
    catch_up: CatchUp = Field(default_factory=lambda: DEFAULT_CATCH_UP)
    overlap: OverlapSpec = Field(default_factory=lambda: _DEFAULT_OVERLAP)
    retry: Retry | None = None
    notify: NotifyOutcomes = _DEFAULT_NOTIFY
    # Mappings are read-only (``Mapping``) in a frozen record, so jobs share one empty one.
    env: Mapping[EnvKey, Text] = Field(default_factory=lambda: _NO_ENTRIES)
    inputs: Mapping[str, InputSpec] = Field(default_factory=lambda: _NO_ENTRIES)
    secrets: JobSecrets = ()
    dir: NonEmptyText | None = None
    workspace: Workspace | None = None
    paused_on_start: Flag = False
    durable: Durable | None = None
    nodes: NodeGlobs | None = None
    """With a PostgreSQL state: the nodes (globs of ``settings.node`` names) this job's runs
    may start on; None: any."""

    RULES: ClassVar[Sequence[rules.Rule[Any]]] = rules.JOB_RULES

    @classmethod
    def config_keys(cls) -> tuple[str, ...]:
        """A job's name is its key under ``jobs``, not one of its own keys."""
        return tuple(sorted(set(cls.model_fields) - {"name"}))

    @model_validator(mode="before")
    @classmethod
    def _inherit(cls, data: Any, info: ValidationInfo) -> Any:
        """The name comes from the job's key, ``timeout`` and ``catch_up`` from settings."""
        context = load_context(info)
        if context is None or not isinstance(data, dict):
            return data
        filled = dict(data)
        if context.job_name is not None:
            filled.setdefault("name", context.job_name)
        if context.settings is not None:
            filled.setdefault("timeout", _spelled(context.settings.timeout))
            filled.setdefault("catch_up", context.settings.catch_up)
        return filled

    @field_validator("inputs", mode="before")
    @classmethod
    def _declarations(cls, value: Any, info: ValidationInfo) -> Any:
        """Input names must not repeat env keys, so env (validated first) is consulted."""
        env = info.data.get("env")
        return declare_inputs(value, tuple(env) if isinstance(env, Mapping) else ())

    @property
    def is_timed(self) -> bool:
        """Whether the job has calendar slots (cron or at) with a catch-up window."""
        return self.cron is not None or self.at is not None

    @property
    def timing_key(self) -> str | None:
        """A value that changes exactly when the timing changes; ``None`` without one.

        Spelling does not count (``0 9 * * MON-FRI`` and ``0 9 * * 1-5`` give the same key);
        the schedule, its zone, DST policy and jitter do. The daemon compares it across
        config edits to decide whether a timer must re-arm (SPEC §3).
        """
        if self.every is not None:
            return f"every {self.every}s jitter {self.jitter}s"
        if self.cron is not None:
            timing = "cron " + _canonical_cron(CronExpression.parse(self.cron))
        elif self.at is not None:
            timing = "at " + ",".join(f"{m // 60:02d}:{m % 60:02d}" for m in self.at)
        else:
            return None
        dst = f"{self.dst.gap.value}/{self.dst.fold.value}"
        return f"{timing} tz {self.time_zone} dst {dst} jitter {self.jitter}s"

    def retry_for(self, step: Step) -> Retry | None:
        """A step's own ``retry``, else the job's."""
        return step.retry if step.retry is not None else self.retry


def _canonical_cron(expression: CronExpression) -> str:
    """The expression's meaning, not its spelling: each field's values, ``*`` when all.

    Not cached: an apply asks once per job, and a cache of 10,000 keys cost more to fill
    (and 0.2 KiB a job to keep) than computing them.
    """
    fields = (
        (expression.minutes, 60),
        (expression.hours, 24),
        (expression.days, 31),
        (expression.months, 12),
        (expression.weekdays, 7),
    )
    text = " ".join(
        "*" if len(values) == size else ",".join(str(value) for value in sorted(values))
        for values, size in fields
    )
    return f"{text} either {expression.day_or} wildcard {expression.wildcard}"


# -- the whole file ----------------------------------------------------------------------


class Config(_Record):
    """A whole config file: settings, notifiers and jobs (in file order)."""

    settings: Settings = Settings()
    notifiers: Mapping[str, Notifier] = Field(default_factory=dict)
    jobs: Mapping[str, Job] = Field(default_factory=dict)
    filename: str

    RULES: ClassVar[Sequence[rules.Rule[Any]]] = rules.CONFIG_RULES
