"""The value types of the config file: each one parses its YAML form and says what is wrong.

Each type is an ``Annotated`` pydantic type whose validators raise cronduit's own messages
(through :func:`~cronduit.core.config.errors.invalid`), so the text a user reads is written
here, next to the rule. Primitive types are strict: ``"yes"`` is not a boolean, ``true`` is
not a number and ``8080`` is not a string.

Messages never repeat a value that may be secret (env values, URLs, commands, secret
names that might be secrets pasted by mistake); cron expressions, zone names, patterns,
outcomes and other vocabulary are safe to echo and help the reader.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Sized
from enum import StrEnum
from functools import lru_cache
from typing import Annotated, TypeVar
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator, Field, Strict, ValidationInfo

from cronduit.core.config.context import from_config
from cronduit.core.config.errors import Problem, invalid, rules_broken, shown
from cronduit.core.cron import CronError, CronExpression, ZoneError, load_zone
from cronduit.core.durations import DurationError, format_duration, parse_duration
from cronduit.core.enums import Outcome
from cronduit.core.inputs import RESERVED_PREFIX
from cronduit.core.limits import (
    MAX_ATTEMPTS,
    MAX_CATCH_UP_RUNS,
    MAX_DURATION,
    MAX_KEPT_RUNS,
    MAX_LEASE,
    MAX_MAX_LOG,
    MAX_NODE_GLOBS,
    MAX_NODE_NAME,
    MAX_PARALLEL,
    MAX_PORT,
    MAX_RETENTION,
    MIN_LEASE,
    MIN_MAX_LOG,
)
from cronduit.core.matching import CONCLUSIONS, event_name_error, pattern_error
from cronduit.core.sizes import SIZE_HINT, SizeError, format_size, parse_size

T = TypeVar("T")
Sized_T = TypeVar("Sized_T", bound=Sized)

NAME = re.compile(r"[a-z][a-z0-9_-]{0,62}")
NAME_RULE = "a lower-case letter, then up to 62 lower-case letters, digits, _ or -"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UPPER_IDENTIFIER = re.compile(r"[A-Z_][A-Z0-9_]*")
_STEP_REF = re.compile(r"([a-z][a-z0-9_-]{0,62})\.([A-Z_][A-Z0-9_]*)")
_TIME_OF_DAY = re.compile(r"([01]?[0-9]|2[0-3]):([0-5][0-9])")
_LISTEN_V6 = re.compile(r"\[([^\]]+)\]:([0-9]{1,5})")
_LISTEN = re.compile(r"([A-Za-z0-9.-]+):([0-9]{1,5})")
_HOSTNAME = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?:\.(?!-)[A-Za-z0-9-]{1,63})*\.?")
_DURATION_HINT = "must be a duration such as 30s, 15m, 6h, 1d or 1h30m"

NOTIFY_OUTCOMES = (Outcome.FAILURE, Outcome.TIMEOUT, Outcome.SUCCESS, Outcome.SKIPPED)
"""Outcomes that may be notified: a cancelled run was stopped by someone who knows."""


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a job, a notifier or a step, or ``None``."""
    if isinstance(name, str) and NAME.fullmatch(name):
        return None
    return f"must be a name: {NAME_RULE}"


# -- primitives --------------------------------------------------------------------------


def _not_blank(value: str) -> str:
    if not value.strip():
        raise invalid("must not be empty")
    return value


Text = Annotated[str, Strict()]
NonEmptyText = Annotated[str, Strict(), AfterValidator(_not_blank)]
Flag = Annotated[bool, Strict()]


# Counts: whole numbers from 1 to their bound in cronduit.core.limits.
KeptRuns = Annotated[int, Strict(), Field(ge=1, le=MAX_KEPT_RUNS)]
CatchUpRuns = Annotated[int, Strict(), Field(ge=1, le=MAX_CATCH_UP_RUNS)]
ParallelRuns = Annotated[int, Strict(), Field(ge=1, le=MAX_PARALLEL)]
Attempts = Annotated[int, Strict(), Field(ge=1, le=MAX_ATTEMPTS)]


def _name(value: str) -> str:
    problem = name_problem(value)
    if problem:
        raise invalid(problem)
    return value


Name = Annotated[str, Strict(), AfterValidator(_name)]


# -- durations ---------------------------------------------------------------------------


@lru_cache(maxsize=1024)
def _parsed_duration(text: str, maximum: int) -> int:
    """A config repeats a few durations across thousands of jobs: each is parsed once."""
    return parse_duration(text.strip(), maximum)


