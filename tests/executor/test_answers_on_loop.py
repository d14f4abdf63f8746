"""The supervisor's channel read on the daemon's event loop (:func:`spawn.answer_on`):
launches from other threads get their answers, a launch on the loop's own thread reads its
own, words reach the waits on the loop, and once that loop is gone a thread reads again."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cronduit.executor import Exited, launch, spawn, wait
from cronduit.executor.recorded import RecordedWords
from tests.helpers.processes import spec_for
from tests.helpers.threads import PATIENCE, within

NOBODY_READ = "the launch waited for an answer nobody read"


def test_launches_from_other_threads_are_answered_and_worded_on_the_loop(
        tmp_path: Path) -> None:
    async def scenario() -> tuple[bool, list[object]]:
        loop = asyncio.get_running_loop()
        words = RecordedWords(loop)
        spawn.answer_on(loop)
        try:
            specs = [spec_for(tmp_path / str(n), shell=f"exit {n}") for n in range(3)]
            attempts = [await loop.run_in_executor(None, launch, spec) for spec in specs]
            read_here = spawn._SUPERVISOR._channel is not None and \
                spawn._SUPERVISOR._channel.loop is loop
            heard = [words.expect((a.pid, a.start_time)) for a in attempts]
            await asyncio.wait_for(asyncio.gather(*map(asyncio.shield, heard)), PATIENCE)
            return read_here, [await wait(a, h) for a, h in zip(attempts, heard, strict=True)]
        finally:
            spawn.answer_on(None)

    assert (True, [Exited(0), Exited(1), Exited(2)]) == within(
        lambda: asyncio.run(scenario()), NOBODY_READ)


def test_a_launch_on_the_loop_itself_reads_its_own_answer(tmp_path: Path) -> None:
    async def scenario() -> object:
        spawn.answer_on(asyncio.get_running_loop())
        try:
            attempt = launch(spec_for(tmp_path, shell="exit 4"))  # blocks the loop: reads here
            return await wait(attempt)
        finally:
            spawn.answer_on(None)

    assert Exited(4) == within(lambda: asyncio.run(scenario()), NOBODY_READ)


def test_once_the_loop_is_gone_a_thread_reads_the_answers_again(tmp_path: Path) -> None:
    async def on_loop() -> None:
        spawn.answer_on(asyncio.get_running_loop())  # left registered: the loop then closes
        await wait(await asyncio.get_running_loop().run_in_executor(
            None, launch, spec_for(tmp_path / "a", shell="exit 0")))

    def after() -> tuple[bool, object]:
        asyncio.run(on_loop())
        attempt = launch(spec_for(tmp_path / "b", shell="exit 5"))
        channel = spawn._SUPERVISOR._channel
        return channel is not None and channel.loop is None, asyncio.run(wait(attempt))

    try:
        assert (True, Exited(5)) == within(after, NOBODY_READ)
    finally:
        spawn.answer_on(None)
