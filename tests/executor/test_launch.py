"""Launching an attempt: status, log, command and shell jobs, cwd, env, descriptors, group."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from cronduit.executor import (
    RETRY_AFTER_VARIABLE,
    AttemptConflict,
    Exited,
    LaunchSpec,
    NotStarted,
    inspect,
    launch,
)
from cronduit.executor.files import step_log_path
from cronduit.executor.spawn import make_ahead
from tests.helpers.processes import ENV, finish, run_job, spec_for

PYTHON = sys.executable


@pytest.mark.parametrize("status", [0, 3, 75])
def test_the_job_exit_status_is_recorded(tmp_path: Path, status: int) -> None:
    """The supervisor records the job's own exit status."""
    ended, _ = run_job(spec_for(tmp_path, shell=f"exit {status}"))
    assert Exited(status) == ended


def test_an_attempt_leaves_one_file_holding_the_mark_the_pid_and_the_status(
    tmp_path: Path,
) -> None:
    """Beside the run's log, the attempt is one file: the started mark, the job's pid and its
    exit status, a line each."""
    spec = spec_for(tmp_path, shell="exit 3")
    attempt = launch(spec)
    finish(attempt)
    run_folder = tmp_path / "runs" / "r1"
    assert (["attempt-1", "log"], f"-\n{attempt.pid}\n3\n") == (
        sorted(os.listdir(run_folder)),
        spec.attempt_file.read_text(),
    )


def test_stdout_and_stderr_go_to_the_log_in_order(tmp_path: Path) -> None:
    """Both streams of the job land in the run's log, interleaved as written."""
    _, log = run_job(spec_for(tmp_path, shell="echo out; echo err >&2; echo out again"))
    assert b"out\nerr\nout again\n" == log


def test_every_attempt_appends_to_the_same_log(tmp_path: Path) -> None:
    """A retry adds to the run's log; it never truncates what earlier attempts wrote."""
    run_job(spec_for(tmp_path, shell="echo first", attempt=1))
    _, log = run_job(spec_for(tmp_path, shell="echo second", attempt=2))
    assert b"first\nsecond\n" == log


def test_a_command_argv_reaches_the_program_untouched(tmp_path: Path) -> None:
    """Spaces, quotes, globs and dollars in a command's arguments are not interpreted."""
    args = ("two words", "'single'", '"double"', "*", "$HOME", "`id`", "a\\nb", "")
    _, log = run_job(spec_for(tmp_path, argv=(PYTHON, "-c", _PRINT_ARGV, *args)))
    assert list(args) == json.loads(log)


def test_a_command_named_like_a_shell_builtin_runs_the_program(tmp_path: Path) -> None:
    """``echo`` in a command is the program on PATH, which prints backslashes as they are."""
    _, log = run_job(spec_for(tmp_path, argv=("echo", "a\\nb")))
    assert b"a\\nb\n" == log


def test_a_run_string_goes_through_sh(tmp_path: Path) -> None:
    """A ``run`` job is a shell script: loops, pipes and expansions work."""
    _, log = run_job(spec_for(tmp_path, shell="for w in a b; do echo $w; done | tr a-z A-Z"))
    assert b"A\nB\n" == log


def test_a_missing_program_exits_127_and_says_why_in_the_log(tmp_path: Path) -> None:
    """A command that cannot be found fails like in the shell, and the log names it."""
    ended, log = run_job(spec_for(tmp_path, argv=("./no-such-program",)))
    assert (Exited(127), True) == (ended, b"./no-such-program: not found" in log)


def test_the_job_runs_in_its_cwd_with_exactly_its_environment(tmp_path: Path) -> None:
    """The job sees its folder and the caller's environment, plus the retry hint path and PWD."""
    cwd = tmp_path / "work dir"
    cwd.mkdir()
    env = {**ENV, "CRONDUIT_JOB": "report", "QUOTED": "it's \"quoted\" $X"}
    spec = spec_for(tmp_path, argv=(PYTHON, "-c", _PRINT_CWD_AND_ENV), env=env, cwd=cwd)
    _, log = run_job(spec)
    retry_file = str(tmp_path / "runs" / "r1" / "attempt-1.retry_after")
    expected_env = {**env, RETRY_AFTER_VARIABLE: retry_file, "PWD": str(cwd.resolve())}
    assert [str(cwd.resolve()), expected_env] == json.loads(log)


def test_the_job_does_not_inherit_the_lock(tmp_path: Path) -> None:
    """The job's only descriptors are stdin from /dev/null and the log; the lock stays out."""
    spec = spec_for(tmp_path, argv=(PYTHON, "-c", _PRINT_FDS))
    _, log = run_job(spec)
    log_path = str(spec.log_path)
    assert {"0": "/dev/null", "1": log_path, "2": log_path} == json.loads(log)


def test_the_job_leads_its_own_process_group_and_session(tmp_path: Path) -> None:
    """The job's pid is its process group and session, not the daemon's."""
    spec = spec_for(tmp_path, argv=(PYTHON, "-c", _PRINT_GROUP))
    attempt = launch(spec)
    finish(attempt)
    pgid, sid = json.loads(spec.log_path.read_bytes())
    assert (attempt.pid, attempt.pid, True) == (pgid, sid, pgid != os.getpgrp())


