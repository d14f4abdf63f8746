"""GitHub deliveries read into values, and the jobs they start.

The payloads under ``tests/fixtures/github/`` follow the shapes of GitHub's "Webhook events
and payloads" reference (push, check_suite, check_run, release, ping, issues), trimmed to
the fields a reader could plausibly touch.
"""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronduit.core.github import (
    GITHUB_MAX_COMMITS,
    GITHUB_MAX_FILES_PER_COMMIT,
    MAX_FILES,
    NULL_SHA,
    CodeEvent,
    DeliveryError,
    events_needing_confirmed_branch,
    is_branch_name,
    is_commit_sha,
    jobs_awaiting_branch,
    matching_jobs,
    read_delivery,
    with_verified_branch,
)
from cronduit.core.matching import Delivery, OnRule

FIXTURES = Path(__file__).parent.parent / "fixtures" / "github"

HEAD = "e4a7c9b1d3f5a2c8e0b6d4f2a9c7e5b3d1f8a6c4"
FORK_HEAD = "d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1"
PUSHED_FILES = (
    "README.md",
    "data/reels/2026-03-01.json",
    "data/reels/2026-03-02.json",
    "data/reels/draft.json",
    "data/reels/posted.json",
    "docs/posting.md",
    "src/post.py",
)

# The jobs of SPEC §1's example, and a few more to tell filters apart.
JOBS = {
    "post": OnRule(("push",), ("main",), ("data/reels/*.json", "!data/reels/posted.json")),
    "red-main": OnRule(("check_suite.completed",), ("main",), (), ("failure", "timed_out")),
    "docs": OnRule(("push",), (), ("docs/**", "**.md")),
    "features": OnRule(("push",), ("feature/**", "!feature/**-wip")),
    "releases": OnRule(("release.published",)),
    "slow-runs": OnRule(("check_run.completed",), ("main",), (), ("timed_out",)),
    "any-suite": OnRule(("check_suite.completed",)),
}


def load(name: str) -> dict[str, Any]:
    """A fixture payload, fresh for each test to change."""
    loaded: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return loaded


def read(event: str, name: str) -> CodeEvent:
    """Read a fixture as GitHub would deliver it under ``event``."""
    return read_delivery(event, load(name))


