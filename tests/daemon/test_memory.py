"""The daemon caps glibc's malloc arenas, unless the user chose a limit."""

from __future__ import annotations

import subprocess
import sys


def _run(env_extra: dict[str, str]) -> str:
    code = "from cronduit.daemon.memory import limit_malloc_arenas; print(limit_malloc_arenas())"
    env = {"PATH": "/usr/bin:/bin", **env_extra}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


def _python(code: str) -> str:
    """What ``code`` prints, run in a Python of its own (malloc and the collector are
    process-wide: this test process's must stay as they are)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_limit_is_set_on_glibc() -> None:
    """On this glibc system, mallopt accepts the arena limit."""
    assert _run({}) == "True"


def test_the_users_malloc_arena_max_wins() -> None:
    """A MALLOC_ARENA_MAX in the environment is left alone."""
    assert _run({"MALLOC_ARENA_MAX": "4"}) == "False"


def test_free_memory_is_given_back_on_glibc() -> None:
    """Memory freed between live chunks is returned: malloc_trim says it released some."""
    code = ("from cronduit.daemon.memory import release_free_memory\n"
            "chunks = [bytes(4000) for _ in range(20000)]\n"
            "del chunks[::2]\n"
            "print(release_free_memory())")
    assert _python(code) == "True"


def test_long_lived_objects_are_frozen_and_an_old_freeze_is_collected() -> None:
    """After a freeze the objects held so far are out of the collector's walks; at the next
    (an apply), what the first froze and nothing holds any more, cycles included, is
    collected, not kept for good."""
    code = ("import gc, weakref\n"
            "from cronduit.daemon.memory import freeze_long_lived\n"
            "class Node:\n"
            "    pass\n"
            "old = Node(); old.me = old\n"
            "gone = weakref.ref(old)\n"
            "freeze_long_lived()\n"
            "frozen = gc.get_freeze_count()\n"
            "del old\n"
            "alive_while_frozen = gone() is not None\n"
            "freeze_long_lived()\n"
            "print(frozen > 1000, alive_while_frozen, gone() is None)")
    assert _python(code) == "True True True"