def test_a_missing_cwd_fails_the_launch_and_leaves_the_attempt_not_started(
    tmp_path: Path,
) -> None:
    """Nothing ran, so the attempt may still be launched once the folder exists."""
    spec = spec_for(tmp_path, shell="true", cwd=tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        launch(spec)
    assert NotStarted() == inspect(spec.attempt_file)


def test_an_attempt_file_with_anything_in_it_is_never_launched(tmp_path: Path) -> None:
    """Even a pid line cut short says the attempt got that far; the file is left as it was."""
    spec = spec_for(tmp_path, shell="echo ran")
    spec.attempt_file.parent.mkdir(parents=True)
    spec.attempt_file.write_bytes(b"12")
    with pytest.raises(AttemptConflict, match="already started"):
        launch(spec)
    assert (b"12", False) == (spec.attempt_file.read_bytes(), spec.log_path.exists())


def test_an_attempt_made_ahead_is_empty_and_launches_as_any_other(tmp_path: Path) -> None:
    """make_ahead gives the attempt its file and step log, empty (not started), and the launch
    then only opens them."""
    spec = spec_for(tmp_path, shell="echo ran", attempt=2)
    spec.attempt_file.parent.mkdir(parents=True)
    make_ahead(spec.attempt_file)
    assert (b"", b"") == (spec.attempt_file.read_bytes(),
                          step_log_path(spec.attempt_file).read_bytes())
    assert NotStarted() == inspect(spec.attempt_file)
    assert Exited(0) == finish(launch(spec))


def test_making_ahead_never_touches_what_is_there_nor_makes_a_folder_gone(
        tmp_path: Path) -> None:
    """An attempt file with anything in it stays as it was (still never launched), and a run
    folder that is gone (pruned meanwhile) is not made again."""
    spec = spec_for(tmp_path, shell="echo ran")
    spec.attempt_file.parent.mkdir(parents=True)
    spec.attempt_file.write_bytes(b"-\n12")
    make_ahead(spec.attempt_file)
    assert b"-\n12" == spec.attempt_file.read_bytes()
    with pytest.raises(AttemptConflict, match="already started"):
        launch(spec)
    gone = tmp_path / "runs" / "r2" / "attempt-2"
    make_ahead(gone)
    assert not gone.parent.exists()


def test_an_attempt_that_started_is_never_launched_again(tmp_path: Path) -> None:
    """Launching an attempt twice is refused, while it runs and after it ended."""
    spec = spec_for(tmp_path, shell="sleep 0.2")
    attempt = launch(spec)
    with pytest.raises(AttemptConflict, match="holds the lock"):
        launch(spec)
    finish(attempt)
    with pytest.raises(AttemptConflict, match="already started"):
        launch(spec)


@pytest.mark.parametrize(
    ("argv", "shell"), [(None, None), (("true",), "true"), ((), None)]
)
def test_a_launch_needs_exactly_one_non_empty_command(
    tmp_path: Path, argv: tuple[str, ...] | None, shell: str | None
) -> None:
    """A spec with neither or both of argv and shell, or an empty argv, is refused."""
    with pytest.raises(ValueError, match="argv"):
        spec_for(tmp_path, argv=argv, shell=shell)


def test_a_run_string_is_given_to_sh_dash_c() -> None:
    """The command of a ``run`` job is ``/bin/sh -c`` and the string, as one argument."""
    spec = LaunchSpec("r1", 1, None, "echo $1; ls", Path(), {}, Path(), Path())
    assert ("/bin/sh", "-c", "echo $1; ls") == spec.command


_PRINT_ARGV = "import json, sys; print(json.dumps(sys.argv[1:]))"
_PRINT_CWD_AND_ENV = "import json, os; print(json.dumps([os.getcwd(), dict(os.environ)]))"
_PRINT_GROUP = "import json, os; print(json.dumps([os.getpgrp(), os.getsid(0)]))"
_PRINT_FDS = """
import json, os
fds = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        fds[fd] = os.readlink(f"/proc/self/fd/{fd}")
    except FileNotFoundError:
        pass  # the descriptor listdir used to read the folder, closed since
print(json.dumps(fds))
"""


def test_a_script_without_a_shebang_line_runs_under_the_shell(tmp_path: Path) -> None:
    """As in a shell: an executable text file with no ``#!`` line is run by /bin/sh."""
    script = tmp_path / "report"
    script.write_text('echo "ran as a script: $1"\nexit 4\n')
    script.chmod(0o755)
    ended, log = run_job(spec_for(tmp_path, argv=("./report", "x")))
    assert (Exited(4), b"ran as a script: x\n") == (ended, log)


def test_a_program_that_is_not_executable_exits_126(tmp_path: Path) -> None:
    (tmp_path / "report").write_text("echo never\n")
    ended, log = run_job(spec_for(tmp_path, argv=("./report",)))
    assert (Exited(126), b"cronduit: ./report: permission denied\n") == (ended, log)


def test_a_program_is_looked_up_on_the_jobs_own_path(tmp_path: Path) -> None:
    """``command: [report]`` finds ``report`` on the PATH the job is given, not the daemon's."""
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    (bin_folder / "report").write_text("#!/bin/sh\necho found on the job path\n")
    (bin_folder / "report").chmod(0o755)
    env = {**ENV, "PATH": f"{bin_folder}:{ENV['PATH']}"}
    ended, log = run_job(spec_for(tmp_path, argv=("report",), env=env))
    assert (Exited(0), b"found on the job path\n") == (ended, log)