def commit(
    *, added: tuple[str, ...] = (), removed: tuple[str, ...] = (), modified: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A push commit with the given file lists."""
    return {"id": HEAD, "added": list(added), "removed": list(removed), "modified": list(modified)}


def push_with(commits: list[Any] | None, **changes: Any) -> CodeEvent:
    """The push fixture with its ``commits`` replaced (``None``: the key removed)."""
    payload = load("push")
    if commits is None:
        del payload["commits"]
    else:
        payload["commits"] = commits
    payload.update(changes)
    return read_delivery("push", payload)


# --- push --------------------------------------------------------------------------------


def test_a_push_names_its_branch_and_every_file_its_commits_changed() -> None:
    """Added, removed and modified files of all commits, each once, sorted."""
    expected = Delivery("push", None, "main", None, False, PUSHED_FILES)
    assert expected == read("push", "push").delivery


def test_a_push_is_labelled_with_its_short_head_commit() -> None:
    """``push`` and the first seven hex digits of the commit the push leads to."""
    event = read("push", "push")
    assert ("push e4a7c9b", HEAD) == (event.label, event.head_sha)


def test_a_pushs_facts_name_its_ref_commits_files_and_people() -> None:
    """The trigger file tells the run what arrived, without the whole payload."""
    facts = read("push", "push").facts
    assert {
        "event": "push",
        "action": None,
        "label": "push e4a7c9b",
        "repository": "acme/reels",
        "sender": "octo-dev",
        "head_sha": HEAD,
        "branch": "main",
        "tag": None,
        "deleted": False,
        "conclusion": None,
        "files_known": True,
        "files": list(PUSHED_FILES),
        "ref": "refs/heads/main",
        "before": "a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9",
        "after": HEAD,
        "created": False,
        "forced": False,
        "compare": "https://github.com/acme/reels/compare/a0b1c2d3e4f5...e4a7c9b1d3f5",
    } == facts


@pytest.mark.parametrize(
    ("event", "name"),
    [
        ("push", "push"),
        ("push", "push_deleted_branch"),
        ("push", "push_tag"),
        ("push", "push_without_commits"),
        ("check_suite", "check_suite_completed"),
        ("check_suite", "check_suite_completed_fork"),
        ("check_run", "check_run_completed"),
        ("release", "release_published"),
        ("ping", "ping"),
        ("issues", "issues_opened"),
    ],
)
def test_every_fixtures_facts_are_json(event: str, name: str) -> None:
    """Facts go into a JSON file as they are: a round trip changes nothing."""
    facts = read(event, name).facts
    assert facts == json.loads(json.dumps(facts))


def test_a_deleted_branch_is_labelled_by_name_and_has_no_head() -> None:
    """There is no commit to show, so the label says which branch went."""
    event = read("push", "push_deleted_branch")
    assert ("push feature/old-poster deleted", None) == (event.label, event.head_sha)
    assert event.delivery.deleted


def test_a_push_whose_after_is_all_zeros_is_a_deletion_even_unflagged() -> None:
    """``after`` = 40 zeros says the ref is gone, whatever ``deleted`` says."""
    payload = load("push_deleted_branch")
    del payload["deleted"]
    assert read_delivery("push", payload).delivery.deleted
    assert NULL_SHA == payload["after"]


def test_a_deleted_branch_starts_no_job_not_even_one_without_filters() -> None:
    """SPEC §4: a deleted branch triggers nothing."""
    jobs = {**JOBS, "every-push": OnRule(("push",))}
    assert [] == matching_jobs(read("push", "push_deleted_branch"), jobs)


def test_a_tag_push_names_the_tag_and_the_commit_behind_an_annotated_tag() -> None:
    """``after`` is the tag object; the head commit is what the tag points at."""
    event = read("push", "push_tag")
    assert (None, "v1.2.0", HEAD) == (event.delivery.branch, event.delivery.tag, event.head_sha)
    assert "push e4a7c9b" == event.label


def test_a_push_without_a_commit_list_has_unknown_files() -> None:
    """``head_commit`` alone describes one commit, not the push, so it is not used."""
    event = read("push", "push_without_commits")
    assert (None, False) == (event.delivery.files, event.facts["files_known"])


def test_a_push_of_githubs_full_2048_commits_has_unknown_files() -> None:
    """GitHub stops at 2048 commits; a list that long may have been cut."""
    commits = [commit(added=(f"f{index}.txt",)) for index in range(GITHUB_MAX_COMMITS)]
    assert None is push_with(commits).delivery.files


def test_a_push_of_one_commit_fewer_than_the_cap_is_read_whole() -> None:
    """2047 commits cannot have been cut."""
    commits = [commit(added=("same.txt",)) for _ in range(GITHUB_MAX_COMMITS - 1)]
    assert ("same.txt",) == push_with(commits).delivery.files


def test_a_commit_reporting_githubs_full_3000_files_makes_the_list_unknown() -> None:
    """GitHub reports at most 3000 changed files per commit, across its three lists."""
    half = GITHUB_MAX_FILES_PER_COMMIT // 2
    big = commit(
        added=tuple(f"a/{i}" for i in range(half)),
        modified=tuple(f"m/{i}" for i in range(half)),
    )
    assert None is push_with([big]).delivery.files


def test_a_commit_just_under_githubs_file_cap_is_read_whole() -> None:
    """2999 files in one commit are all there is."""
    files = tuple(f"a/{i}" for i in range(GITHUB_MAX_FILES_PER_COMMIT - 1))
    event = push_with([commit(added=files)])
    assert GITHUB_MAX_FILES_PER_COMMIT - 1 == len(event.delivery.files or ())


def test_more_distinct_files_than_cronduit_reads_makes_the_list_unknown() -> None:
    """cronduit's own cap bounds the work and the trigger file, whatever GitHub sends."""
    per_commit = MAX_FILES // 2 + 1
    commits = [commit(added=tuple(f"c{n}/{i}" for i in range(per_commit))) for n in range(2)]
    assert None is push_with(commits).delivery.files


def test_exactly_cronduits_cap_of_distinct_files_is_still_known() -> None:
    """The cap is inclusive: ``MAX_FILES`` paths are kept."""
    half = MAX_FILES // 2
    commits = [commit(added=tuple(f"c{n}/{i}" for i in range(half))) for n in range(2)]
    assert MAX_FILES == len(push_with(commits).delivery.files or ())


def test_a_commit_without_its_file_lists_makes_the_list_unknown() -> None:
    """Payloads that leave ``added`` out (as the Actions event does) cannot be read."""
    bare = {"id": HEAD, "message": "no lists"}
    assert None is push_with([commit(added=("a",)), bare]).delivery.files


@pytest.mark.parametrize("flag", ["forced", "created"])
def test_a_force_push_or_a_new_ref_has_unknown_files(flag: str) -> None:
    """The commit list then does not describe what changed on the branch."""
    assert None is push_with([commit(added=("a",))], **{flag: True}).delivery.files


def test_a_push_that_lists_no_commits_changed_no_file() -> None:
    """A known empty list is not unknown: a path filter includes nothing from it."""
    event = push_with([])
    jobs = {"docs": JOBS["docs"], "every-push": OnRule(("push",))}
    assert ((), ["every-push"]) == (event.delivery.files, matching_jobs(event, jobs))


def test_a_push_starts_the_jobs_whose_branches_and_paths_agree() -> None:
    """``post`` sees a new reel on main; ``docs`` sees docs/posting.md and README.md."""
    assert ["post", "docs"] == matching_jobs(read("push", "push"), JOBS)


def test_a_push_of_only_excluded_files_does_not_start_the_job() -> None:
    """``!data/reels/posted.json`` takes back the one file the push changed."""
    event = push_with([commit(modified=("data/reels/posted.json",))])
    assert [] == matching_jobs(event, {"post": JOBS["post"]})


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("refs/heads/feature/login", ["features"]),
        ("refs/heads/feature/team/login", ["features"]),
        ("refs/heads/feature/login-wip", []),
        ("refs/heads/features/login", []),
    ],
)
def test_branch_filters_use_globs_and_exclusions(ref: str, expected: list[str]) -> None:
    """``feature/**`` crosses folders; ``!feature/**-wip`` takes work in progress back."""
    event = push_with([commit(added=("src/a.py",))], ref=ref)
    assert expected == matching_jobs(event, {"features": JOBS["features"]})


