"""Config errors: where (``FILE:LINE:COL``) and what, and never the offending value.

Validation finds a problem by its *path* in the data (``jobs.report.time_zone``) long before
anyone knows where that path sits in the file, so a :class:`Problem` carries the path and
the loader turns it into a :class:`ConfigError` with a line and a column at the very end.

A message names the field and the rule it breaks. It may quote things that are safe and
helpful to see again (a cron expression, a zone name, an allowed value, a key) but never a
value that could be a secret: env values, URLs, webhook bodies, commands.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic_core import PydanticCustomError

Path = tuple[str | int, ...]
"""Keys and list indexes from the top of the file down to one value."""

RULES_ERROR = "cronduit_rules"
_SHOWN_LIMIT = 64
"""The pydantic error type that carries :class:`Problem` objects out of a validator."""


@dataclass(frozen=True, order=True)
class ConfigError:
    """One located error, printed as ``FILE:LINE:COL: message`` (line and column 1-based)."""

    filename: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        # One error, one line, whatever text the message quotes: editors parse these.
        message = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in self.message)
        return f"{self.filename}:{self.line}:{self.column}: {message}"


class ConfigErrors(ValueError):
    """Every error of a config file at once, sorted by position, so one pass fixes them all."""

    def __init__(self, errors: Iterable[ConfigError]) -> None:
        self.errors: tuple[ConfigError, ...] = tuple(sorted(set(errors)))
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(error) for error in self.errors)


@dataclass(frozen=True)
class Problem:
    """A rule broken at ``path``; ``at_key`` points at the key rather than its value.

    ``path`` is relative to whatever validated it; the loader prefixes the section's path.
    With ``about_parent`` the message is labelled with the parent's path (an unknown key is
    a problem of the mapping that holds it) while still pointing at the key itself.
    """

    path: Path
    message: str
    at_key: bool = False
    about_parent: bool = False

    def under(self, prefix: Path) -> Problem:
        """The same problem seen from ``prefix`` further up."""
        return Problem((*prefix, *self.path), self.message, self.at_key, self.about_parent)

    def label(self) -> str:
        """The dotted name of the field the message is about (``jobs.report.retry``)."""
        return dotted(self.path[:-1] if self.about_parent else self.path)


def dotted(path: Path) -> str:
    """``("jobs", "etl", "steps", 0, "id")`` -> ``jobs.etl.steps[0].id``."""
    text = ""
    for element in path:
        if isinstance(element, int):
            text += f"[{element}]"
        else:
            key = _path_key(element)
            text += f".{key}" if text else key
    return text


def _path_key(key: str) -> str:
    """A key as a dotted path shows it: quoted when it is blank, has spaces at its ends or
    holds a dot, so the path reads unambiguously and an error never starts with a space."""
    plain = readable(key)
    if plain == key and key.strip() == key and "." not in key:
        return key
    return plain if plain != key else ascii(key)


def readable(text: str, limit: int = _SHOWN_LIMIT) -> str:
    """``text`` as it may appear in a message: printable and short, else escaped and cut.

    Keys and names come from the file; a newline in one must not break the one error per
    line that editors and scripts parse.
    """
    if text.isprintable() and 0 < len(text) <= limit:
        return text
    return ascii(text[:limit])


def shown(text: str) -> str:
    """``text`` quoted for a message (``'timezone'``), escaped when it is not plain."""
    return f"'{text}'" if readable(text) == text else readable(text)


def rules_broken(problems: Sequence[Problem]) -> PydanticCustomError:
    """A pydantic error carrying ``problems`` out of a validator, each with its own path.

    Pydantic gives a validator one location; rules about several fields need several, so
    the problems ride in the error's context and the translator unpacks them.
    """
    detail = "; ".join(
        f"{problem.label()}: {problem.message}" if problem.label() else problem.message
        for problem in problems
    )
    return PydanticCustomError(
        RULES_ERROR, "{detail}", {"detail": detail, "problems": tuple(problems)}
    )


def invalid(message: str, path: Path = (), *, at_key: bool = False) -> PydanticCustomError:
    """One problem from a field validator, phrased by cronduit rather than by pydantic."""
    return rules_broken([Problem(path, message, at_key)])
