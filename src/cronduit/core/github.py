"""GitHub deliveries as values: what a payload says, in the terms the ``on:`` rules use.

``read_delivery`` takes the ``X-GitHub-Event`` name and the parsed JSON body, after the edge
has checked the signature, and returns a ``CodeEvent``: the ``Delivery`` that matching looks
at, a short label for lists, and the facts written to each trigger's file. Reading is strict:
a field cronduit relies on that is missing or of the wrong type raises ``DeliveryError``
naming the field, so a malformed delivery is refused whole rather than half understood.

What a payload cannot vouch for is left unknown, and unknown is on the side of running:

- **Changed files.** A push lists them per commit (``added``, ``removed``, ``modified``).
  GitHub documents that a push payload carries at most 2048 commits and at most 3000 changed
  files per commit (the 20-commit cap in its docs applies to the Events API timeline, not to
  webhook deliveries). A list that reaches either cap may have been cut, and cronduit stops
  reading past ``MAX_FILES`` distinct paths of its own; each of these, a missing ``commits``
  list, a force push and a push that creates the ref make the list unknown (``None``), and
  path filters then pass.
- **A check's branch.** A check suite or check run names a head branch, but the commit it
  checked may come from a fork whose branch has the same name as ours. The branch is only
  put in the ``Delivery`` after the edge has confirmed that the head commit is in that
  branch's history in this repository (``with_verified_branch``); until then it is
  ``branch_to_verify``, and a check tied to a pull request from another repository never
  gets one at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from cronduit.core.matching import Delivery, OnRule, ref_names, rule_matches
from cronduit.core.text import clean

GITHUB_MAX_COMMITS = 2048
"""GitHub's documented cap on a push payload's ``commits``: a list this long may be cut."""
GITHUB_MAX_FILES_PER_COMMIT = 3000
"""GitHub's documented cap on changed files reported per commit: reaching it may mean more."""
MAX_FILES = 3000
"""cronduit's own cap on distinct changed paths read from one push: more is "unknown"."""
LABEL_PART_LIMIT = 64
"""Characters of a payload-given name (tag, action, ref) kept in a label."""
SHORT_SHA = 7

NULL_SHA = "0" * 40
"""The ``after`` of a push that deleted its ref."""
CLAIMING_EVENTS = frozenset({"check_suite", "check_run"})
"""Events whose head branch is a claim to confirm before a branch filter may see it."""

Scalar = str | int | bool | None
JsonValue = Scalar | list[str]

_EVENT = re.compile(r"[a-z][a-z_]*")
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
# What git refuses in a branch name (git check-ref-format), and a leading "-", which a
# command line would read as an option.
_NOT_A_BRANCH = re.compile(
    r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|^/|/$|^-|\.$|(?:^|/)\.|\.lock(?:/|$)"
)


class DeliveryError(ValueError):
    """A delivery cronduit cannot read; ``field`` names where, the message says why.

    Messages name fields and the expected shape, never a value from the payload.
    """

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field


@dataclass(frozen=True)
class CodeEvent:
    """One GitHub delivery, read: what matching sees and what the trigger file records.

    ``branch_to_verify`` is the head branch a check suite or run claims, still unconfirmed;
    ``details`` are the event's own facts (ref, before, after, ...) in a stable order.
    """

    delivery: Delivery
    label: str
    repository: str | None = None
    sender: str | None = None
    head_sha: str | None = None
    branch_to_verify: str | None = None
    details: tuple[tuple[str, Scalar], ...] = ()

    @property
    def facts(self) -> dict[str, JsonValue]:
        """The JSON object written into each trigger's file for this delivery.

        ``files`` is ``null`` with ``files_known: false`` when the list is unknown, so a
        run can tell "no file changed" from "cronduit could not tell".
        """
        delivery = self.delivery
        facts: dict[str, JsonValue] = {
            "event": delivery.event,
            "action": delivery.action,
            "label": self.label,
            "repository": self.repository,
            "sender": self.sender,
            "head_sha": self.head_sha,
            "branch": delivery.branch,
            "tag": delivery.tag,
            "deleted": delivery.deleted,
            "conclusion": delivery.conclusion,
            "files_known": delivery.files is not None,
            "files": None if delivery.files is None else list(delivery.files),
        }
        facts.update(self.details)
        return facts


