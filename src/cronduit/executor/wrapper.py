"""The wrapper: a few lines of ``/bin/sh`` that supervise one attempt and outlive the daemon.

It is started in its own session (so its pid is also the job's process group) with the
attempt's lock on its standard input, so it holds the lock from its first instruction to
its exit, wherever the daemon is by then. It then:

1. catches TERM, INT and HUP with a no-op, so a TERM sent to the whole group stops the job
   while the wrapper lives on to record how it ended (a caught signal, unlike an ignored
   one, is reset to its default for the job);
2. writes its pid to ``started``; only then may the job begin, which is what makes "lock
   free and no ``started``" proof that the job never ran (a wrapper that cannot write it
   exits 125 without running the job);
3. runs the job with ``exec`` in a subshell, so an argument list is executed as a program
   even when its name is a shell builtin (``echo``, ``exit``, ``cd``); with standard input
   from ``/dev/null``, which also keeps the lock out of the job's hands;
4. writes ``$?`` to ``status`` and exits with it.

Standard output and error are the run's log, opened in append mode by the launcher, so the
shell's own complaints (``cronduit: 6: exec: ./report.sh: not found``) land there too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cronduit.executor.files import STARTED, STATUS

SHELL = "/bin/sh"
NAME = "cronduit"
"""The wrapper's ``$0``: the name its error messages start with in the log."""

SCRIPT = f"""\
trap : HUP INT TERM
d=$1
shift
echo $$ >"$d/{STARTED}" || exit 125
(exec "$@") </dev/null
s=$?
echo $s >"$d/{STATUS}"
exit $s
"""


def wrapper_argv(attempt_dir: Path, command: Sequence[str]) -> list[str]:
    """The wrapper's argument list: every word of ``command`` travels as its own argument.

    Nothing is interpolated into the script, so no quoting can go wrong: the attempt
    directory and the command reach the shell as positional parameters.
    """
    return [SHELL, "-c", SCRIPT, NAME, str(attempt_dir), *command]