def test_a_tag_push_skips_path_filters_but_fails_branch_filters() -> None:
    """As in GitHub Actions: ``docs`` runs (no branch filter), ``post`` does not."""
    assert ["docs"] == matching_jobs(read("push", "push_tag"), JOBS)


def test_unknown_files_let_path_filtered_jobs_run() -> None:
    """Running once too often is cheaper than missing a needed run."""
    assert ["post", "docs"] == matching_jobs(read("push", "push_without_commits"), JOBS)


# --- check suites and check runs -----------------------------------------------------


def test_a_finished_check_suite_names_its_head_and_conclusion_but_no_branch_yet() -> None:
    """The head branch waits for the ancestry check before matching may use it."""
    event = read("check_suite", "check_suite_completed")
    assert Delivery("check_suite", "completed", conclusion="failure") == event.delivery
    assert ("main", HEAD) == (event.branch_to_verify, event.head_sha)


def test_a_check_suite_is_labelled_with_action_head_and_conclusion() -> None:
    """The issue's example form."""
    assert (
        "check_suite.completed e4a7c9b failure"
        == read("check_suite", "check_suite_completed").label
    )


def test_a_requested_check_suite_has_no_conclusion_in_its_label() -> None:
    """A suite that has not finished has nothing to conclude."""
    payload = load("check_suite_completed")
    payload["action"] = "requested"
    payload["check_suite"].update(status="queued", conclusion=None)
    event = read_delivery("check_suite", payload)
    assert ("check_suite.requested e4a7c9b", None) == (event.label, event.delivery.conclusion)


def test_a_verified_branch_goes_into_the_delivery_and_the_facts() -> None:
    """Only a confirmed branch may pass a branch filter."""
    event = with_verified_branch(read("check_suite", "check_suite_completed"), verified=True)
    assert ("main", None) == (event.delivery.branch, event.branch_to_verify)
    assert ("main", True) == (event.facts["branch"], event.facts["branch_verified"])


