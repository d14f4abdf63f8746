"""The fuzz targets by name, each a strategy of cases and a session that checks one case.

``bench/fuzz.py`` runs them at 100,000 cases and more; the suite's fuzz tests use the
strategies and checks directly. A session is a context manager yielding the check: the HTTP
target opens its app and store once for all its cases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.fuzzing import config, cron, http

Check = Callable[[Any], None]


@dataclass(frozen=True)
class Target:
    """A fuzz target: what it fuzzes, its cases, how to check one, its share of a run."""

    name: str
    about: str
    cases: Callable[[], st.SearchStrategy[Any]]
    session: Callable[[Path | None], AbstractContextManager[Check]]
    share: float


@contextmanager
def _plain(check: Check) -> Iterator[Check]:
    yield check


@contextmanager
def _http(folder: Path | None) -> Iterator[Check]:
    with http.session(folder) as fuzz:
        yield fuzz.check


TARGETS = (
    Target("config", "the config loader: any text or shape -> a config or located errors",
           config.config_cases, lambda _: _plain(config.check), 0.4),
    Target("http", "webhook, GitHub and API requests through the ASGI app -> never a 5xx",
           http.http_cases, _http, 0.3),
    Target("cron", "cron expressions -> parsed with a next slot, or refused cleanly",
           cron.cron_cases, lambda _: _plain(cron.check), 0.3),
)
BY_NAME = {target.name: target for target in TARGETS}
