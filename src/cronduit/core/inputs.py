"""Job inputs: their declarations and the values a run may be given (SPEC §7).

An input becomes an environment variable of the run, and its value may come from outside
(a webhook body, an API call), so every value obeys the same rules before anything is
accepted: at most 256 UTF-8 bytes, no double quote, no backslash, no control character, and
then the input's own ``enum`` or ``pattern``. The rules are narrow on purpose: a value that
passes can be pasted into a shell line, a log or a JSON record without surprising anyone.

Messages name the input and the rule, never the value: a value may be a token someone
pasted by mistake, and error messages end up in logs and HTTP responses.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

MAX_VALUE_BYTES = 256
"""The longest value, in UTF-8 bytes: enough for a date, an id or a short name."""

RESERVED_PREFIX = "CRONDUIT_"
"""Variables cronduit sets itself (``CRONDUIT_JOB``, ``CRONDUIT_RUN_ID``...) live here."""

_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
# C0 controls, DEL and the C1 controls: exactly Unicode's "Cc" category.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SHOWN_NAME_CHARS = 64


class InputError(ValueError):
    """Given input values that cannot be accepted; ``messages`` lists every problem at once."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("; ".join(messages))
        self.messages = messages


@dataclass(frozen=True)
class InputSpec:
    """One declared input: its name, the rule its values obey, and the value timers use."""

    name: str
    enum: tuple[str, ...] | None
    pattern: str | None
    default: str
    description: str = ""

    def __post_init__(self) -> None:
        # The config loader reports these with locations first; this is the safety net that
        # keeps an invalid spec from ever reaching the loop.
        enum = None if self.enum is None else list(self.enum)
        errors = declaration_errors(self.name, enum, self.pattern, self.default, ())
        if errors:
            raise ValueError(f"input {self.name}: " + "; ".join(errors))


def declaration_errors(
    name: str,
    enum: list[str] | None,
    pattern: str | None,
    default: object,
    env_keys: Collection[str],
) -> list[str]:
    """Every rule an input declaration breaks, so a config reports all of them at once.

    Each message names the rule only; the caller prefixes the field path and location.
    """
    errors = _name_errors(name, env_keys)
    errors += _rule_choice_errors(enum, pattern)
    if enum is not None:
        errors += _enum_errors(enum)
    if pattern is not None:
        errors += _pattern_errors(pattern)
    errors += _default_errors(default, enum, pattern)
    return errors


def value_error(spec: InputSpec, value: str) -> str | None:
    """Why ``value`` cannot be given to ``spec``'s input, or ``None`` when it can."""
    problem = _value_problem(value, _usable_enum(spec.enum), spec.pattern)
    return None if problem is None else f"input {spec.name}: {problem}"


def resolve_inputs(specs: Mapping[str, InputSpec], given: Mapping[str, str]) -> dict[str, str]:
    """The values a run gets: each declared default, overridden by the values ``given``.

    Raises ``InputError`` listing every unknown name and every invalid value, so a caller
    fixes its request once rather than one complaint at a time. Timer firings pass ``{}``.
    """
    messages = [_unknown_message(name, specs) for name in given if name not in specs]
    for name, value in given.items():
        if name in specs:
            problem = _given_value_error(specs[name], value)
            if problem is not None:
                messages.append(problem)
    if messages:
        raise InputError(messages)
    resolved = {name: spec.default for name, spec in specs.items()}
    resolved.update(given)
    return resolved