@pytest.mark.parametrize("answer", [False, None])
def test_a_refuted_or_unknown_branch_stays_out(answer: bool | None) -> None:
    """When it cannot tell, cronduit names no branch; the answer is kept in the facts."""
    event = with_verified_branch(read("check_suite", "check_suite_completed"), answer)
    assert (None, None, answer) == (
        event.delivery.branch,
        event.branch_to_verify,
        event.facts["branch_verified"],
    )
    assert "main" == event.facts["head_branch"]


def test_a_check_suite_on_our_main_starts_the_branch_filtered_job_once_verified() -> None:
    """``red-main`` waits for the answer; ``any-suite`` has no branch filter and runs now."""
    event = read("check_suite", "check_suite_completed")
    assert ["any-suite"] == matching_jobs(event, JOBS)
    assert ["red-main"] == jobs_awaiting_branch(event, JOBS)
    assert ["red-main", "any-suite"] == matching_jobs(with_verified_branch(event, True), JOBS)


def test_a_successful_suite_does_not_start_a_job_that_wants_failures() -> None:
    """Conclusions filter even on a verified branch."""
    payload = load("check_suite_completed")
    payload["check_suite"]["conclusion"] = "success"
    event = read_delivery("check_suite", payload)
    assert [] == jobs_awaiting_branch(event, JOBS)
    assert ["any-suite"] == matching_jobs(with_verified_branch(event, True), JOBS)


def test_a_forks_main_is_never_ours() -> None:
    """A suite tied to a pull request from another repository claims no branch at all."""
    event = read("check_suite", "check_suite_completed_fork")
    assert (None, True, FORK_HEAD) == (
        event.branch_to_verify,
        event.facts["from_fork"],
        event.head_sha,
    )
    assert event == with_verified_branch(event, verified=True)
    assert ["any-suite"] == matching_jobs(with_verified_branch(event, True), JOBS)
    assert [] == jobs_awaiting_branch(event, JOBS)


def test_a_pull_request_from_a_deleted_fork_counts_as_foreign() -> None:
    """A head repository of ``null`` cannot be vouched for."""
    payload = load("check_suite_completed_fork")
    payload["check_suite"]["pull_requests"][0]["head"]["repo"] = None
    assert None is read_delivery("check_suite", payload).branch_to_verify


def test_a_pull_request_from_our_own_repository_keeps_the_claim() -> None:
    """Same repository id: a branch of ours with a pull request open."""
    payload = load("check_suite_completed_fork")
    payload["check_suite"]["pull_requests"][0]["head"]["repo"]["id"] = 518220339
    assert "main" == read_delivery("check_suite", payload).branch_to_verify


def test_repositories_compare_by_url_when_ids_are_missing() -> None:
    """The API URL names the repository as surely as its id."""
    payload = load("check_suite_completed_fork")
    repo = payload["check_suite"]["pull_requests"][0]["head"]["repo"]
    del repo["id"]
    assert None is read_delivery("check_suite", payload).branch_to_verify
    repo["url"] = "https://api.github.com/repos/acme/reels"
    assert "main" == read_delivery("check_suite", payload).branch_to_verify


def test_a_head_repository_that_cannot_be_compared_counts_as_foreign() -> None:
    """Neither id nor URL: no claim."""
    payload = load("check_suite_completed_fork")
    payload["check_suite"]["pull_requests"][0]["head"]["repo"] = {"name": "reels"}
    assert None is read_delivery("check_suite", payload).branch_to_verify


def test_a_suite_without_a_head_branch_claims_none() -> None:
    """GitHub leaves ``head_branch`` null for some forks."""
    payload = load("check_suite_completed")
    payload["check_suite"]["head_branch"] = None
    assert None is read_delivery("check_suite", payload).branch_to_verify


@pytest.mark.parametrize("branch", ["-main", "a..b", "main.lock", "has space", "@", "x/"])
def test_a_head_branch_git_would_refuse_claims_none(branch: str) -> None:
    """Such a name is no branch of ours, and it is never passed to git."""
    payload = load("check_suite_completed")
    payload["check_suite"]["head_branch"] = branch
    event = read_delivery("check_suite", payload)
    assert (None, branch) == (event.branch_to_verify, event.facts["head_branch"])