def read_delivery(event: str | None, payload: object) -> CodeEvent:
    """Read one delivery: ``event`` is the ``X-GitHub-Event`` header, ``payload`` the body.

    Events cronduit has no reader for still become a ``CodeEvent`` by name and action, so a
    job may listen to any event GitHub sends.
    """
    if event is None:
        raise DeliveryError("X-GitHub-Event", "missing")
    if not _EVENT.fullmatch(event):
        raise DeliveryError("X-GitHub-Event", "must be an event name such as push")
    body = _object(payload, "payload")
    return _READERS.get(event, _other)(event, body)


def with_verified_branch(event: CodeEvent, verified: bool | None) -> CodeEvent:
    """``event`` once the edge has asked whether its head commit is in ``branch_to_verify``.

    Only ``True`` puts the branch in the delivery; ``False`` and ``None`` (could not tell)
    leave it out, so a branch-filtered job does not run on a claim nobody confirmed. The
    answer is kept in the facts as ``branch_verified`` (``null`` until asked, and when
    nothing could tell). An event with nothing to verify is returned as it is.
    """
    branch = event.branch_to_verify
    if branch is None:
        return event
    delivery = replace(event.delivery, branch=branch if verified else None)
    details = tuple(
        (key, verified if key == "branch_verified" else value) for key, value in event.details
    )
    return replace(event, delivery=delivery, branch_to_verify=None, details=details)


def matching_jobs(event: CodeEvent, jobs: Mapping[str, OnRule]) -> list[str]:
    """The jobs ``event`` starts, in the order of ``jobs`` (the config's order)."""
    return [name for name, rule in jobs.items() if rule_matches(rule, event.delivery)]


def jobs_awaiting_branch(event: CodeEvent, jobs: Mapping[str, OnRule]) -> list[str]:
    """Jobs that ``event`` starts only if its claimed head branch is confirmed.

    The edge asks git or GitHub about the branch only when this is not empty: a job with
    no branch filter runs without the answer, and one the event fails anyway needs none.
    """
    if event.branch_to_verify is None:
        return []
    already = set(matching_jobs(event, jobs))
    confirmed = with_verified_branch(event, verified=True)
    return [name for name in matching_jobs(confirmed, jobs) if name not in already]


def events_needing_confirmed_branch(rule: OnRule) -> list[str]:
    """The entries of ``rule.events`` that start the job only once a check's head branch is
    confirmed: check suites and check runs, when the job filters on branches.

    A job listing any of them never runs on them unless something can confirm the branch
    (a GitHub token, or a workspace clone), which ``cronduit doctor`` warns about.
    """
    if not rule.branches:
        return []
    return [name for name in rule.events if name.partition(".")[0] in CLAIMING_EVENTS]


def is_commit_sha(text: str) -> bool:
    """Whether ``text`` is a full lower-case SHA-1 or SHA-256 commit id.

    The edge passes these to git and into URLs; nothing else is ever let through.
    """
    return _SHA.fullmatch(text) is not None


def is_branch_name(text: str) -> bool:
    """Whether git would accept ``text`` as a branch name, and it cannot pass for an option."""
    return bool(text) and text != "@" and _NOT_A_BRANCH.search(text) is None


def is_repository_name(text: str) -> bool:
    """Whether ``text`` is an ``OWNER/NAME`` full name, safe to put in an API path."""
    return _REPOSITORY.fullmatch(text) is not None


# -- readers, one per event ------------------------------------------------------------


