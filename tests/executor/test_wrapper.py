"""The wrapper's argument list: the command travels as arguments, never as script text."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronduit.executor.wrapper import SCRIPT, wrapper_argv
from tests.executor import run_job, spec_for

TRICKY_WORDS = ("two words", "it's", '"x"', "$(id)", "`id`", "*", "-c", "a\nb", "", "; exit 9")


@pytest.mark.parametrize(
    "command", [("./report.sh",), TRICKY_WORDS, ("/bin/sh", "-c", 'echo "$0"')]
)
def test_the_command_follows_the_script_word_for_word(command: tuple[str, ...]) -> None:
    """The argument list is the shell, the constant script, the wrapper's name and the words."""
    expected = ["/bin/sh", "-c", SCRIPT, "cronduit", *command]
    assert expected == wrapper_argv(command)


def test_the_script_never_mentions_a_command() -> None:
    """Nothing is interpolated into the script: it reaches the job through ``"$@"`` only."""
    assert '(exec "$@") </dev/null' in SCRIPT


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