def test_a_finished_check_run_names_its_own_head_and_conclusion() -> None:
    """The run's conclusion, not its suite's (still running here)."""
    event = read("check_run", "check_run_completed")
    assert Delivery("check_run", "completed", conclusion="timed_out") == event.delivery
    assert ("check_run.completed e4a7c9b timed_out", "main") == (
        event.label,
        event.branch_to_verify,
    )
    assert ("tests (3.12)", "github-actions") == (event.facts["name"], event.facts["app"])


def test_a_check_run_starts_its_job_once_the_branch_is_verified() -> None:
    """``slow-runs`` listens to timed-out runs on main."""
    event = read("check_run", "check_run_completed")
    assert ["slow-runs"] == jobs_awaiting_branch(event, JOBS)
    assert ["slow-runs"] == matching_jobs(with_verified_branch(event, True), JOBS)


@pytest.mark.parametrize("where", ["run", "suite"])
def test_a_check_run_tied_to_a_fork_claims_no_branch(where: str) -> None:
    """A foreign pull request on the run or on its suite is enough."""
    payload = load("check_run_completed")
    foreign = load("check_suite_completed_fork")["check_suite"]["pull_requests"]
    target = payload["check_run"] if where == "run" else payload["check_run"]["check_suite"]
    target["pull_requests"] = foreign
    assert None is read_delivery("check_run", payload).branch_to_verify


# --- releases, pings and the rest ----------------------------------------------------


def test_a_release_is_named_by_action_and_tag() -> None:
    """``release.published v1.2.0``; its tag is the delivery's tag."""
    event = read("release", "release_published")
    assert Delivery("release", "published", tag="v1.2.0") == event.delivery
    assert ("release.published v1.2.0", "main") == (
        event.label,
        event.facts["target_commitish"],
    )


def test_a_release_starts_jobs_by_event_and_action() -> None:
    """``release.published`` matches; a branch filter cannot pass without a branch."""
    jobs = {
        **JOBS,
        "created": OnRule(("release.created",)),
        "any-release": OnRule(("release",)),
        "main-release": OnRule(("release",), ("main",)),
    }
    assert ["releases", "any-release"] == matching_jobs(read("release", "release_published"), jobs)


def test_a_ping_is_labelled_ping() -> None:
    """GitHub's hook check; nothing listens to it unless a job asks."""
    event = read("ping", "ping")
    assert (Delivery("ping"), "ping", "Design for failure.") == (
        event.delivery,
        event.label,
        event.facts["zen"],
    )
    assert [] == matching_jobs(event, JOBS)


def test_an_organisation_ping_has_no_repository() -> None:
    """Organisation hooks are not tied to one repository."""
    payload = load("ping")
    del payload["repository"]
    assert None is read_delivery("ping", payload).repository


def test_another_event_is_known_by_name_and_action() -> None:
    """``issues.opened``; a job may listen to it by that name."""
    event = read("issues", "issues_opened")
    assert (Delivery("issues", "opened"), "issues.opened") == (event.delivery, event.label)
    assert ["triage"] == matching_jobs(event, {"triage": OnRule(("issues.opened",))})


def test_an_event_without_an_action_is_labelled_by_name() -> None:
    """A ``fork`` delivery has no action."""
    event = read_delivery("fork", {"forkee": {}, "repository": load("push")["repository"]})
    assert ("fork", "acme/reels") == (event.label, event.repository)


def test_a_label_keeps_payload_names_printable_and_short() -> None:
    """A tag with a newline or of great length cannot garble a list of triggers."""
    payload = load("release_published")
    payload["release"]["tag_name"] = "v1\n" + "x" * 200
    label = read_delivery("release", payload).label
    assert label.startswith("release.published v1\\x0axx")
    assert label.endswith("…")
    assert len("release.published ") + 64 == len(label)


# --- malformed deliveries ------------------------------------------------------------


def mangled(name: str, path: tuple[str | int, ...], value: object = KeyError) -> dict[str, Any]:
    """Fixture ``name`` with the field at ``path`` removed (default) or replaced."""
    payload = load(name)
    target: Any = payload
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return payload


