"""Which code-host deliveries start which jobs: the ``on:`` rules (SPEC §1 and §4).

Branch and path filters use GitHub Actions' filter patterns, because the people writing
them already know that dialect from their workflows (GitHub's "Filter pattern cheat sheet"):

- ``*`` matches zero or more characters but not ``/``; ``**`` matches zero or more of any
  character, and ``**/`` matches zero or more whole folders (so ``**/README.md`` matches
  ``README.md`` at the root too);
- ``?`` makes the preceding character (or ``[...]`` set) optional, ``+`` repeats it;
- ``[...]`` matches one listed character or one in a range of ``a-z``, ``A-Z`` or ``0-9``;
- ``\\`` makes the next character literal; a leading ``!`` turns the rule into an exclusion.

A filter is a list of such rules read in order: a name is included when the *last* rule
that matches it is positive. Names are compared case-sensitively, as git does.

Everything here is decided from values: the HTTP edge turns a GitHub payload into a
``Delivery`` and asks ``rule_matches`` for each job.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

CONCLUSIONS = frozenset(
    {
        "success",
        "failure",
        "neutral",
        "cancelled",
        "skipped",
        "timed_out",
        "action_required",
        "stale",
        "startup_failure",
    }
)
"""The conclusions GitHub gives a finished check suite or check run; ``on.conclusions`` values."""

_BRANCH_PREFIX = "refs/heads/"
_TAG_PREFIX = "refs/tags/"
_EVENT_NAME = re.compile(r"[a-z][a-z_]*(?:\.[a-z][a-z_]*)?")

# One token of a filter pattern. Order matters: "**/" before "**" before "*".
_TOKEN = re.compile(
    r"(?P<folders>\*\*/)|(?P<globstar>\*\*)|(?P<star>\*)"
    r"|\\(?P<escaped>.)|\[(?P<set>[^\]]*)\]|(?P<quantifier>[?+])"
    r"|(?P<unclosed>\[)|(?P<dangling>\\)|(?P<char>.)",
    re.DOTALL,
)
_SET_ITEM = r"(?:[a-z](?:-[a-z])?|[A-Z](?:-[A-Z])?|[0-9](?:-[0-9])?)"
_SET_BODY = re.compile(f"{_SET_ITEM}+")
_RANGE = re.compile(r"(.)-(.)")


class PatternError(ValueError):
    """A filter pattern GitHub's dialect cannot read; the message says where and why."""


@dataclass(frozen=True)
class _Rule:
    """A compiled filter pattern: whether it excludes, and the regex for the whole name."""

    negative: bool
    regex: re.Pattern[str]


@dataclass(frozen=True)
class Delivery:
    """A code-host event reduced to what the ``on:`` rules look at.

    ``branch`` and ``tag`` come from a push's ref (``refs/heads/...``, ``refs/tags/...``; see
    ``ref_names``) or a check suite's head branch; at most one is set. ``files`` is ``None``
    when the changed-file list is missing or may be truncated. ``conclusion`` is set on a
    finished check suite or check run.
    """

    event: str
    action: str | None = None
    branch: str | None = None
    tag: str | None = None
    deleted: bool = False
    files: tuple[str, ...] | None = None
    conclusion: str | None = None

    def __post_init__(self) -> None:
        # A ref names a branch or a tag, never both; a payload that says both is misread.
        if self.branch is not None and self.tag is not None:
            raise ValueError("a delivery names a branch or a tag, not both")


@dataclass(frozen=True)
class OnRule:
    """A job's ``on:`` block: every non-empty filter must agree for a delivery to match.

    ``conclusions`` are lower-case members of ``CONCLUSIONS``. Patterns are compiled here,
    so a rule that exists can always be evaluated.
    """

    events: tuple[str, ...]
    branches: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    conclusions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [c for c in self.conclusions if c not in CONCLUSIONS]
        if unknown:
            raise ValueError(f"unknown conclusions {unknown}; allowed: {_allowed()}")
        for pattern in (*self.branches, *self.paths):
            _compile(pattern)


def ref_names(ref: str) -> tuple[str | None, str | None]:
    """The ``(branch, tag)`` a push's ref names: ``refs/heads/a/b`` is branch ``a/b``.

    Branch filters match the short name, as in GitHub Actions; a tag has no branch, so a
    tag push never passes a branch filter.
    """
    if ref.startswith(_BRANCH_PREFIX):
        return ref.removeprefix(_BRANCH_PREFIX), None
    if ref.startswith(_TAG_PREFIX):
        return None, ref.removeprefix(_TAG_PREFIX)
    return None, None


def event_matches(names: Sequence[str], event: str, action: str | None) -> bool:
    """Whether ``event`` (with ``action``) is one the job listed.

    ``push`` takes the event with any action; ``check_suite.completed`` takes only that
    action, so a job is not started by the ``requested`` half of the same event. Names are
    compared exactly, as GitHub sends them.
    """
    return any(_event_name_matches(name, event, action) for name in names)


def branches_match(globs: Sequence[str], branch: str | None) -> bool:
    """Whether ``branch`` passes a branch filter (empty: every delivery passes).

    A delivery that names no branch (a tag push, a fork's check suite) cannot be vouched
    for, so it never passes a filter that lists some.
    """
    if not globs:
        return True
    if branch is None:
        return False
    return _included(_compile_all(tuple(globs)), branch)


def paths_match(rules: Sequence[str], files: Sequence[str] | None) -> bool:
    """Whether a change passes a path filter: at least one changed file is included.

    An empty filter passes everything. ``files is None`` means the list is unknown or may
    be truncated: then the change passes, because skipping a needed run is worse than an
    extra one. An empty list (a commit that changed no file) includes nothing.
    """
    if not rules or files is None:
        return True
    compiled = _compile_all(tuple(rules))
    return any(_included(compiled, name) for name in files)