def _push(event: str, body: Mapping[str, object]) -> CodeEvent:
    """A push: its ref, the commits it moved between, and the files they changed."""
    ref = _text(body, "ref")
    before = _sha(body, "before")
    after = _sha(body, "after")
    deleted = _flag(body, "deleted") or after == NULL_SHA
    created, forced = _flag(body, "created"), _flag(body, "forced")
    branch, tag = ref_names(ref)
    head_sha = None if deleted else _push_head(body, after)
    files = None if deleted or created or forced else _push_files(body)
    if head_sha is None:
        label = f"push {_clean(branch or tag or ref)} deleted"
    else:
        label = f"push {head_sha[:SHORT_SHA]}"
    details: tuple[tuple[str, Scalar], ...] = (
        ("ref", ref),
        ("before", before),
        ("after", after),
        ("created", created),
        ("forced", forced),
        ("compare", _optional_text(body, "compare")),
    )
    return CodeEvent(
        delivery=Delivery(event, None, branch, tag, deleted, files),
        label=label,
        repository=_repository(body, required=True),
        sender=_sender(body),
        head_sha=head_sha,
        details=details,
    )


def _push_head(body: Mapping[str, object], after: str) -> str:
    """The commit a push leads to: ``head_commit.id``, which differs from ``after`` when an
    annotated tag was pushed (``after`` is then the tag object)."""
    head = _optional_object(body, "head_commit")
    return after if head is None else _sha(head, "id", "head_commit")


def _push_files(body: Mapping[str, object]) -> tuple[str, ...] | None:
    """Every path the push's commits added, removed or modified, or ``None`` if unknown.

    ``head_commit`` is not used as a fallback: it describes one commit, not the push.
    """
    if body.get("commits") is None:
        return None
    commits = _list(body["commits"], "commits")
    if len(commits) >= GITHUB_MAX_COMMITS:
        return None
    seen: set[str] = set()
    for index, item in enumerate(commits):
        where = f"commits[{index}]"
        lists = _commit_file_lists(_object(item, where), where)
        if lists is None or sum(len(paths) for paths in lists) >= GITHUB_MAX_FILES_PER_COMMIT:
            return None
        for key, paths in zip(("added", "removed", "modified"), lists, strict=True):
            seen.update(_strings(paths, f"{where}.{key}"))
        if len(seen) > MAX_FILES:
            return None
    return tuple(sorted(seen))


def _commit_file_lists(commit: Mapping[str, object], where: str) -> list[list[object]] | None:
    """A commit's three file lists, or ``None`` when one is absent (the list is unknown)."""
    lists = []
    for key in ("added", "removed", "modified"):
        if commit.get(key) is None:
            return None
        lists.append(_list(commit[key], f"{where}.{key}"))
    return lists


def _check_suite(event: str, body: Mapping[str, object]) -> CodeEvent:
    """A check suite: its head commit, conclusion, and the head branch still to verify."""
    suite = _field_object(body, "check_suite")
    head_branch = _optional_text(suite, "head_branch", "check_suite")
    foreign = _foreign_head(body, suite, "check_suite")
    details: tuple[tuple[str, Scalar], ...] = (
        ("head_branch", head_branch),
        ("status", _optional_text(suite, "status", "check_suite")),
        ("app", _app_slug(suite, "check_suite")),
        ("from_fork", foreign),
        ("branch_verified", None),
    )
    return _check(event, body, suite, "check_suite", head_branch, foreign, details)


def _check_run(event: str, body: Mapping[str, object]) -> CodeEvent:
    """A check run: like its suite, with its own head commit, conclusion and name."""
    run = _field_object(body, "check_run")
    suite = _field_object(run, "check_suite", "check_run")
    head_branch = _optional_text(suite, "head_branch", "check_run.check_suite")
    foreign = _foreign_head(body, run, "check_run") or _foreign_head(
        body, suite, "check_run.check_suite"
    )
    details: tuple[tuple[str, Scalar], ...] = (
        ("head_branch", head_branch),
        ("name", _optional_text(run, "name", "check_run")),
        ("status", _optional_text(run, "status", "check_run")),
        ("app", _app_slug(run, "check_run")),
        ("from_fork", foreign),
        ("branch_verified", None),
    )
    return _check(event, body, run, "check_run", head_branch, foreign, details)