@pytest.mark.parametrize(
    ("event", "name", "path", "value", "field"),
    [
        ("push", "push", ("ref",), KeyError, "ref"),
        ("push", "push", ("ref",), 7, "ref"),
        ("push", "push", ("after",), "HEAD", "after"),
        ("push", "push", ("before",), "--upload-pack=x", "before"),
        ("push", "push", ("deleted",), "no", "deleted"),
        ("push", "push", ("commits",), {"0": {}}, "commits"),
        ("push", "push", ("commits", 0), "3f9d0c2", "commits[0]"),
        ("push", "push", ("commits", 1, "removed"), "draft.json", "commits[1].removed"),
        ("push", "push", ("commits", 2, "added", 0), 42, "commits[2].added[0]"),
        ("push", "push", ("head_commit", "id"), KeyError, "head_commit.id"),
        ("push", "push", ("repository",), KeyError, "repository"),
        ("push", "push", ("repository", "full_name"), "../../etc", "repository.full_name"),
        ("push", "push", ("sender",), "octo-dev", "sender"),
        ("check_suite", "check_suite_completed", ("check_suite",), KeyError, "check_suite"),
        ("check_suite", "check_suite_completed", ("check_suite",), [], "check_suite"),
        (
            "check_suite",
            "check_suite_completed",
            ("check_suite", "head_sha"),
            KeyError,
            "check_suite.head_sha",
        ),
        (
            "check_suite",
            "check_suite_completed",
            ("check_suite", "conclusion"),
            1,
            "check_suite.conclusion",
        ),
        (
            "check_suite",
            "check_suite_completed",
            ("check_suite", "pull_requests"),
            "none",
            "check_suite.pull_requests",
        ),
        (
            "check_suite",
            "check_suite_completed_fork",
            ("check_suite", "pull_requests", 0, "head"),
            KeyError,
            "check_suite.pull_requests[0].head",
        ),
        ("check_suite", "check_suite_completed", ("action",), ["completed"], "action"),
        (
            "check_run",
            "check_run_completed",
            ("check_run", "check_suite"),
            KeyError,
            "check_run.check_suite",
        ),
        (
            "check_run",
            "check_run_completed",
            ("check_run", "check_suite", "head_branch"),
            False,
            "check_run.check_suite.head_branch",
        ),
        ("check_run", "check_run_completed", ("check_run", "head_sha"), None, "check_run.head_sha"),
        ("release", "release_published", ("release", "tag_name"), KeyError, "release.tag_name"),
        ("release", "release_published", ("release", "draft"), "false", "release.draft"),
        ("ping", "ping", ("hook_id",), "498311275", "hook_id"),
        ("issues", "issues_opened", ("action",), 3, "action"),
    ],
)
def test_a_malformed_delivery_is_refused_naming_the_field(
    event: str, name: str, path: tuple[str | int, ...], value: object, field: str
) -> None:
    """Missing keys and wrong types raise DeliveryError with the field's path."""
    with pytest.raises(DeliveryError) as raised:
        read_delivery(event, mangled(name, path, value))
    assert field == raised.value.field
    assert str(raised.value).startswith(f"{field}: ")


def test_a_refusal_never_quotes_the_value() -> None:
    """A payload value may be hostile or private; the message names the field only."""
    with pytest.raises(DeliveryError) as raised:
        read_delivery("push", mangled("push", ("after",), "hunter2-private"))
    assert "hunter2" not in str(raised.value)


@pytest.mark.parametrize("payload", [[], "push", 3, None])
def test_a_body_that_is_not_an_object_is_refused(payload: object) -> None:
    """GitHub always sends a JSON object."""
    with pytest.raises(DeliveryError, match=r"^payload: must be an object$"):
        read_delivery("push", payload)


@pytest.mark.parametrize(
    ("event", "message"),
    [(None, "missing"), ("", "must be"), ("Push", "must be"), ("push.x", "must be")],
)
def test_the_event_header_must_name_an_event(event: str | None, message: str) -> None:
    """``X-GitHub-Event`` is lower-case letters and underscores."""
    with pytest.raises(DeliveryError, match=f"^X-GitHub-Event: {message}"):
        read_delivery(event, load("push"))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