def _seconds(value: object, info: ValidationInfo, maximum: int = MAX_DURATION) -> int:
    """A duration string; from code (not from a file) a whole number of seconds too. Either
    way at most ``maximum`` seconds."""
    if isinstance(value, str):
        try:
            return _parsed_duration(value, maximum)
        except DurationError as error:
            raise invalid(str(error)) from None
    if isinstance(value, int) and not isinstance(value, bool):
        if from_config(info):
            raise invalid(f"{_DURATION_HINT}: a number alone has no unit")
        if value > maximum:
            raise invalid(f"must be at most {format_duration(maximum)}")
        return value
    raise invalid(_DURATION_HINT)


def _duration(minimum: int = 0, maximum: int = MAX_DURATION) -> BeforeValidator:
    def check(value: object, info: ValidationInfo) -> int:
        seconds = _seconds(value, info, maximum)
        if seconds < minimum:
            raise invalid(f"must be at least {format_duration(minimum)}")
        return seconds

    return BeforeValidator(check)


Duration = Annotated[int, _duration()]
"""From 0s to :data:`~cronduit.core.limits.MAX_DURATION` (ten years)."""
PositiveDuration = Annotated[int, _duration(minimum=1)]
"""From 1s to ten years."""
Retention = Annotated[int, _duration(minimum=1, maximum=MAX_RETENTION)]
LeaseDuration = Annotated[int, _duration(minimum=MIN_LEASE, maximum=MAX_LEASE)]
"""A node lease: long enough to be renewed (every third of it) through a slow second, short
enough that a dead daemon's runs are taken over while they still matter."""


def _window(value: object, info: ValidationInfo) -> int | None:
    """``true`` is no limit, ``false`` never late (a zero window), else a duration."""
    if value is True or (value is None and not from_config(info)):
        return None
    if value is False:
        return 0
    if isinstance(value, str | int):
        return _seconds(value, info)
    raise invalid(f"{_DURATION_HINT}, true (no limit) or false (never run late)")


Window = Annotated[int | None, BeforeValidator(_window)]


# -- sizes -------------------------------------------------------------------------------


def _bytes(value: object, info: ValidationInfo) -> int:
    """A size string; from code (not from a file) a whole number of bytes too."""
    if isinstance(value, str):
        try:
            return parse_size(value.strip())
        except SizeError as error:
            raise invalid(str(error)) from None
    if isinstance(value, int) and not isinstance(value, bool):
        if not from_config(info):
            return value
        raise invalid(f"{SIZE_HINT}: a number alone has no unit")
    raise invalid(SIZE_HINT)


def _size(minimum: int, maximum: int) -> BeforeValidator:
    def check(value: object, info: ValidationInfo) -> int:
        size = _bytes(value, info)
        if size < minimum:
            raise invalid(f"must be at least {format_size(minimum)}")
        if size > maximum:
            raise invalid(f"must be at most {format_size(maximum)}")
        return size

    return BeforeValidator(check)


Size = Annotated[int, _size(minimum=MIN_MAX_LOG, maximum=MAX_MAX_LOG)]
"""A size of a file cronduit keeps (``max_log``): from 1MiB to 1TiB."""


# -- times of day ------------------------------------------------------------------------


def _time_of_day(value: object, info: ValidationInfo) -> int:
    """``HH:MM`` -> minutes after midnight; from code, the minutes themselves."""
    minutes = _minutes(value, from_file=from_config(info))
    if minutes is None:
        raise invalid("must be a time of day HH:MM, from 00:00 to 23:59")
    return minutes


def _minutes(value: object, *, from_file: bool) -> int | None:
    if isinstance(value, str):
        match = _TIME_OF_DAY.fullmatch(value.strip())
        return int(match[1]) * 60 + int(match[2]) if match else None
    if isinstance(value, int) and not isinstance(value, bool) and not from_file:
        return value if 0 <= value < 24 * 60 else None
    return None


def _one_or_many(value: object) -> object:
    """``at: "05:17"`` reads as the one-item list it obviously means."""
    return [value] if isinstance(value, str) else value


def _times_of_day(times: tuple[int, ...]) -> tuple[int, ...]:
    if not times:
        raise invalid("must list at least one time of day")
    _refuse_repeats(times, lambda minutes: f"{minutes // 60:02d}:{minutes % 60:02d}")
    return tuple(sorted(times))


TimesOfDay = Annotated[
    tuple[Annotated[int, BeforeValidator(_time_of_day)], ...],
    BeforeValidator(_one_or_many),
    AfterValidator(_times_of_day),
]


# -- lists -------------------------------------------------------------------------------


def _refuse_repeats(items: tuple[T, ...], shown: Callable[[T], str] | None = None) -> None:
    """A repeated entry is a slip (or a merge gone wrong); say which entry repeats which."""
    first: dict[T, int] = {}
    problems = []
    for index, item in enumerate(items):
        if item in first:
            what = f"'{shown(item)}' " if shown else ""
            problems.append(Problem((index,), f"repeats {what}(first at [{first[item]}])"))
        first.setdefault(item, index)
    if problems:
        raise rules_broken(problems)


