"""The supervisor: the command reaches the job word for word; the supervisor outlives the daemon."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cronduit.executor import Exited, launch
from tests.helpers.processes import alive, eventually, finish, run_job, spec_for
from tests.helpers.spawn import supervisor_pid

ARGUMENT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"))


@settings(max_examples=25, deadline=None)
@given(words=st.lists(ARGUMENT, max_size=6))
def test_any_argument_list_reaches_the_job_unchanged(words: list[str]) -> None:
    """Whatever the words (quotes, newlines, globs, dollars, non-ASCII), the job gets them as is."""
    with tempfile.TemporaryDirectory() as folder:
        spec = spec_for(Path(folder), argv=(sys.executable, "-c", _PRINT_ARGV, *words))
        _, log = run_job(spec)
    assert words == json.loads(log)


_PRINT_ARGV = "import json, sys; print(json.dumps(sys.argv[1:]))"


def test_a_killed_supervisor_is_replaced_at_the_next_launch(tmp_path: Path) -> None:
    """Whatever happened to the last supervisor, the next launch gets a working one."""
    run_job(spec_for(tmp_path, shell="exit 0"))
    first = supervisor_pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)
    assert eventually(lambda: not alive(first))
    ended, log = run_job(spec_for(tmp_path, shell="echo again", attempt=2))
    assert (Exited(0), b"again\n", True) == (ended, log, supervisor_pid() not in (None, first))


def test_launches_from_many_threads_each_get_their_own_answer(tmp_path: Path) -> None:
    """Requests are pipelined: answers come back in order, and each launch gets its own."""
    specs = [replace(spec_for(tmp_path, shell=f"exit {n}"), run_id=f"r{n}",
                     attempt_file=tmp_path / f"r{n}" / "attempt-1",
                     log_path=tmp_path / f"r{n}" / "log")
             for n in range(40)]
    with ThreadPoolExecutor(8) as pool:
        attempts = list(pool.map(launch, specs))
    assert [Exited(n) for n in range(40)] == [finish(attempt) for attempt in attempts]
    assert len({attempt.pid for attempt in attempts}) == 40
    # Each job ended at once, maybe before its pid was recorded: its start time was still read
    assert all(attempt.start_time > 0 for attempt in attempts)


def test_the_job_does_not_inherit_the_supervisors_ignored_signals(tmp_path: Path) -> None:
    """Python ignores SIGPIPE; a job gets it at its default, so ``yes | head`` ends."""
    ended, log = run_job(spec_for(tmp_path, shell="yes | head -n 2"))
    assert (Exited(0), b"y\ny\n") == (ended, log)


def test_the_supervisor_lifts_its_open_files_limit_to_the_hard_one() -> None:
    """Two descriptors per running job: a soft limit of 1,024 would cap running jobs at ~500."""
    script = (
        "import resource\n"
        "from cronduit.executor.supervisor import _raise_open_files_limit\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))\n"
        "_raise_open_files_limit()\n"
        "print(resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert "True" == done.stdout.strip()