FIXTURE_EVENTS = [
    ("push", "push"),
    ("push", "push_deleted_branch"),
    ("push", "push_tag"),
    ("check_suite", "check_suite_completed"),
    ("check_suite", "check_suite_completed_fork"),
    ("check_run", "check_run_completed"),
    ("release", "release_published"),
    ("ping", "ping"),
    ("issues", "issues_opened"),
]
LOADED = {name: load(name) for _, name in FIXTURE_EVENTS}


def _paths(value: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every path to a value inside ``value``."""
    found: list[tuple[str | int, ...]] = []
    if isinstance(value, dict):
        items: list[tuple[str | int, Any]] = list(value.items())
    else:
        items = list(enumerate(value)) if isinstance(value, list) else []
    for key, inner in items:
        found.append((*prefix, key))
        found.extend(_paths(inner, (*prefix, key)))
    return found


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FIXTURE_EVENTS), st.data())
def test_any_field_removed_or_replaced_gives_an_event_or_a_delivery_error(
    fixture: tuple[str, str], data: st.DataObject
) -> None:
    """Never a KeyError, TypeError or AttributeError, whatever GitHub (or a forger) sends."""
    event, name = fixture
    payload = copy.deepcopy(LOADED[name])
    path = data.draw(st.sampled_from(_paths(payload)))
    target: Any = payload
    for key in path[:-1]:
        target = target[key]
    if data.draw(st.booleans()) and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = data.draw(JSON)
    with contextlib.suppress(DeliveryError):
        read_delivery(event, payload)


@given(st.sampled_from(["push", "check_suite", "check_run", "release", "ping", "zen"]), JSON)
def test_any_json_body_gives_an_event_or_a_delivery_error(event: str, payload: object) -> None:
    """The same for bodies that look nothing like GitHub's."""
    with contextlib.suppress(DeliveryError):
        read_delivery(event, payload)


# --- helpers the edge relies on ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (HEAD, True),
        ("a" * 64, True),
        (HEAD[:7], False),
        (HEAD.upper(), False),
        ("-" + HEAD[1:], False),
    ],
)
def test_only_full_lower_case_shas_are_commit_ids(text: str, expected: bool) -> None:
    """Only these are passed to git or put in an API path."""
    assert expected == is_commit_sha(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("main", True),
        ("feature/login", True),
        ("v1.2", True),
        ("", False),
        ("-x", False),
        ("a..b", False),
        ("a/.hidden", False),
        ("a@{1}", False),
        ("a b", False),
        ("a~1", False),
        ("a\\b", False),
        ("a//b", False),
        ("x.lock", False),
        ("end.", False),
    ],
)
def test_branch_names_follow_gits_rules(text: str, expected: bool) -> None:
    """What ``git check-ref-format --branch`` would refuse is not a branch here."""
    assert expected == is_branch_name(text)


def test_a_checks_facts_say_the_branch_is_unverified_until_asked() -> None:
    """The trigger file always has ``branch_verified``, ``null`` before any answer."""
    event = read("check_run", "check_run_completed")
    assert (None, None, "main") == (
        event.facts["branch"],
        event.facts["branch_verified"],
        event.facts["head_branch"],
    )
    verified = with_verified_branch(event, verified=False)
    assert [key for key, _ in event.details] == [key for key, _ in verified.details]


@pytest.mark.parametrize(("events", "branches", "expected"), [
    (["check_suite.completed"], ["main"], ["check_suite.completed"]),
    (["push", "check_run", "check_suite.requested"], ["main"],
     ["check_run", "check_suite.requested"]),
    (["check_suite.completed"], [], []),
    (["push", "release.published"], ["main"], []),
    (["check_suites", "check_runner.done"], ["main"], []),
])
def test_only_branch_filtered_check_events_need_a_confirmed_branch(
        events: list[str], branches: list[str], expected: list[str]) -> None:
    """A push names its branch itself; a check only claims one, and only a filter cares."""
    rule = OnRule(tuple(events), tuple(branches))
    assert expected == events_needing_confirmed_branch(rule)
