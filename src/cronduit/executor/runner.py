"""The process runner: the engine's :class:`~cronduit.ports.Runner` on real processes.

It makes each attempt's folder and files, asks the core what the process is given (its
variables, its trigger document, its folder: :mod:`cronduit.core.run_environment`, SPEC §5),
hands the launch to the executor, and watches the process on the event loop; when an attempt
ends it queues the facts and wakes the daemon. It decides nothing about outcomes or retries.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from cronduit.core.config.model import DEFAULT_MAX_LOG, Job
from cronduit.core.lifecycle import AttemptReport
from cronduit.core.log_tails import LogTail
from cronduit.core.run_environment import (
    UnreadableInputs,
    run_environment,
    trigger_document,
    work_dir,
    workspace_variables,
)
from cronduit.core.steps import StepLaunch, job_steps
from cronduit.executor import (
    GRACE,
    Attempt,
    AttemptConflict,
    Exited,
    LaunchSpec,
    NotStarted,
    Running,
    Settled,
    Vanished,
    inspect,
    retry_after,
    terminate_async,
    wait,
    workspace,
)
from cronduit.executor.files import outputs_path, step_log_path
from cronduit.executor.lease import write_lease
from cronduit.executor.logs import read_tail
from cronduit.executor.outputs import read_outputs
from cronduit.executor.recorded import RecordedWords
from cronduit.executor.run_folders import RunFolders
from cronduit.executor.spawn import answer_on, begin_launch, make_ahead
from cronduit.executor.workspace import WorkspaceError
from cronduit.paths import StatePaths
from cronduit.ports import Deferred, Event, LaunchResult, Run

LAUNCH_THREADS = 8
STATE_FOLDER_FAULTS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
"""Why a launch could not write the run's folder (no space, over quota, read-only): the
state folder's fault, not the job's, so the launch is deferred until it can be written."""
T = TypeVar("T")


class ProcessRunner:
    """Runs attempts through the executor's supervisor, one process group each."""

    def __init__(self, paths: StatePaths, config_path: Path,
                 secrets: Callable[[], Mapping[str, str]], wake: Callable[[], None],
                 environ: Mapping[str, str] | None = None,
                 max_log: Callable[[], int] = lambda: DEFAULT_MAX_LOG) -> None:
        self.paths = paths
        self._max_log = max_log
        """``settings.max_log`` as in force: an apply changes it for the attempts after."""
        self._folders = RunFolders(paths)
        self.config_dir = config_path.resolve().parent
        self._config_dir_text = str(self.config_dir)
        self._secrets = secrets
        self._wake = wake
        self._environ = dict(os.environ if environ is None else environ)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._words: RecordedWords | None = None
        """The supervisor's word that a record is complete, heard on the loop."""
        self._live: dict[str, tuple[int, Attempt]] = {}
        self._in_workspace: dict[str, tuple[Path, str, int]] = {}
        """Runs working in a workspace: its folder, mode and retain_failed, to release at the
        end."""
        self._stopped: dict[str, str] = {}
        self._lease: Path | None = None
        """The lease file the attempts launched now are stopped by; None while no lease is
        held, so a file left by another daemon never stops this one's attempts."""
        self._ended: list[tuple[str, int, AttemptReport]] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._pool = ThreadPoolExecutor(max_workers=LAUNCH_THREADS,
                                        thread_name_prefix="cronduit-launch")

    def attach(self, loop: asyncio.AbstractEventLoop, *, answers_here: bool = False) -> None:
        """Watch processes on ``loop`` (the daemon's); ``answers_here``: read the
        supervisor's channel on it too (:func:`~cronduit.executor.spawn.answer_on`), for a
        loop that runs as long as the process, as the daemon's does."""
        self._loop = loop
        self._words = RecordedWords(loop)
        if answers_here:
            answer_on(loop)

    # -- the Runner protocol ----------------------------------------------------------------

    def launch(self, run: Run, job: Job, trigger: Event, attempt: int,
               step: StepLaunch | None = None) -> LaunchResult:
        return self.launch_many([(run, job, trigger, attempt)],
                                None if step is None else {run.id: step})[0]

    def launch_many(self, launches: Sequence[tuple[Run, Job, Event, int]],
                    steps: Mapping[str, StepLaunch] | None = None) -> list[LaunchResult]:
        return self.begin_many(launches, steps)()

    def begin_many(self, launches: Sequence[tuple[Run, Job, Event, int]],
                   steps: Mapping[str, StepLaunch] | None = None
                   ) -> Callable[[], list[LaunchResult]]:
        """Prepare each attempt and send them all to the supervisor; the call returned
        collects the answers: the supervisor starts one job while the next request is on
        its way, and the caller works while the jobs start. Workspaces (git) are prepared
        on a few threads, since they wait on the network and the disk. Watching stays on
        the loop."""
        deferred: dict[str, Deferred] = {}
        stepped = steps or {}

        def prepare(item: tuple[Run, Job, Event, int]) -> LaunchSpec | None:
            return self._guarded(item, partial(self._prepare, *item, stepped.get(item[0].id)),
                                 deferred)

        if any(job.workspace is not None for _, job, _, _ in launches):
            specs = list(self._pool.map(prepare, launches))
        else:
            specs = [prepare(item) for item in launches]
        begun = [None if spec is None else self._guarded(item, partial(begin_launch, spec),
                                                         deferred)
                 for item, spec in zip(launches, specs, strict=True)]

        def collect() -> list[LaunchResult]:
            started = [None if pending is None else self._guarded(item, pending.result,
                                                                  deferred)
                       for item, pending in zip(launches, begun, strict=True)]
            for item, attempt_started in zip(launches, started, strict=True):
                if attempt_started is not None:
                    self._guarded(item, partial(self._started, item[0].id, item[3],
                                                attempt_started))
            self._make_ahead(launches, started, stepped)
            return [deferred.get(item[0].id) if s is None else (s.pid, s.start_time)
                    for item, s in zip(launches, started, strict=True)]

        return collect

    def _make_ahead(self, launches: Sequence[tuple[Run, Job, Event, int]],
                    started: Sequence[Attempt | None], steps: Mapping[str, StepLaunch]) -> None:
        """The next attempt's file and log, made off the engine's thread while each started
        step runs that has a step after it (:func:`~cronduit.executor.spawn.make_ahead`)."""
        ahead = [self.paths.attempt(run.id, number + 1)
                 for (run, job, _, number), attempt_started in zip(launches, started, strict=True)
                 if attempt_started is not None and _goes_on(job, steps.get(run.id))]
        if ahead:
            self._pool.submit(_make_all_ahead, ahead)

    def _started(self, run_id: str, number: int, attempt: Attempt) -> None:
        used = self._in_workspace.get(run_id)
        if used is not None and used[1] == "shared":
            workspace.record_hold(used[0], run_id, attempt.pid, attempt.start_time)
        self._watch(run_id, number, attempt)

    def _guarded(self, item: tuple[Run, Job, Event, int], step: Callable[[], T],
                 deferred: dict[str, Deferred] | None = None) -> T | None:
        """One step of a launch, or None with the attempt reported ended without a process,
        or (a full or read-only state folder, given ``deferred``) put in ``deferred``.

        Whatever goes wrong with one launch (a missing ``dir``, a workspace that cannot be
        prepared, a job the executor cannot start, a fault of cronduit's own) ends that
        attempt with the reason, recorded as ``failure``: it must never stop the daemon, nor
        the launches beside it, nor come back to stop the next daemon at the same run (a run
        whose stored inputs cannot be read fails so too, rather than run other values). The
        one exception is a state folder that cannot be written: nothing of the job ran, its
        attempt file is still empty, and the launch waits for the disk instead.
        """
        run, _, _, attempt = item
        try:
            return step()
        except OSError as error:
            if deferred is None or error.errno not in STATE_FOLDER_FAULTS:
                self._not_started(run, attempt, error)
            else:
                self._defer(run, error, deferred)
        except (WorkspaceError, UnreadableInputs) as error:
            self._end_unstarted(run, attempt, AttemptReport(None, not_started=str(error)))
        except AttemptConflict:
            # The attempt's file says it started (or a process holds it) but this launch knows
            # no process: it is never launched again, and ends as vanished.
            self._end_unstarted(run, attempt, AttemptReport(None, vanished=True))
        except Exception as error:  # any other fault ends this attempt, never the daemon
            self._end_unstarted(run, attempt, AttemptReport(None, not_started=_fault(error)))
        return None

    def _not_started(self, run: Run, attempt: int, error: OSError) -> None:
        why = error.strerror or type(error).__name__
        where = f": {error.filename}" if error.filename is not None else ""
        self._end_unstarted(run, attempt, AttemptReport(None, not_started=why + where))

    def _defer(self, run: Run, error: OSError, deferred: dict[str, Deferred]) -> None:
        """Give back what the launch took (its workspace), and say why it waits."""
        used = self._in_workspace.pop(run.id, None)
        if used is not None:
            self._release(run.id, used, succeeded=False)
        deferred[run.id] = Deferred(error.strerror or type(error).__name__)

    def _end_unstarted(self, run: Run, attempt: int, report: AttemptReport) -> None:
        used = self._in_workspace.pop(run.id, None)
        if used is not None:  # prepared, then the launch failed: give the workspace back
            self._release(run.id, used, succeeded=False)
        self._ended.append((run.id, attempt, report))
        self._wake_from_any_thread()

    def _wake_from_any_thread(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._wake)

    def _prepare(self, run: Run, job: Job, trigger: Event, attempt: int,
                 step: StepLaunch | None) -> LaunchSpec:
        # Paths joined from the run's folder once: pathlib's joins were a tenth of a launch.
        folder = self._folders.make(run.id) if attempt == 1 else self.paths.run(run.id)
        output = folder / "output"
        if attempt > 1:
            output.mkdir(parents=True, exist_ok=True)
        trigger_file = folder / "trigger.json"
        attempt_file = folder / f"attempt-{attempt}"
        env = run_environment(run, job, trigger, attempt, trigger_file=str(trigger_file),
                              output_dir=str(output), secrets=self._secrets(),
                              environ=self._environ, step=step,
                              output_file=str(outputs_path(attempt_file)))
        if job.workspace is not None:
            cwd = self._workspace(run, job, env)
        else:
            cwd = Path(work_dir(job.dir, self._config_dir_text))
        if attempt == 1 or not trigger_file.exists():
            _write_file(trigger_file, trigger_document(trigger, run.id))
        # A step attempt runs the step's command, into a log of its own.
        does = job if step is None else step.step
        return LaunchSpec(
            run_id=run.id,
            attempt=attempt,
            argv=tuple(does.command) if does.command is not None else None,
            shell=does.run,
            cwd=cwd,
            env=env,
            attempt_file=attempt_file,
            log_path=folder / "log" if step is None else step_log_path(attempt_file),
            max_log=self._max_log(),
            lease_file=self._lease,
        )

    def recover(self, run: Run) -> AttemptReport | Literal["running", "not_started"]:
        attempt_file = self.paths.attempt(run.id, run.attempts)
        try:
            state = inspect(attempt_file, expected_start_time=run.pid_start)
        except AttemptConflict:
            # A process holds the attempt's lock but never says who it is: never launch again
            # (that could run the job twice); record the attempt as lost.
            return AttemptReport(None, vanished=True)
        if isinstance(state, Running):
            self._watch(run.id, run.attempts, state.attempt)
            return "running"
        if isinstance(state, NotStarted):
            return "not_started"
        return _report(state, attempt_file, None)

    def ended(self) -> list[tuple[str, int, AttemptReport]]:
        ended, self._ended = self._ended, []
        return ended

    def stop(self, run: Run, why: str) -> None:
        self._stopped[run.id] = why
        live = self._live.get(run.id)
        if live is not None:
            self._spawn(terminate_async(live[1], GRACE))

    def hold_lease(self, until: float | None) -> None:
        """The node's lease holds until ``until`` (``time.monotonic()``; see
        :func:`~cronduit.executor.lease_deadline`); None: no lease.

        Every attempt launched while a lease is held, and every attempt already launched
        under one (an earlier daemon's too), is stopped by its supervisor as ``until`` comes,
        unless a later call moves it. Call it after every renewal that succeeded, and before
        the first launch; None removes the file (no attempt is stopped for a lease). Raises
        :class:`OSError` when the file cannot be written: the deadline before it stays.
        """
        write_lease(self.paths.lease, until)
        self._lease = None if until is None else self.paths.lease

    def log_tail(self, run_id: str, attempt: int | None = None) -> LogTail | None:
        # Under max_log as in force: the cap the log was cut under, unless an apply changed
        # it since (the tail is then read as a reader of the log would read it, holes left
        # out all the same). A step attempt's own log, where the attempt was a step's.
        try:
            if attempt is not None:
                own = step_log_path(self.paths.attempt(run_id, attempt))
                if own.exists():
                    return read_tail(own, self._max_log())
            return read_tail(self.paths.log(run_id), self._max_log())
        except Exception:  # unreadable, or a fault of cronduit's: the end goes on without it
            return None

    def prune(self, run: Run) -> None:
        # Off the loop: a run's files are several unlinks, and at hundreds of runs a second
        # deleting them inline held up the next launches.
        self._pool.submit(self._folders.retire, run.id)

    # -- watching ---------------------------------------------------------------------------

    def _watch(self, run_id: str, number: int, attempt: Attempt) -> None:
        self._live[run_id] = (number, attempt)
        self._spawn(self._await_exit(run_id, number, attempt))

    def _spawn(self, work: Coroutine[Any, Any, object]) -> None:
        """Watch on the loop; callable from the engine's thread, which launches and stops."""
        if self._loop is None:
            raise RuntimeError("attach() the runner to the daemon's loop before launching")
        self._loop.call_soon_threadsafe(self._start_task, work)

    def _start_task(self, work: Coroutine[Any, Any, object]) -> None:
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _await_exit(self, run_id: str, number: int, attempt: Attempt) -> None:
        job = (attempt.pid, attempt.start_time)
        words = self._words
        try:
            settled = await wait(attempt, None if words is None else words.expect(job))
        finally:
            if words is not None:
                words.forget(job)
        self._live.pop(run_id, None)
        report = _report(settled, attempt.attempt_file, self._stopped.pop(run_id, None))
        used = self._in_workspace.pop(run_id, None)
        if used is not None:  # git work off the loop: removing a worktree takes a while
            self._pool.submit(self._release, run_id, used, report.exit_status == 0)
        self._ended.append((run_id, number, report))
        self._wake()

    # -- what a job sees --------------------------------------------------------------------

    def _workspace(self, run: Run, job: Job, env: dict[str, str]) -> Path:
        """Prepare the run's checkout (SPEC §5): its folder, and the note the run is told."""
        spec = job.workspace
        assert spec is not None
        prepared = workspace.prepare(spec, self.paths.root, job.name, run.id, self.config_dir)
        self._in_workspace[run.id] = (prepared.root, prepared.mode, spec.retain_failed)
        env.update(workspace_variables(str(prepared.path), prepared.note))
        _write_file(self.paths.run(run.id) / "workspace", prepared.note + "\n")
        return prepared.path  # the config refuses `dir` beside `workspace`

    def _release(self, run_id: str, used: tuple[Path, str, int], succeeded: bool) -> None:
        root, mode, retain_failed = used
        workspace.release(root, run_id, mode, succeeded=succeeded)
        workspace.clean_expired(root, retain_failed)


