"""What a fuzz check raises when it finds a failure, and the Hypothesis profile the suite runs."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, settings

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
          HealthCheck.large_base_example]

settings.register_profile("fuzz-suite", max_examples=300, deadline=None,
                          suppress_health_check=_QUIET)
SUITE = settings.get_profile("fuzz-suite")


class Finding(AssertionError):
    """What a check found: a rule broken by one case (not a crash: that raises itself).
    ``rule`` is the message before its values, which names the finding among others."""

    def __init__(self, message: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.rule = rule or message


def expect(holds: bool, message: str, *args: object) -> None:
    """Raise :class:`Finding` with ``message % args`` unless ``holds``; unlike ``assert``,
    never skipped (``python -O``), and the message is formatted only on a failure."""
    if not holds:
        raise Finding(message % args if args else message, message)


def shown(case: object, limit: int = 400) -> str:
    """``case`` as its dataclass repr, each long text or bytes field cut in the middle."""
    if not dataclasses.is_dataclass(case) or isinstance(case, type):
        return _cut(repr(case), limit)
    fields = (f"{field.name}={_cut(repr(getattr(case, field.name)), limit)}"
              for field in dataclasses.fields(case))
    return f"{type(case).__name__}({', '.join(fields)})"


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 3 // 4], text[-limit // 4:]
    return f"{head} ...({len(text) - len(head) - len(tail):,} characters)... {tail}"
