"""Whether a check's head commit is in the branch it claims: real git, and a faked GitHub."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from cronduit.core.json_depth import MAX_JSON_DEPTH
from cronduit.http.ancestry import ancestor_in_clone, ancestor_on_github, head_in_branch

TOKEN = "ghp_test-token-never-logged"
UNKNOWN = "0123456789abcdef0123456789abcdef01234567"
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Octo Dev",
    "GIT_AUTHOR_EMAIL": "octo-dev@example.com",
    "GIT_COMMITTER_NAME": "Octo Dev",
    "GIT_COMMITTER_EMAIL": "octo-dev@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}

Handler = (
    Callable[[httpx.Request], httpx.Response]
    | Callable[[httpx.Request], Coroutine[None, None, httpx.Response]]
)


@dataclass(frozen=True)
class Clone:
    """A workspace cloned from an upstream whose ``main`` has ``first`` then ``second``,
    and whose ``other`` branch has ``aside`` on top of ``first``."""

    path: Path
    first: str
    second: str
    aside: str


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` and return what it printed."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def commit(repo: Path, name: str) -> str:
    """Add file ``name`` in a new commit and return the commit's id."""
    (repo / name).write_text(f"{name}\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Clone:
    """One upstream and its clone, shared by the read-only git tests of this module."""
    root = tmp_path_factory.mktemp("ancestry")
    upstream = root / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    first = commit(upstream, "a.txt")
    second = commit(upstream, "b.txt")
    git(upstream, "checkout", "-q", "-b", "other", first)
    aside = commit(upstream, "c.txt")
    git(upstream, "checkout", "-q", "main")
    git(root, "clone", "-q", str(upstream), "workspace")
    return Clone(root / "workspace", first, second, aside)


def in_clone(
    workspace: Path, branch: str, sha: str, *, git: str = "git", timeout: float = 5.0
) -> bool | None:
    """``ancestor_in_clone`` from synchronous test code."""
    return asyncio.run(ancestor_in_clone(workspace, branch, sha, git=git, timeout=timeout))


def on_github(
    handler: Handler, *, branch: str = "main", sha: str = UNKNOWN, timeout: float = 5.0
) -> bool | None:
    """``ancestor_on_github`` against a GitHub that answers with ``handler``."""

    async def ask() -> bool | None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await ancestor_on_github(
                "acme/reels", branch, sha, token=TOKEN, client=client, timeout=timeout
            )

    return asyncio.run(ask())


def compare_says(status: str) -> Handler:
    """A compare endpoint that answers 200 with ``status``."""
    return lambda request: httpx.Response(200, json={"status": status, "ahead_by": 0})


def never_called(request: httpx.Request) -> httpx.Response:
    """A GitHub that must not be asked."""
    raise AssertionError(f"GitHub was asked: {request.url}")


# --- git merge-base in the workspace clone -----------------------------------------------


def test_a_commit_in_the_branchs_history_is_an_ancestor(clone: Clone) -> None:
    """Both an older commit and the tip itself count."""
    assert (True, True) == (
        in_clone(clone.path, "main", clone.first),
        in_clone(clone.path, "main", clone.second),
    )


def test_a_commit_on_another_branch_is_not(clone: Clone) -> None:
    """``aside`` is only on ``other``; ``second`` only on ``main``."""
    assert (False, False) == (
        in_clone(clone.path, "main", clone.aside),
        in_clone(clone.path, "other", clone.second),
    )


def test_a_commit_the_clone_does_not_have_is_unknown(clone: Clone) -> None:
    """It may have landed after the last fetch: cannot tell, not "no"."""
    assert None is in_clone(clone.path, "main", UNKNOWN)


def test_a_branch_the_clone_does_not_have_is_unknown(clone: Clone) -> None:
    """No ``origin/nope`` to compare against."""
    assert None is in_clone(clone.path, "nope", clone.first)


def test_a_local_ref_named_like_the_remote_one_does_not_stand_in_for_it(
    tmp_path: Path, clone: Clone
) -> None:
    """Only ``refs/remotes/origin/main`` is read, not a branch called ``origin/main``."""
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(clone.path.parent / "upstream"), "work")
    git(work, "branch", "origin/main", clone.aside)
    assert False is in_clone(work, "main", clone.aside)