def _goes_on(job: Job, step: StepLaunch | None) -> bool:
    """Whether a step follows this attempt's step: its next attempt is then all but sure
    to come as soon as it ends (:func:`~cronduit.executor.spawn.make_ahead`)."""
    if step is None:
        return False
    steps = job_steps(job)
    return bool(steps) and steps[-1].id != step.step.id


def _make_all_ahead(attempt_files: list[Path]) -> None:
    for attempt_file in attempt_files:
        make_ahead(attempt_file)


FAULT_CHARS = 200
"""How much of an unexpected error's message a run's reason keeps."""


def _fault(error: Exception) -> str:
    """An unexpected launch error as a run's reason: its kind and the start of its message,
    on one printable line (the message is cronduit's own, never the job's environment)."""
    text = " ".join(str(error).split())
    text = "".join(c if c.isprintable() else "?" for c in text)[:FAULT_CHARS]
    return f"cronduit could not launch it ({type(error).__name__}{': ' + text if text else ''})"


def _write_file(path: Path, text: str) -> None:
    """``path.write_text(text)`` in three system calls where a file object makes six or so
    (``fstat``, ``ioctl``, ``lseek``): this runs at every launch, on the launch threads."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        data = memoryview(text.encode())
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def _report(state: Settled, attempt_file: Path, stopped_for: str | None) -> AttemptReport:
    if isinstance(state, Exited):
        hint = retry_after(attempt_file)
        outputs, unreadable = read_outputs(attempt_file) if state.exit_status == 0 else (
            None, None)
        return AttemptReport(state.exit_status, stopped_for=stopped_for, retry_after=hint,
                             outputs=outputs, outputs_unreadable=unreadable)
    if isinstance(state, Vanished):
        return AttemptReport(None, stopped_for=stopped_for, vanished=stopped_for is None)
    return AttemptReport(None, stopped_for=stopped_for, vanished=True)