def length(maximum: int, noun: str, minimum: int = 0) -> AfterValidator:
    """Bounds on a list or mapping, worded with what it holds (``at most 32 steps``)."""

    def check(items: Sized_T) -> Sized_T:
        if len(items) < minimum:
            raise invalid(f"must list at least {minimum} {noun if minimum > 1 else noun[:-1]}")
        if len(items) > maximum:
            raise invalid(f"must list at most {maximum} {noun}")
        return items

    return AfterValidator(check)


def _unique(items: tuple[T, ...]) -> tuple[T, ...]:
    _refuse_repeats(items, str)
    return items


# -- vocabulary --------------------------------------------------------------------------

E = TypeVar("E", bound=StrEnum)


def choice(allowed: tuple[E, ...]) -> BeforeValidator:
    """An enum member by its value, with the allowed values in the message."""
    by_value = {member.value: member for member in allowed}

    def check(value: object) -> E:
        if isinstance(value, str) and value in by_value:
            return by_value[value]
        raise invalid("must be one of " + ", ".join(by_value))

    return BeforeValidator(check)


NotifyOutcome = Annotated[Outcome, choice(NOTIFY_OUTCOMES)]
AnyOutcome = Annotated[Outcome, choice(tuple(Outcome))]
NotifyOutcomes = Annotated[tuple[NotifyOutcome, ...], AfterValidator(_unique)]


def _outcomes_given(items: tuple[Outcome, ...]) -> tuple[Outcome, ...]:
    if not items:
        raise invalid("must list at least one outcome")
    return _unique(items)


AfterOutcomes = Annotated[tuple[AnyOutcome, ...], AfterValidator(_outcomes_given)]


# -- cron and zones ----------------------------------------------------------------------


def _cron(value: str) -> str:
    try:
        CronExpression.parse(value)
    except CronError as error:
        raise invalid(str(error)) from None
    return value


def _zone(value: str) -> str:
    try:
        load_zone(value)
    except ZoneError as error:
        raise invalid(str(error)) from None
    return value


CronText = Annotated[str, Strict(), AfterValidator(_cron)]
ZoneName = Annotated[str, Strict(), AfterValidator(_zone)]


# -- names of variables and secrets ------------------------------------------------------


def _outside_reserved(value: str) -> str:
    if value.startswith(RESERVED_PREFIX):
        raise invalid(f"must not start with {RESERVED_PREFIX}: cronduit sets those itself")
    return value


def _secret_name(value: str) -> str:
    if not _IDENTIFIER.fullmatch(value):
        raise invalid(
            "must be the name of a secret (letters, digits and _, not starting with a digit), "
            "not the secret itself"
        )
    return value


def _env_key(value: str) -> str:
    if not _IDENTIFIER.fullmatch(value):
        raise invalid("must be a variable name (letters, digits and _, not starting with a digit)")
    return _outside_reserved(value)


def _variable(value: str) -> str:
    if not _UPPER_IDENTIFIER.fullmatch(value):
        raise invalid("must be an upper-case variable name ([A-Z_][A-Z0-9_]*)")
    return _outside_reserved(value)


def _step_ref(value: str) -> str:
    if not _STEP_REF.fullmatch(value):
        raise invalid("must name an earlier step's output as step.OUTPUT (build.VERSION)")
    return value


SecretName = Annotated[str, Strict(), AfterValidator(_secret_name)]
JobSecret = Annotated[
    str, Strict(), AfterValidator(_secret_name), AfterValidator(_outside_reserved)
]
EnvKey = Annotated[str, Strict(), AfterValidator(_env_key)]
Variable = Annotated[str, Strict(), AfterValidator(_variable)]
StepRef = Annotated[str, Strict(), AfterValidator(_step_ref)]
Variables = Annotated[tuple[Variable, ...], AfterValidator(_unique)]
JobSecrets = Annotated[tuple[JobSecret, ...], AfterValidator(_unique)]


def split_step_ref(ref: str) -> tuple[str, str]:
    """``"build.VERSION"`` -> ``("build", "VERSION")``."""
    step, _, output = ref.partition(".")
    return step, output


# -- commands ----------------------------------------------------------------------------


def _argument_list(value: object) -> object:
    if isinstance(value, str):
        raise invalid("must be a list: the program, then its arguments (for a shell line use run)")
    return value


def _command(value: tuple[str, ...]) -> tuple[str, ...]:
    if not value:
        raise invalid("must list the program to run, then its arguments")
    if not value[0].strip():
        raise invalid("the program (the first item) must not be empty", (0,))
    return value