def test_a_folder_that_is_not_a_clone_is_unknown(tmp_path: Path) -> None:
    """Not a repository: git exits 128."""
    assert None is in_clone(tmp_path, "main", UNKNOWN)


def test_git_does_not_look_above_the_workspace_for_a_repository(clone: Clone) -> None:
    """A folder inside some other repository is not that repository's clone."""
    inner = clone.path / "not-a-clone"
    inner.mkdir(exist_ok=True)
    assert None is in_clone(inner, "main", clone.first)


def test_without_git_the_answer_is_unknown(clone: Clone) -> None:
    """A missing executable is not an error, just no answer."""
    assert None is in_clone(clone.path, "main", clone.first, git="/nonexistent/git")


def test_a_git_that_hangs_is_stopped_at_the_timeout(tmp_path: Path, clone: Clone) -> None:
    """The question is bounded; the process does not outlive it."""
    slow = tmp_path / "slow-git"
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(0o755)
    started = time.monotonic()
    assert None is in_clone(clone.path, "main", clone.first, git=str(slow), timeout=0.2)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    ("branch", "sha"), [("-main", UNKNOWN), ("main", "--all"), ("main", "HEAD")]
)
def test_a_name_that_could_pass_for_an_option_is_never_passed_to_git(
    clone: Clone, branch: str, sha: str
) -> None:
    """Only full commit ids and valid branch names reach the command line."""
    assert None is in_clone(clone.path, branch, sha, git="/nonexistent/git")


# --- GitHub's compare API ------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [("behind", True), ("identical", True), ("ahead", False), ("diverged", False)],
)
def test_the_compare_status_says_whether_the_head_is_in_the_branch(
    status: str, expected: bool
) -> None:
    """BRANCH...SHA: ``behind``/``identical`` mean SHA is already in BRANCH."""
    assert expected is on_github(compare_says(status))


def test_the_compare_request_names_branch_and_head_and_carries_the_token() -> None:
    """``GET /repos/OWNER/NAME/compare/BRANCH...SHA`` with a bearer token."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"status": "behind"})

    on_github(handler, branch="release/1.x#2")
    [request] = seen
    assert (
        "GET",
        f"https://api.github.com/repos/acme/reels/compare/release/1.x%232...{UNKNOWN}",
        f"Bearer {TOKEN}",
        "application/vnd.github+json",
    ) == (
        request.method,
        str(request.url),
        request.headers["Authorization"],
        request.headers["Accept"],
    )


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(500, text="oops"),
        httpx.Response(404, json={"message": "Not Found"}),
        httpx.Response(401, json={"message": "Bad credentials"}),
        httpx.Response(200, text="not json"),
        httpx.Response(200, json=["behind"]),
        httpx.Response(200, json={"status": "sideways"}),
    ],
)
def test_an_error_or_an_unexpected_answer_is_unknown(response: httpx.Response) -> None:
    """Anything but a clear status leaves the branch unconfirmed."""
    assert None is on_github(lambda request: response)


def test_a_network_timeout_is_unknown() -> None:
    """httpx's own timeout, as a slow GitHub would raise it."""

    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    assert None is on_github(handler)


def test_a_github_slower_than_the_bound_is_given_up_on() -> None:
    """The whole question is bounded, whatever the transport does."""

    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return httpx.Response(200, json={"status": "behind"})

    started = time.monotonic()
    assert None is on_github(handler, timeout=0.1)
    assert time.monotonic() - started < 2


def test_the_token_never_reaches_the_log(caplog: pytest.LogCaptureFixture) -> None:
    """Failures are logged by kind and status only."""

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"cannot connect {request.headers}", request=request)

    on_github(refuse)
    on_github(lambda request: httpx.Response(502, text=str(request.headers)))
    assert "ConnectError" in caplog.text
    assert TOKEN not in caplog.text


