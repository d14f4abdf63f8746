"""The wrapper: a few lines of ``/bin/sh`` that supervise one attempt and outlive the daemon.

It is started in its own session (so its pid is also the job's process group) with the
attempt file, locked, on its standard input, so it holds the lock from its first
instruction to its exit, wherever the daemon is by then. It then:

1. catches TERM, INT and HUP with a no-op, so a TERM sent to the whole group stops the job
   while the wrapper lives on to record how it ended (a caught signal, unlike an ignored
   one, is reset to its default for the job);
2. appends its pid to the attempt file (``>&0``: the launcher opened it read-write in
   append mode, so the line lands at the end whatever the offset); only then may the job
   begin, which is what makes "lock free and file empty" proof that the job never ran (a
   wrapper that cannot write it exits 125 without running the job);
3. runs the job with ``exec`` in a subshell, so an argument list is executed as a program
   even when its name is a shell builtin (``echo``, ``exit``, ``cd``); with standard input
   from ``/dev/null``, which also keeps the attempt file and its lock out of the job's hands;
4. appends ``$?`` to the attempt file and exits with it.

Writing through the inherited descriptor creates nothing: the attempt costs the daemon one
file create, not one per fact (:mod:`.files`).

Standard output and error are the run's log, opened in append mode by the launcher, so the
shell's own complaints (``cronduit: 3: exec: ./report.sh: not found``) land there too.
"""

from __future__ import annotations

from collections.abc import Sequence

SHELL = "/bin/sh"
NAME = "cronduit"
"""The wrapper's ``$0``: the name its error messages start with in the log."""

SCRIPT = """\
trap : HUP INT TERM
echo $$ >&0 || exit 125
(exec "$@") </dev/null
s=$?
echo $s >&0
exit $s
"""


def wrapper_argv(command: Sequence[str]) -> list[str]:
    """The wrapper's argument list: every word of ``command`` travels as its own argument.

    Nothing is interpolated into the script, so no quoting can go wrong: the command
    reaches the shell as positional parameters, and the attempt file as standard input.
    """
    return [SHELL, "-c", SCRIPT, NAME, *command]
