"""``load_config``: config text in, a :class:`Config` or every error of the file out.

The sections are validated one by one (``settings``, each notifier, each job) so that one
broken job never hides another's errors. When a section fails, it is validated again
without the keys that failed: the rules that read only trusted keys still run, so the user
sees "retry does not fit the timeout" in the same pass as "unknown key 'timezone'".
Problems are found by path and placed at the end, with the document's positions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from cronduit.core.config.context import LoadContext
from cronduit.core.config.errors import RULES_ERROR, ConfigError, ConfigErrors, Path, Problem
from cronduit.core.config.fields import NAME_RULE, name_problem
from cronduit.core.config.messages import data_path, detail_problems, unknown_key_message
from cronduit.core.config.model import Config, Job, Notifier, Settings
from cronduit.core.config.source import Document, read_document

ROOT_KEYS = ("jobs", "notifiers", "settings")

# Features the config model describes (SPEC §8, §10) but this version does not run. A file
# that uses one is refused, at the key, instead of being served and failing at the first
# run; records built by code (the model's own tests) pass. Each entry goes when its feature
# is built.
NOT_YET_AVAILABLE = "not available yet in this version of cronduit"
UNAVAILABLE_JOB_KEYS: dict[str, str] = {}
UNAVAILABLE_STEP_KEYS: dict[str, str] = {}
RUNS_DIR_WITHOUT_POSTGRES = (
    "applies only with a postgresql:// state; with SQLite the state directory holds the runs' "
    "logs and outputs"
)
_STAND_IN_NAME = "job"  # validates a job whose key is not a valid name, for its other errors

R = TypeVar("R", bound=BaseModel)


def load_config(text: str, filename: str) -> Config:
    """Parse and validate config ``text``; ``filename`` labels errors and the result.

    Raises :class:`~cronduit.core.config.errors.ConfigErrors` with every error found.

    The cyclic garbage collector is left running. Pausing it around the parse, once a third
    of loading 10,000 jobs, no longer pays since the records became compact: measured on
    2 cores, 10,000 jobs load in 0.20 s with it paused or not (the collector spends 4 ms),
    100,000 in 2.1 s paused against 2.3 s running (0.14 s in four full collections); not
    worth a switch of the whole process's collector, which every thread would feel.
    """
    return _Loading(read_document(text, filename), filename).run()


def load_settings(text: str, filename: str) -> Settings | None:
    """The file's ``settings`` when they validate on their own, whatever the rest holds;
    None when they do not (or the file does not parse).

    A half-edited file still says where its state lives, so a command can find the config
    the daemon applied there (see :mod:`cronduit.core.config.in_force`).
    """
    try:
        loading = _Loading(read_document(text, filename), filename)
    except ConfigErrors:
        return None
    data = loading.document.data
    raw = data.get("settings") if isinstance(data, dict) else None
    settings, _ = loading._settings(raw if isinstance(raw, dict) else {})
    return None if loading.problems else settings


class _Loading:
    """One pass over one document, collecting problems as it goes."""

    def __init__(self, document: Document, filename: str) -> None:
        self.document = document
        self.filename = filename
        self.problems: list[Problem] = []

    def run(self) -> Config:
        root = self._root()
        settings, settings_doubtful = self._settings(self._section(root, "settings"))
        notifiers = self._notifiers(self._section(root, "notifiers"))
        raw_jobs = self._section(root, "jobs")
        jobs, job_doubtful = self._jobs(raw_jobs, settings, settings_doubtful)
        context = LoadContext(
            section=Config,
            settings_doubtful=settings_doubtful,
            declared_jobs=frozenset(raw_jobs),
            job_doubtful=job_doubtful,
        )
        data = {
            "settings": settings,
            "notifiers": notifiers,
            "jobs": jobs,
            "filename": self.filename,
        }
        config, _ = self._validate(Config, data, (), context)
        if self.problems or config is None:
            raise ConfigErrors(self._located(problem) for problem in self.problems)
        return config

    # -- the top level -------------------------------------------------------------------

    def _root(self) -> Mapping[str, Any]:
        data = self.document.data
        if data is None:
            self._problem((), "the file is empty: expected settings, notifiers and jobs")
            return {}
        if not isinstance(data, dict):
            self._problem((), "the top level must be a mapping with keys jobs, notifiers, settings")
            return {}
        for key in data:
            if key not in ROOT_KEYS:
                self.problems.append(
                    Problem((key,), unknown_key_message(key, ROOT_KEYS), True, True)
                )
        return data

    def _section(self, root: Mapping[str, Any], key: str) -> dict[str, Any]:
        """A top-level mapping; left empty (``jobs:`` with all jobs commented out) is empty."""
        value = root.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self._problem((key,), "must be a mapping (key: value lines, or {key: value})")
            return {}
        return value

    # -- sections ------------------------------------------------------------------------

    def _settings(self, data: dict[str, Any]) -> tuple[Settings, frozenset[str]]:
        settings, failed = self._validate(
            Settings, data, ("settings",), LoadContext(section=Settings)
        )
        if settings is not None and settings.runs_dir is not None and not settings.uses_postgres:
            self.problems.append(Problem(("settings", "runs_dir"), RUNS_DIR_WITHOUT_POSTGRES))
        return settings or Settings(), failed

    def _notifiers(self, raw: dict[str, Any]) -> dict[str, Notifier]:
        notifiers = {}
        for name, data in raw.items():
            self._check_name(("notifiers", name), name, "notifier")
            notifier, _ = self._validate(
                Notifier, data, ("notifiers", name), LoadContext(section=Notifier)
            )
            if notifier is not None:
                notifiers[name] = notifier
        return notifiers

    def _jobs(
        self, raw: dict[str, Any], settings: Settings, settings_doubtful: frozenset[str]
    ) -> tuple[dict[str, Job], dict[str, frozenset[str]]]:
        jobs: dict[str, Job] = {}
        doubtful: dict[str, frozenset[str]] = {}
        for name, given in raw.items():
            valid_name = self._check_name(("jobs", name), name, "job")
            data = self._without_name_key(("jobs", name), given)
            inherited = frozenset(
                key
                for key in ("timeout", "catch_up")
                if key in settings_doubtful and not (isinstance(data, dict) and key in data)
            )
            context = LoadContext(
                section=Job,
                doubtful=inherited,
                job_name=name if valid_name else _STAND_IN_NAME,
                settings=settings,
            )
            self._refuse_unavailable(("jobs", name), data)
            job, failed = self._validate(Job, data, ("jobs", name), context)
            doubtful[name] = failed | inherited
            if job is not None and valid_name:  # a stand-in name must not meet other rules
                jobs[name] = job
        return jobs, doubtful

    def _refuse_unavailable(self, path: Path, data: object) -> None:
        """Said beside the key's other errors, so a user fixing a step learns at once that
        steps do not run yet."""
        if not isinstance(data, dict):
            return
        self.problems += [Problem((*path, key), message, at_key=True)
                          for key, message in UNAVAILABLE_JOB_KEYS.items() if key in data]
        steps = data.get("steps")
        for index, step in enumerate(steps if isinstance(steps, list) else []):
            if isinstance(step, dict):
                self.problems += [Problem((*path, "steps", index, key), message, at_key=True)
                                  for key, message in UNAVAILABLE_STEP_KEYS.items()
                                  if key in step]

    def _check_name(self, path: Path, name: str, what: str) -> bool:
        problem = name_problem(name)
        if problem:
            self.problems.append(Problem(path, f"not a valid {what} name: use {NAME_RULE}", True))
        return problem is None

    def _without_name_key(self, path: Path, data: object) -> object:
        """A job's name is its key; a ``name:`` inside would be a second, silent one."""
        if not isinstance(data, dict) or "name" not in data:
            return data
        message = unknown_key_message("name", Job.config_keys()) + " (the job's name is its key)"
        self.problems.append(Problem((*path, "name"), message, True, True))
        return {key: value for key, value in data.items() if key != "name"}

    # -- validation with salvage ---------------------------------------------------------

    def _validate(
        self, model: type[R], data: object, prefix: Path, context: LoadContext
    ) -> tuple[R | None, frozenset[str]]:
        """The record (or, after errors, one salvaged from its valid keys) and the keys
        that failed. A salvaged record lets cross-field and cross-job rules run on what
        is trustworthy; the caller never returns it, since there were errors."""
        try:
            return model.model_validate(data, context=context.as_pydantic()), frozenset()
        except ValidationError as error:
            details = error.errors(include_url=False)
        self._add(details, model, data, prefix)
        failed = _failed_keys(details, data)
        if failed is None or not isinstance(data, dict):
            return None, frozenset()
        kept = {key: value for key, value in data.items() if key not in failed}
        retry_context = replace(context, doubtful=context.doubtful | failed)
        try:
            return model.model_validate(kept, context=retry_context.as_pydantic()), failed
        except ValidationError as error:
            rules_only = [d for d in error.errors(include_url=False) if _is_section_rule(d)]
            self._add(rules_only, model, kept, prefix)
            return None, failed

    def _add(
        self, details: list[ErrorDetails], model: type[BaseModel], data: object, prefix: Path
    ) -> None:
        for detail in details:
            self.problems += [
                problem.under(prefix) for problem in detail_problems(detail, model, data)
            ]

    # -- output --------------------------------------------------------------------------

    def _problem(self, path: Path, message: str) -> None:
        self.problems.append(Problem(path, message, at_key=True))

    def _located(self, problem: Problem) -> ConfigError:
        where = self.document.locate(problem.path, at_key=problem.at_key)
        label = problem.label()
        message = f"{label}: {problem.message}" if label else problem.message
        return ConfigError(self.filename, where.line, where.column, message)


def _is_section_rule(detail: ErrorDetails) -> bool:
    return detail["type"] == RULES_ERROR and not detail["loc"]


def _failed_keys(details: list[ErrorDetails], data: object) -> frozenset[str] | None:
    """Top-level keys whose values failed; ``None`` when the section failed as a whole."""
    failed: set[str] = set()
    for detail in details:
        if _is_section_rule(detail):
            continue
        path, _ = data_path(data, detail["loc"])
        if not path:
            return None
        failed.add(str(path[0]))
    return frozenset(failed)