def _name_errors(name: str, env_keys: Collection[str]) -> list[str]:
    """The name becomes a variable of the run, so it must not clash with anything else there."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        return ["name must be an upper-case identifier ([A-Z_][A-Z0-9_]*)"]
    errors = []
    if name.startswith(RESERVED_PREFIX):
        errors.append(f"name must not start with {RESERVED_PREFIX}: cronduit sets those itself")
    if name in env_keys:
        errors.append("name repeats a key of env: the variable would have two values")
    return errors


def _rule_choice_errors(enum: list[str] | None, pattern: str | None) -> list[str]:
    """One rule per input: with both, a reader could not tell which one decides."""
    if enum is not None and pattern is not None:
        return ["give exactly one of enum or pattern, not both"]
    if enum is None and pattern is None:
        return ["give exactly one of enum or pattern"]
    return []


def _enum_errors(enum: list[str]) -> list[str]:
    """An enum lists the values callers may pick, so each must itself be a valid value."""
    if not enum:
        return ["enum must list at least one value"]
    errors = []
    seen: dict[str, int] = {}
    for position, item in enumerate(enum, start=1):
        if not isinstance(item, str):
            errors.append(f"enum value {position} must be a string (quote it in YAML)")
            continue
        problem = _value_problem(item, None, None)
        if problem is not None:
            errors.append(f"enum value {position}: {problem}")
        if item in seen:
            errors.append(f"enum value {position} repeats enum value {seen[item]}")
        seen.setdefault(item, position)
    return errors


def _pattern_errors(pattern: str) -> list[str]:
    """A pattern that does not compile would refuse every value, including the default."""
    try:
        _compiled(pattern)
    except re.error as error:
        return [f"pattern is not a valid regular expression: {error}"]
    except (OverflowError, RecursionError):
        return ["pattern is not a valid regular expression: too large or too deeply nested"]
    return []


def _default_errors(default: object, enum: list[str] | None, pattern: str | None) -> list[str]:
    """Timer firings run with the defaults, so a default must pass the input's own rules."""
    if default is None:
        return ["default is required (a string): timer firings run with the defaults"]
    if not isinstance(default, str):
        return ["default must be a string (quote it in YAML)"]
    # With both rules or a broken one, only the value rules can be checked meaningfully.
    enum_rule = _usable_enum(enum) if pattern is None else None
    pattern_rule = None
    if enum is None and pattern is not None and not _pattern_errors(pattern):
        pattern_rule = pattern
    problem = _value_problem(default, enum_rule, pattern_rule)
    return [] if problem is None else [f"default {problem}"]


def _value_problem(value: str, enum: tuple[str, ...] | None, pattern: str | None) -> str | None:
    """The first value rule ``value`` breaks, phrased without quoting the value."""
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return "must be valid Unicode text (it holds a lone surrogate)"
    if size > MAX_VALUE_BYTES:
        return f"must be at most {MAX_VALUE_BYTES} bytes in UTF-8 (it has {size})"
    if '"' in value:
        return "must not contain a double quote"
    if "\\" in value:
        return "must not contain a backslash"
    if _CONTROL.search(value):
        return "must not contain a control character"
    if enum is not None and value not in enum:
        return "must be one of " + ", ".join(enum)
    if pattern is not None and _compiled(pattern).fullmatch(value) is None:
        return f"must match the whole pattern {pattern}"
    return None


def _given_value_error(spec: InputSpec, value: object) -> str | None:
    """Values arrive from JSON bodies too, where a number or a list is one keystroke away."""
    if not isinstance(value, str):
        return f"input {spec.name}: must be a string"
    return value_error(spec, value)


def _unknown_message(name: str, specs: Mapping[str, InputSpec]) -> str:
    """Listing the declared names turns a typo into a one-glance fix."""
    declared = ", ".join(specs) if specs else "none: this job declares no inputs"
    return f"unknown input {_shown_name(name)} (declared: {declared})"


def _shown_name(name: object) -> str:
    """An unknown name comes from outside; show it only when it is short and printable."""
    if isinstance(name, str) and _NAME.fullmatch(name) and len(name) <= _SHOWN_NAME_CHARS:
        return name
    return ascii(str(name)[:_SHOWN_NAME_CHARS])


def _usable_enum(enum: Collection[object] | None) -> tuple[str, ...] | None:
    """The enum's strings to check a value against; none when it has none (an empty enum,
    or one of numbers, is reported as such: checking against it would only add noise)."""
    strings = tuple(item for item in enum if isinstance(item, str)) if enum else ()
    return strings or None


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    """Patterns are checked on every webhook and manual run; compile each one once."""
    return re.compile(pattern)
