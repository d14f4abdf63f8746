"""A git remote on local disk for workspace tests: a bare repository and a clone that
pushes to it, with a fixed author so commits need no global git config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": "/tmp"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True,
                          text=True).stdout.strip()


class Remote:
    """A bare repository and a working clone that pushes to it."""

    def __init__(self, root: Path) -> None:
        self.bare = root / "remote.git"
        self.author = root / "author"
        git(root, "init", "--quiet", "--bare", "-b", "main", str(self.bare))
        git(root, "clone", "--quiet", str(self.bare), str(self.author))
        self.commit("first.txt")

    def commit(self, name: str) -> str:
        (self.author / name).write_text(name)
        git(self.author, "add", name)
        git(self.author, "commit", "--quiet", "-m", name)
        git(self.author, "push", "--quiet", "origin", "HEAD:main")
        return git(self.author, "rev-parse", "--short=7", "HEAD")