Command = Annotated[tuple[Text, ...], BeforeValidator(_argument_list), AfterValidator(_command)]


# -- code-host events --------------------------------------------------------------------


def _event(value: str) -> str:
    problem = event_name_error(value)
    if problem:
        raise invalid(problem)
    return value


def _filter_pattern(value: str) -> str:
    if not value.strip("!").strip():
        raise invalid("must be a pattern (after any leading !)")
    problem = pattern_error(value)
    if problem:
        raise invalid(problem)
    return value


def _some_positive(rules: tuple[str, ...]) -> tuple[str, ...]:
    if rules and all(rule.startswith("!") for rule in rules):
        raise invalid("only ! rules: nothing is included, so the job could never run")
    return rules


def _conclusion(value: object) -> str:
    if isinstance(value, str) and value.lower() in CONCLUSIONS:
        return value.lower()
    given = f" {shown(value)}" if isinstance(value, str) else ""
    allowed = ", ".join(sorted(CONCLUSIONS))
    raise invalid(f"unknown conclusion{given}; allowed: {allowed}")


EventName = Annotated[str, Strict(), AfterValidator(_event)]
Events = Annotated[tuple[EventName, ...], AfterValidator(_unique)]
Filter = Annotated[
    tuple[Annotated[str, Strict(), AfterValidator(_filter_pattern)], ...],
    AfterValidator(_some_positive),
]
Conclusions = Annotated[
    tuple[Annotated[str, BeforeValidator(_conclusion)], ...], AfterValidator(_unique)
]


# -- addresses ---------------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """Whether a listen host is this machine's alone: ``localhost``, or an address of
    127.0.0.0/8 or ``::1``. Any other name or address may be reached from elsewhere."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listen_parts(value: str) -> tuple[str, int]:
    """``"127.0.0.1:8770"`` -> ``("127.0.0.1", 8770)``; ``"[::1]:8770"`` -> ``("::1", 8770)``.

    Raises ``ValueError`` saying what is wrong.
    """
    v6 = _LISTEN_V6.fullmatch(value)
    match = v6 or _LISTEN.fullmatch(value)
    if match is None:
        raise ValueError("must be host:port, such as 127.0.0.1:8770 or [::1]:8770")
    host, port = match[1], int(match[2])
    if v6:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError("must hold an IPv6 address inside the brackets") from None
    elif not _HOSTNAME.fullmatch(host):
        raise ValueError("must start with a host name or an IP address")
    if not 0 <= port <= MAX_PORT:  # 0: the system picks a free port (the daemon logs which)
        raise ValueError(f"port must be from 0 to {MAX_PORT}")
    return host, port


def _listen(value: str) -> str:
    try:
        listen_parts(value)
    except ValueError as error:
        raise invalid(str(error)) from None
    return value


def _state(value: str) -> str:
    scheme = value.partition("://")[0].lower() if "://" in value else None
    if not value.strip() or scheme not in (None, "postgresql", "postgres"):
        raise invalid("must be a directory path or a postgresql:// URL")
    return value


def _http_url(value: str) -> str:
    if not _is_http_url(value):
        raise invalid("must be an http:// or https:// URL")
    return value


def _is_http_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:  # a malformed port or IPv6 literal
        return False
    return parts.scheme in ("http", "https") and bool(host) and value == value.strip()


NODE_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_NODE_NAME - 1}}}")
NODE_GLOB = re.compile(rf"[A-Za-z0-9*?][A-Za-z0-9._*?-]{{0,{MAX_NODE_NAME - 1}}}")


def _node_name(value: str) -> str:
    if not NODE_NAME.fullmatch(value):
        raise invalid("must be 1 to 63 letters, digits, dots, dashes or underscores, "
                      "starting with a letter or digit")
    return value


def _node_glob(value: str) -> str:
    if not NODE_GLOB.fullmatch(value):
        raise invalid("must be a node name, with * and ? standing for any characters")
    return value


ListenAddress = Annotated[str, Strict(), AfterValidator(_listen)]
NodeName = Annotated[str, Strict(), AfterValidator(_node_name)]
"""A daemon's node name (``settings.node``): what leases, run records and ``nodes:`` name."""
NodeGlobs = Annotated[
    tuple[Annotated[str, Strict(), AfterValidator(_node_glob)], ...],
    AfterValidator(_unique), length(MAX_NODE_GLOBS, "nodes", minimum=1),
]
"""A job's ``nodes:``: the node names it may run on, as shell-style globs."""
StateLocation = Annotated[str, Strict(), AfterValidator(_state)]
HttpUrl = Annotated[str, Strict(), AfterValidator(_http_url)]