def test_an_unsafe_repository_name_is_not_put_in_a_url() -> None:
    """``OWNER/NAME`` only: no path tricks reach the API."""
    answer = asyncio.run(
        ancestor_on_github("acme/../admin", "main", UNKNOWN, token=TOKEN, client=None)
    )
    assert None is answer


# --- the two together ----------------------------------------------------------------


def ask(
    clones: list[Path], sha: str, handler: Handler, *, token: str | None = TOKEN
) -> bool | None:
    """``head_in_branch`` for ``main`` of acme/reels with a faked GitHub."""

    async def run() -> bool | None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await head_in_branch(
                clones, "main", sha, token=token, repository="acme/reels", client=client
            )

    return asyncio.run(run())


def test_a_yes_from_the_clone_is_final(clone: Clone) -> None:
    """History only grows: GitHub is not asked."""
    assert True is ask([clone.path], clone.first, never_called)


def test_a_no_from_a_possibly_stale_clone_is_checked_with_github(clone: Clone) -> None:
    """The clone may not have fetched the commit's arrival on main; GitHub has."""
    assert True is ask([clone.path], clone.aside, compare_says("behind"))


def test_an_unknown_commit_in_the_clone_is_asked_of_github(clone: Clone) -> None:
    """GitHub's answer wins when it has one."""
    assert False is ask([clone.path], UNKNOWN, compare_says("diverged"))


def test_the_clones_answer_stands_when_github_cannot_tell(clone: Clone) -> None:
    """A failing API does not turn a "no" into "unknown", nor the reverse."""
    failing: Handler = lambda request: httpx.Response(503)  # noqa: E731
    assert (False, None) == (
        ask([clone.path], clone.aside, failing),
        ask([clone.path], UNKNOWN, failing),
    )


def test_without_a_clone_github_answers() -> None:
    """No workspace: the compare API alone."""
    assert True is ask([], UNKNOWN, compare_says("identical"))


def test_without_a_token_github_is_not_asked(clone: Clone) -> None:
    """The clone's answer, or unknown with no clone at all."""
    assert (False, None) == (
        ask([clone.path], clone.aside, never_called, token=None),
        ask([], UNKNOWN, never_called, token=None),
    )


@pytest.mark.parametrize("first", [True, False])
def test_any_clone_given_may_say_yes(clone: Clone, tmp_path: Path, first: bool) -> None:
    """A folder that is no clone, before or after the clone that knows: the answer is yes."""
    clones = [tmp_path, clone.path] if first else [clone.path, tmp_path]
    assert True is ask(clones, clone.first, never_called, token=None)


def test_a_no_from_one_clone_stands_when_the_others_cannot_tell(
        clone: Clone, tmp_path: Path) -> None:
    """Without a token, a clone's "no" is the answer even beside one that does not know."""
    assert False is ask([tmp_path, clone.path], clone.aside, never_called, token=None)


def test_a_malformed_sha_is_unknown_without_asking_anyone(clone: Clone) -> None:
    """Neither git nor GitHub sees it."""
    assert None is ask([clone.path], "not-a-sha", never_called)


def test_the_compare_api_is_asked_with_a_client_of_its_own_when_none_is_given() -> None:
    """The daemon may pass its shared client; without one a client is made and closed."""
    answer = asyncio.run(
        head_in_branch(
            [], "main", UNKNOWN, token=TOKEN, repository="acme/reels", client=None,
            api_url="http://127.0.0.1:9",  # nothing listens on the discard port
            timeout=2,
        )
    )  # fmt: skip
    assert None is answer


def test_json_from_github_is_read_not_trusted() -> None:
    """A status that is not a string is no answer."""
    body = json.dumps({"status": ["behind"]})
    assert None is on_github(lambda request: httpx.Response(200, text=body))


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 100_000])
def test_an_answer_nested_too_deep_is_unknown_not_a_crash(depth: int) -> None:
    """A misbehaving API (or whatever answers in its place) cannot take the parser down:
    the answer is "could not tell", as for any other unreadable body."""
    body = '{"status": "behind", "x": ' + "[" * depth + "]" * depth + "}"
    assert None is on_github(lambda request: httpx.Response(200, text=body))