def _check(
    event: str,
    body: Mapping[str, object],
    check: Mapping[str, object],
    where: str,
    head_branch: str | None,
    foreign: bool,
    details: tuple[tuple[str, Scalar], ...],
) -> CodeEvent:
    """What a check suite and a check run share, read from ``check`` (the suite or the run).

    The head branch becomes a claim to verify only when it could be ours: a valid branch
    name, and no pull request ties the check to another repository.
    """
    action = _optional_text(body, "action")
    head_sha = _sha(check, "head_sha", where)
    conclusion = _optional_text(check, "conclusion", where)
    claimable = head_branch is not None and is_branch_name(head_branch) and not foreign
    label = f"{_event_label(event, action)} {head_sha[:SHORT_SHA]}"
    return CodeEvent(
        delivery=Delivery(event, action, conclusion=conclusion),
        label=label if conclusion is None else f"{label} {_clean(conclusion)}",
        repository=_repository(body, required=True),
        sender=_sender(body),
        head_sha=head_sha,
        branch_to_verify=head_branch if claimable else None,
        details=details,
    )


def _release(event: str, body: Mapping[str, object]) -> CodeEvent:
    """A release, named by its tag: ``release.published v1.2.0``."""
    action = _optional_text(body, "action")
    release = _field_object(body, "release")
    tag = _text(release, "tag_name", "release")
    details: tuple[tuple[str, Scalar], ...] = (
        ("release_name", _optional_text(release, "name", "release")),
        ("target_commitish", _optional_text(release, "target_commitish", "release")),
        ("draft", _flag(release, "draft", "release")),
        ("prerelease", _flag(release, "prerelease", "release")),
    )
    return CodeEvent(
        delivery=Delivery(event, action, tag=tag),
        label=f"{_event_label(event, action)} {_clean(tag)}",
        repository=_repository(body, required=False),
        sender=_sender(body),
        details=details,
    )


def _ping(event: str, body: Mapping[str, object]) -> CodeEvent:
    """GitHub's "hook is set up" delivery: recorded, and a job may even listen to it."""
    hook_id = body.get("hook_id")
    if hook_id is not None and (not isinstance(hook_id, int) or isinstance(hook_id, bool)):
        raise DeliveryError("hook_id", "must be an integer")
    details: tuple[tuple[str, Scalar], ...] = (
        ("zen", _optional_text(body, "zen")),
        ("hook_id", hook_id),
    )
    return CodeEvent(
        delivery=Delivery(event),
        label="ping",
        repository=_repository(body, required=False),
        sender=_sender(body),
        details=details,
    )


def _other(event: str, body: Mapping[str, object]) -> CodeEvent:
    """Any other event: known by its name and action only."""
    action = _optional_text(body, "action")
    return CodeEvent(
        delivery=Delivery(event, action),
        label=_event_label(event, action),
        repository=_repository(body, required=False),
        sender=_sender(body),
    )


_READERS: Mapping[str, Callable[[str, Mapping[str, object]], CodeEvent]] = {
    "push": _push,
    "check_suite": _check_suite,
    "check_run": _check_run,
    "release": _release,
    "ping": _ping,
}


# -- shared pieces -----------------------------------------------------------------------


def _foreign_head(body: Mapping[str, object], check: Mapping[str, object], where: str) -> bool:
    """Whether a pull request tied to the check has its head in another repository.

    Such a check ran on a fork's commit, whatever its branch is called. A pull request
    whose head repository is gone (a deleted fork) or cannot be compared counts as foreign.
    """
    pulls = check.get("pull_requests")
    if pulls is None:
        return False
    ours = _field_object(body, "repository")
    for index, item in enumerate(_list(pulls, f"{where}.pull_requests")):
        at = f"{where}.pull_requests[{index}]"
        head = _field_object(_object(item, at), "head", at)
        repo = _optional_object(head, "repo", f"{at}.head")
        if repo is None or not _same_repository(repo, ours):
            return True
    return False