def rule_matches(rule: OnRule, delivery: Delivery) -> bool:
    """Whether ``delivery`` starts a job whose ``on:`` block is ``rule``."""
    return (
        event_matches(rule.events, delivery.event, delivery.action)
        and not delivery.deleted
        and branches_match(rule.branches, delivery.branch)
        and _paths_pass(rule.paths, delivery)
        and conclusions_match(rule.conclusions, delivery.conclusion)
    )


def conclusions_match(conclusions: Sequence[str], conclusion: str | None) -> bool:
    """Whether a finished check's ``conclusion`` is one the job listed (empty: any).

    GitHub sends lower-case conclusions, but compare without case so an upper-case one
    from another code host still counts. A delivery with no conclusion (a push, a check
    still running) never matches a job that asked for specific conclusions.
    """
    if not conclusions:
        return True
    if conclusion is None:
        return False
    return conclusion.lower() in {c.lower() for c in conclusions}


def pattern_error(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid filter pattern, or ``None``: for config validation."""
    try:
        _compile(pattern)
    except PatternError as error:
        return str(error)
    return None


def event_name_error(name: str) -> str | None:
    """Why ``name`` is not an ``on.events`` entry (``event`` or ``event.action``), or ``None``."""
    if _EVENT_NAME.fullmatch(name):
        return None
    return "must be an event name, optionally with an action (push, check_suite.completed)"


def _event_name_matches(name: str, event: str, action: str | None) -> bool:
    """One ``on.events`` entry against one delivery: the action only counts when named."""
    wanted_event, dot, wanted_action = name.partition(".")
    if not dot:
        return wanted_event == event
    return wanted_event == event and wanted_action == action


def _paths_pass(paths: Sequence[str], delivery: Delivery) -> bool:
    """Path filters are not evaluated for tag pushes, as in GitHub Actions.

    A tag points at a commit pushed before; it changes no file, and a job that filters on
    paths and listens to pushes would otherwise never see a release tag.
    """
    if delivery.tag is not None:
        return True
    return paths_match(paths, delivery.files)


def _included(rules: Sequence[_Rule], name: str) -> bool:
    """The last rule that matches decides: later rules win, ``!`` takes back."""
    for rule in reversed(rules):
        if rule.regex.fullmatch(name):
            return not rule.negative
    return False


@functools.lru_cache(maxsize=512)
def _compile_all(patterns: tuple[str, ...]) -> tuple[_Rule, ...]:
    """A job's filter is evaluated on every delivery; compile it once."""
    return tuple(_compile(pattern) for pattern in patterns)


@functools.lru_cache(maxsize=2048)
def _compile(pattern: str) -> _Rule:
    """Compile one filter pattern; ``!`` negates only as its first character."""
    negative = pattern.startswith("!")
    start = 1 if negative else 0
    if len(pattern) == start:
        raise PatternError("a pattern cannot be empty")
    return _Rule(negative, re.compile(_translate(pattern, start), re.DOTALL))


def _translate(pattern: str, start: int) -> str:
    """The regex for ``pattern[start:]``, token by token; quantifiers attach to the last atom.

    Positions in messages count from the start of the whole pattern, ``!`` included.
    """
    atoms: list[str] = []
    quantifiable = False
    for token in _TOKEN.finditer(pattern, start):
        kind, text = _kind(token)
        if kind == "quantifier":
            if not quantifiable:
                raise PatternError(_quantifier_message(text, token.start()))
            atoms[-1] += text
            quantifiable = False
            continue
        atoms.append(_atom(kind, text, token.start()))
        quantifiable = kind in {"escaped", "set", "char"}
    return "".join(atoms)


def _kind(token: re.Match[str]) -> tuple[str, str]:
    """The name of the group a token matched and that group's text."""
    kind = token.lastgroup
    assert kind is not None  # every alternative of _TOKEN is a named group
    return kind, token.group(kind)


def _atom(kind: str, text: str, position: int) -> str:
    """The regex for one token that is not a quantifier."""
    if kind == "folders":
        return "(?:.+/)?"
    if kind == "globstar":
        return ".*"
    if kind == "star":
        return "[^/]*"
    if kind == "set":
        return _set(text, position)
    if kind == "unclosed":
        raise PatternError(f"[ at position {position} has no closing ] (write \\[ for a [)")
    if kind == "dangling":
        raise PatternError("a pattern cannot end with \\ (write \\\\ for a backslash)")
    return re.escape(text)


def _set(body: str, position: int) -> str:
    """A ``[...]`` set: letters and digits, and ranges within ``a-z``, ``A-Z`` or ``0-9``."""
    if not _SET_BODY.fullmatch(body):
        raise PatternError(
            f"[{body}] at position {position}: a set lists letters, digits and ranges "
            "within a-z, A-Z or 0-9 (escape other characters with \\ outside a set)"
        )
    for low, high in _RANGE.findall(body):
        if low > high:
            raise PatternError(f"[{body}] at position {position}: range {low}-{high} is reversed")
    return f"[{body}]"


def _quantifier_message(quantifier: str, position: int) -> str:
    """``?`` and ``+`` act on the character before them; elsewhere they mean nothing."""
    return (
        f"{quantifier} at position {position} follows no character or [...] set "
        f"(it applies to the character before it; write \\{quantifier} for a literal one)"
    )


def _allowed() -> str:
    """The allowed conclusions, sorted, for messages."""
    return ", ".join(sorted(CONCLUSIONS))
