"""Is a check's head commit in the branch it claims? Asked of git or of GitHub (SPEC §4).

A check suite names a head branch, but a fork's ``main`` is not ours: only a commit that is
in our branch's history may start a job filtered on that branch. This module fetches the
answer; ``cronduit.core.github.with_verified_branch`` decides what it means.

Answers are ``True``, ``False`` or ``None`` (could not tell); the caller treats anything
but ``True`` as "no branch". Every question is bounded by ``ASK_TIMEOUT``, and the GitHub
token is sent in a header only, never put in a URL, a log line or an exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

import httpx

from cronduit.core.github import is_branch_name, is_commit_sha, is_repository_name
from cronduit.core.json_depth import loads

ASK_TIMEOUT = 5.0
"""Seconds one question to git or to GitHub may take; past it the answer is "unknown"."""
GITHUB_API = "https://api.github.com"
GITHUB_API_VERSION = "2022-11-28"

# A compare of BRANCH...SHA says how SHA stands against BRANCH: "behind" or "identical"
# means every commit of SHA is already in BRANCH.
_IN_BRANCH = frozenset({"behind", "identical"})
_NOT_IN_BRANCH = frozenset({"ahead", "diverged"})

_log = logging.getLogger(__name__)


async def head_in_branch(
    clones: Sequence[Path],
    branch: str,
    sha: str,
    *,
    token: str | None,
    repository: str,
    client: httpx.AsyncClient | None = None,
    timeout: float = ASK_TIMEOUT,
    api_url: str = GITHUB_API,
    git: str = "git",
) -> bool | None:
    """Whether commit ``sha`` is in the history of ``branch`` of ``repository``.

    The workspace clones given (those of every job waiting on the answer) are asked first,
    all at once, as they cost no API call. A "yes" from any of them is final (history only
    grows); a "no" or "unknown" may come from a clone not fetched since the commit landed,
    or from a clone of another repository, so GitHub is asked too when a token is
    configured, and its answer, when it has one, wins. Otherwise a "no" from a clone
    stands; with no clone and no token the answer is ``None``.
    """
    if not (is_branch_name(branch) and is_commit_sha(sha)):
        return None
    answers = await asyncio.gather(
        *(ancestor_in_clone(clone, branch, sha, timeout=timeout, git=git) for clone in clones)
    )
    if any(answer is True for answer in answers):
        return True
    if token:
        on_github = await ancestor_on_github(
            repository, branch, sha, token=token, client=client, timeout=timeout, api_url=api_url
        )
        if on_github is not None:
            return on_github
    return False if any(answer is False for answer in answers) else None


async def ancestor_in_clone(
    workspace: Path, branch: str, sha: str, *, timeout: float = ASK_TIMEOUT, git: str = "git"
) -> bool | None:
    """``git merge-base --is-ancestor SHA origin/BRANCH`` in the clone at ``workspace``.

    Exit 0 is yes and 1 is no; anything else (an unknown commit, no such branch, not a
    repository, no git, too slow) is ``None``. The remote-tracking ref is named in full so
    a local tag or branch called ``origin/...`` cannot stand in for it, and git may not look
    above ``workspace`` for a repository.
    """
    if not (is_branch_name(branch) and is_commit_sha(sha)):
        return None
    ref = f"refs/remotes/origin/{branch}"
    argv = [git, "-C", str(workspace), "merge-base", "--is-ancestor", sha, ref]
    # Only what git needs: the daemon's environment also holds secret values.
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "GIT_CEILING_DIRECTORIES": str(workspace.parent),
        "LC_ALL": "C",
    }
    if "HOME" in os.environ:
        env["HOME"] = os.environ["HOME"]
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
        )
    except OSError as error:
        _log.warning("cannot run git to check a branch: %s", error.strerror)
        return None
    try:
        async with asyncio.timeout(timeout):
            code = await process.wait()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        _log.warning("git merge-base took longer than %ss; branch left unconfirmed", timeout)
        return None
    return {0: True, 1: False}.get(code)


async def ancestor_on_github(
    repository: str,
    branch: str,
    sha: str,
    *,
    token: str,
    client: httpx.AsyncClient | None = None,
    timeout: float = ASK_TIMEOUT,
    api_url: str = GITHUB_API,
) -> bool | None:
    """GitHub's compare API, ``GET /repos/OWNER/NAME/compare/BRANCH...SHA``.

    ``behind`` or ``identical`` is yes, ``ahead`` or ``diverged`` is no; an error status,
    an unexpected body, a network failure or the timeout is ``None``. ``client`` is used
    when given (the daemon's shared one), else a client is made for this one question.
    """
    if not (is_repository_name(repository) and is_branch_name(branch) and is_commit_sha(sha)):
        return None
    url = f"{api_url.rstrip('/')}/repos/{repository}/compare/{quote(branch, safe='/')}...{sha}"
    headers = {
        "Accept": "application/vnd.github+json",
        "Authorization": f"Bearer {token}",
        "X-GitHub-Api-Version": GITHUB_API_VERSION,
    }
    try:
        async with asyncio.timeout(timeout):
            if client is not None:
                response = await client.get(url, headers=headers, timeout=timeout)
            else:
                async with httpx.AsyncClient(timeout=timeout) as own:
                    response = await own.get(url, headers=headers)
    except (TimeoutError, httpx.HTTPError) as error:
        # The type only: an httpx message may quote the request, and the request carries
        # the token in a header.
        _log.warning("GitHub compare for %s failed: %s", repository, type(error).__name__)
        return None
    return _compare_answer(response, repository)


def _compare_answer(response: httpx.Response, repository: str) -> bool | None:
    """Read a compare response: its ``status`` field, or ``None`` for anything else."""
    if response.status_code != 200:
        _log.warning("GitHub compare for %s answered %s", repository, response.status_code)
        return None
    try:
        body = loads(response.content, "GitHub's compare answer")
    except ValueError:  # not JSON, or nested too deep to read safely
        return None
    status = body.get("status") if isinstance(body, dict) else None
    if not isinstance(status, str):
        return None
    if status in _IN_BRANCH:
        return True
    if status in _NOT_IN_BRANCH:
        return False
    return None