def _same_repository(repo: Mapping[str, object], ours: Mapping[str, object]) -> bool:
    """Repositories compare by id, else by API URL; the check payload's pull requests carry
    only ``id``, ``url`` and ``name`` of each repository, not the full name."""
    for key, kind in (("id", int), ("url", str)):
        theirs, mine = repo.get(key), ours.get(key)
        if isinstance(theirs, kind) and isinstance(mine, kind):
            return theirs == mine
    return False


def _repository(body: Mapping[str, object], *, required: bool) -> str | None:
    """``repository.full_name``: required where cronduit asks about commits in it."""
    repo = _optional_object(body, "repository")
    if repo is None:
        if required:
            raise DeliveryError("repository", "missing")
        return None
    name = _text(repo, "full_name", "repository")
    if not is_repository_name(name):
        raise DeliveryError("repository.full_name", "must be OWNER/NAME")
    return name


def _sender(body: Mapping[str, object]) -> str | None:
    """Who caused the delivery: ``sender.login``, if the payload names one."""
    sender = _optional_object(body, "sender")
    return None if sender is None else _optional_text(sender, "login", "sender")


def _app_slug(check: Mapping[str, object], where: str) -> str | None:
    """Which app ran the check (``app.slug``), when the payload says."""
    app = _optional_object(check, "app", where)
    return None if app is None else _optional_text(app, "slug", f"{where}.app")


def _event_label(event: str, action: str | None) -> str:
    """``event.action``, or the event alone when it has no action."""
    return event if action is None else f"{event}.{_clean(action)}"


def _clean(text: str) -> str:
    """A payload-given name as it may appear in a label: safe to show, and short."""
    return clean(text, LABEL_PART_LIMIT)


def _at(where: str, key: str) -> str:
    """The dotted path of ``key`` inside ``where`` ("" is the top level)."""
    return f"{where}.{key}" if where else key


def _object(value: object, field: str) -> Mapping[str, object]:
    """``value`` as a JSON object."""
    if not isinstance(value, dict):
        raise DeliveryError(field, "must be an object")
    return value


def _field_object(body: Mapping[str, object], key: str, where: str = "") -> Mapping[str, object]:
    """A required object field."""
    if body.get(key) is None:
        raise DeliveryError(_at(where, key), "missing")
    return _object(body[key], _at(where, key))


def _optional_object(
    body: Mapping[str, object], key: str, where: str = ""
) -> Mapping[str, object] | None:
    """An object field that may be absent or ``null``."""
    value = body.get(key)
    return None if value is None else _object(value, _at(where, key))


def _list(value: object, field: str) -> list[object]:
    """``value`` as a JSON array."""
    if not isinstance(value, list):
        raise DeliveryError(field, "must be a list")
    return value


def _strings(values: Sequence[object], field: str) -> list[str]:
    """A list whose every item is a string."""
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise DeliveryError(f"{field}[{index}]", "must be a string")
    return [value for value in values if isinstance(value, str)]


def _text(body: Mapping[str, object], key: str, where: str = "") -> str:
    """A required string field."""
    value = _optional_text(body, key, where)
    if value is None:
        raise DeliveryError(_at(where, key), "missing")
    return value


def _optional_text(body: Mapping[str, object], key: str, where: str = "") -> str | None:
    """A string field that may be absent or ``null``."""
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise DeliveryError(_at(where, key), "must be a string")
    return value


def _flag(body: Mapping[str, object], key: str, where: str = "") -> bool:
    """A boolean field; absent or ``null`` is false."""
    value = body.get(key)
    if value is not None and not isinstance(value, bool):
        raise DeliveryError(_at(where, key), "must be true or false")
    return bool(value)


def _sha(body: Mapping[str, object], key: str, where: str = "") -> str:
    """A required commit id: 40 (SHA-1) or 64 (SHA-256) lower-case hex digits."""
    value = _text(body, key, where)
    if not is_commit_sha(value):
        raise DeliveryError(_at(where, key), "must be a full commit SHA")
    return value
