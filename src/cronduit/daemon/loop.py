"""The daemon loop: read now, let the engine act, sleep until something is due.

Everything the loop does is in :class:`~cronduit.engine.Engine`; this module only owns time
and signals. It sleeps at most :data:`MAX_SLEEP` at a time and re-reads the wall clock on
every wake, so a clock that jumps (an NTP step, a resumed VM) never makes it oversleep a slot
computed before the jump.

A store or state folder that cannot be written (a full or read-only disk) never ends the
loop: the turn is tried again after a pause that grows, with one log line as the outage
begins and one as it ends (:mod:`cronduit.core.outage`); runs going carry on meanwhile.

Signals: SIGHUP reloads the config (an invalid file is refused and the running config stays);
SIGUSR1 wakes the loop (the CLI sends it after accepting a manual run); SIGTERM and SIGINT
stop firing and exit, leaving runs going in their own process groups for the next daemon to
adopt.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from cronduit.core import outage
from cronduit.core.config import ConfigErrors, load_config
from cronduit.core.config.changes import config_changes
from cronduit.core.config.model import Config
from cronduit.core.secret_names import unset_secrets
from cronduit.core.text import clean
from cronduit.core.timespec import format_utc
from cronduit.daemon.heartbeat import (
    HEARTBEAT_EVERY,
    DaemonInfo,
    own_start_time,
    write_applied,
    write_heartbeat,
)
from cronduit.daemon.memory import TRIM_EVERY, release_free_memory
from cronduit.engine import Engine
from cronduit.executor import workspace
from cronduit.faults import reason_of
from cronduit.intake import audit
from cronduit.intake.acceptor import Acceptor
from cronduit.notifier import NotificationSender
from cronduit.paths import StatePaths
from cronduit.ports import Clock, Event, Runner, Store, Transaction
from cronduit.secrets import SecretsError, missing_secrets_file

T = TypeVar("T")

if TYPE_CHECKING:
    from cronduit.http.server import HttpServer

MAX_SLEEP = 1.0
"""Seconds between wall-clock checks, whatever is due."""
NO_CHANGES = "no changes"
"""The one line of an apply that changed nothing."""
APPLY_ASKED = "apply_asked"
"""Meta key where ``cronduit apply`` leaves who asked, for the apply's audit entry."""


class ListenError(RuntimeError):
    """The HTTP address cannot be listened on (in use, not this host's, taken between the bind
    and the listen, a server that does not come up): the daemon stops, with this one line."""


class _StoppedWaiting(Exception):
    """Asked to stop while start-up waited for the state folder to be writable."""


class _Refused(Exception):
    """An apply refused: why, in one line, and the file's errors if it has any."""

    def __init__(self, why: str, errors: list[str] | None = None, *,
                 stays: str = "the running config stays") -> None:
        super().__init__(why)
        self.why = why
        self.errors = errors or []
        self.stays = stays
        """What the refusal leaves in force, as the log says it."""


class Daemon:
    """One ``cronduit serve``."""

    def __init__(self, config_path: Path, config: Config, store: Store, runner: Runner,
                 clock: Clock, *, dry_run: bool, log: Callable[[str], None],
                 checkpoint: Callable[[str], None] | None = None,
                 secrets: Callable[[Config], Mapping[str, str]] = lambda _: {},
                 open_store: Callable[[], Store] | None = None, config_text: str = "",
                 bind: Callable[[str, int], socket.socket] | None = None) -> None:
        self.config_path = config_path
        self._config_text = config_text
        """The text ``config`` was loaded from, kept in the store as the applied config."""
        self.store = store
        self._load_secrets = secrets
        self.secrets: Mapping[str, str] = secrets(config)
        """Secret values by name, read at start and on every apply (not per request)."""
        self._open_store = open_store
        """Opens a second connection for the HTTP acceptor; None: no HTTP server."""
        self._bind = bind
        """Binds the HTTP address (:func:`cronduit.http.server.bind` unless a test passes
        another)."""
        self.http: HttpServer | None = None
        self._ticked = asyncio.Event()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cronduit-engine")
        self._notifications: NotificationSender | None = None
        self.clock = clock
        self.dry_run = dry_run
        self.log = log
        self.engine = Engine(config, store, runner, dispatch=not dry_run, log=self._log,
                             checkpoint=checkpoint or (lambda _: None))
        self._wake = asyncio.Event()
        self._stopping = False
        self._reload = False
        self._outage: outage.Outage | None = None
        """The state folder's outage under way (a full or read-only disk), if any."""
        self._last_beat: float | None = None
        self._last_trim = 0.0
        """When free memory was last given back (the loop's clock; 0: at the first turn)."""
        """When the last heartbeat was written, on the loop's monotonic clock."""
        self._info = DaemonInfo(pid=os.getpid(), host=socket.gethostname(),
                                started_at=clock.now().isoformat(), heartbeat_at="",
                                dry_run=dry_run, start_time=own_start_time())

    def _log(self, line: str) -> None:
        # The last line of defence: an outside value that reached a line uncleaned (a label
        # stored by an older version) cannot write control characters into the log.
        self.log(f"{format_utc(self.clock.now())} {clean(line)}")

    def wake(self) -> None:
        """Ask the loop to look now (thread-safe through the loop's call_soon)."""
        self._wake.set()

    async def serve(self) -> None:
        listening = self._listen()  # first: a daemon that cannot have its address starts nothing
        loop = asyncio.get_running_loop()
        for signum, handler in ((signal.SIGTERM, self._stop), (signal.SIGINT, self._stop),
                                (signal.SIGHUP, self._ask_reload), (signal.SIGUSR1, self.wake)):
            loop.add_signal_handler(signum, handler)
        try:
            await self._start_up()
        except _StoppedWaiting:
            if listening is not None:
                listening.close()
            self._log("stopped before the state store could be written; nothing was started")
            return
        self._warn_unset_secrets()
        mode = " (dry run: no timers, no runs)" if self.dry_run else ""
        jobs = len(self.engine.config.jobs)
        self._log(f"serving {jobs} job{'' if jobs == 1 else 's'} from {self.config_path}{mode}")
        acceptor = await self._start_http(listening)
        self._notifications = NotificationSender(lambda: self.engine.config, self.store,
                                                 self.clock, self._off_loop, self._log)
        try:
            await self._loop()
        finally:
            if self.http is not None:
                await self.http.stop()
            if acceptor is not None:
                acceptor.close()
            await self._notifications.close()
            self._notifications = None
        self._worker.shutdown(wait=True)
        try:
            self._heartbeat(self.clock.now(), stopped=True)
        except Exception as error:
            reason = reason_of(error)
            if reason is None:
                raise
            self._log(f"could not record the stop in the state store: {reason}")
        self._log("stopped; runs going carry on and are adopted by the next daemon")

    async def _start_up(self) -> None:
        """Apply the config, record it, adopt or settle the runs left going. Each step is
        retried on its own while the state folder cannot be written, at the time it is
        tried: a daemon started on a full disk waits for room, then starts as it would
        have."""
        changes = await self._retrying(
            lambda: self.engine.apply(self.engine.config, self.clock.now()))
        for change in changes:
            self._log(change)
        await self._retrying(lambda: self._record_start(changes, self.clock.now()))
        await self._retrying(lambda: self.engine.start(self.clock.now()))

    def _record_start(self, changes: list[str], now: datetime) -> None:
        """Keep the config applied at start, and audit what it changed."""
        with self.store.transaction() as tx:
            write_applied(tx, self._config_text, str(self.config_path), now)
            if changes:  # an unchanged restart changes nothing worth auditing
                audit.record(tx, "apply", audit.ENGINE, now, start=True, ok=True,
                             changes=audit.apply_lines(changes))

    def _listen(self) -> socket.socket | None:
        """Bind and listen on ``settings.listen``, before anything else starts: a port in use,
        not this host's, or taken by another process between the bind and the listen stops
        the daemon with nothing applied, adopted or launched. None: no HTTP server."""
        if self._open_store is None:
            return None
        from cronduit.http import server  # noqa: PLC0415 - heavy

        try:
            sock = (self._bind or server.bind)(*self.engine.config.settings.listen_address)
        except OSError as error:
            raise self._cannot_listen(error) from None
        try:
            server.listen(sock)
        except OSError as error:
            raise self._cannot_listen(error) from None
        return sock

    def _cannot_listen(self, error: Exception) -> ListenError:
        """The one line a daemon that cannot listen stops with, whatever the reason."""
        why = error.strerror if isinstance(error, OSError) and error.strerror else error
        return ListenError(f"cannot listen on {self.engine.config.settings.listen} "
                           f"(settings.listen): {why}")

    async def _start_http(self, sock: socket.socket | None) -> Acceptor | None:
        """Serve on the listening socket; webhooks and run-now requests enter there."""
        if sock is None or self._open_store is None:
            return None
        from cronduit.http import Gateway, create_app, server  # noqa: PLC0415 - heavy

        acceptor = Acceptor(self._open_store, self.wake, self._log)
        gateway = Gateway(config=lambda: self.engine.config,
                          secret=self._secret, acceptor=acceptor,
                          clock=self.clock, dispatching=lambda: self.engine.dispatch,
                          run_of=self.run_of, workspace=self._workspace_clone)
        try:
            self.http = await server.start(create_app(gateway), sock)
        except Exception as error:  # every failure to come up: the one line, nothing left open
            sock.close()
            acceptor.close()
            raise self._cannot_listen(error) from None
        bound_host, bound_port = self.http.address
        address = f"{_url_host(bound_host)}:{bound_port}"
        self._info = replace(self._info, listen=address)
        try:
            self._heartbeat(self.clock.now())
        except Exception as error:  # a full disk: the loop's first turn writes it again
            if reason_of(error) is None:
                raise
        self._log(f"listening on http://{address}")
        return acceptor

    def _workspace_clone(self, name: str) -> Path | None:
        """The job's workspace clone, where a GitHub check's branch can be confirmed."""
        job = self.engine.config.jobs.get(name)
        if job is None or job.workspace is None:
            return None
        state = StatePaths.of(self.engine.config, self.config_path).root
        return workspace.existing_clone(job.workspace, state, self.config_path.resolve().parent)

    def _warn_unset_secrets(self) -> None:
        """One line for each secret the config names and nothing sets (names only), after
        one for a secrets file the config names and that does not exist."""
        missing = missing_secrets_file(self.engine.config, self.config_path)
        if missing is not None:
            self._log(f"warning: {missing}")
        for unset in unset_secrets(self.engine.config, self.secrets):
            self._log(f"warning: {unset.where} names the secret {unset.name}, which is not set "
                      f"(neither in the secrets file nor in the environment): {unset.effect}")

    def _secret(self, name: str) -> str | None:
        return self.secrets.get(name)  # looked up each time: an apply replaces the values

    async def _off_loop(self, work: Callable[..., T], *args: object) -> T:
        """Run blocking store and process work on the engine's own thread, one piece at a
        time: commits wait for the disk and launches for the kernel, and the loop meanwhile
        keeps answering HTTP requests and watching processes."""
        return await asyncio.get_running_loop().run_in_executor(self._worker, work, *args)

    async def _loop(self) -> None:
        while not self._stopping:
            try:
                due = await self._once()
            except Exception as error:  # the state folder's faults are lived through
                reason = reason_of(error)
                if reason is None:
                    raise
                await self._wait_out(reason)
                continue
            if self.engine.launch_fault is not None:  # the tick committed; launches wait
                await self._wait_out(self.engine.launch_fault)
                continue
            self._outage_over()
            await self._sleep_until(due)

    async def _once(self) -> datetime | None:
        """One turn of the loop: an apply asked for, the heartbeat when due, a tick. Raises
        what the store or the state folder raised; a turn retried does no step twice that
        committed (the engine keeps what it must record until it has)."""
        if self._reload:
            await self._off_loop(self._apply)
            self._reload = False  # only once applied: a failed apply is tried again
        beat_at = asyncio.get_running_loop().time()
        # Paced on the monotonic clock: a wall clock stepped back must not stop the beats.
        if self._last_beat is None or beat_at - self._last_beat >= HEARTBEAT_EVERY.seconds:
            await self._off_loop(self._heartbeat, self.clock.now())
            self._last_beat = beat_at
        if beat_at - self._last_trim >= TRIM_EVERY:
            await self._off_loop(release_free_memory)
            self._last_trim = beat_at
        self._wake.clear()  # before the tick: a wake that comes during it is kept
        due = await self._off_loop(self.engine.tick, self.clock.now())
        self._ticked.set()
        self._ticked = asyncio.Event()
        if self.engine.dispatch and self._notifications is not None:
            self._notifications.kick()
        return due

    async def _retrying(self, work: Callable[[], T]) -> T:
        """``work`` off the loop, tried again after each state-folder fault until it is done;
        :class:`_StoppedWaiting` if the daemon is asked to stop meanwhile."""
        while True:
            try:
                done = await self._off_loop(work)
            except Exception as error:
                reason = reason_of(error)
                if reason is None:
                    raise
                if self._stopping:
                    raise _StoppedWaiting from error
                await self._wait_out(reason)
                continue
            self._outage_over()
            return done

    async def _wait_out(self, reason: str) -> None:
        """Count a failed turn: a line if this begins (or changes) an outage, then a pause
        that grows with the outage; a wake (a trigger accepted, a stop) cuts it short."""
        loop = asyncio.get_running_loop()
        step = outage.failed(self._outage, reason, loop.time(), outage.ENGINE)
        self._outage = step.outage
        if step.line is not None:
            self._log(step.line)
        assert self._outage is not None
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout=outage.retry_in(self._outage))

    def _outage_over(self) -> None:
        step = outage.succeeded(self._outage, asyncio.get_running_loop().time(), outage.ENGINE)
        self._outage = step.outage
        if step.line is not None:
            self._log(step.line)

    async def run_of(self, delivery_id: str, timeout: float) -> str | None:
        """The run that consumed a delivery, once the engine has routed it (waiting up to
        ``timeout`` seconds); None when it waits behind other work or time ran out."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            try:
                event = await self._off_loop(self._event, delivery_id)
            except Exception as error:  # accepted already: the answer is "waiting", not 5xx
                if reason_of(error) is None:
                    raise
                return None
            if event is not None and event.state == "consumed":
                return event.run_id
            if event is None or event.state != "new" or loop.time() >= deadline:
                return None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ticked.wait(), deadline - loop.time())

    def _event(self, delivery_id: str) -> Event | None:
        with self.store.transaction() as tx:
            return tx.event_by_delivery(delivery_id)

    async def _sleep_until(self, due: datetime | None) -> None:
        seconds = MAX_SLEEP
        if due is not None:
            seconds = min(seconds, max(0.0, (due - self.clock.now()).total_seconds()))
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        with contextlib.suppress(TimeoutError):  # the usual way out: nothing woke us early
            await asyncio.wait_for(self._wake.wait(), timeout=seconds)

    def _heartbeat(self, now: datetime, *, stopped: bool = False) -> None:
        self._info = replace(self._info, heartbeat_at=now.isoformat(), stopped=stopped)
        write_heartbeat(self.store, self._info)

    def _stop(self) -> None:
        self._stopping = True
        self.wake()

    def _ask_reload(self) -> None:
        self._reload = True
        self.wake()

    def _apply(self) -> None:
        """Reload the config file, all of it or none of it: a file that cannot be read, does
        not validate or cannot be applied is refused, with its reasons, and the running
        config stays. Only a fault of the state folder (a full disk) is raised, with nothing
        applied, for the loop to try the apply again once the store can be written."""
        now = self.clock.now()
        try:
            text, new, secrets = self._read_config()
            lines = self._apply_config(new, text, now)
        except _Refused as refused:
            self._refuse(now, refused)
            return
        self.secrets = secrets
        self._config_text = text
        for line in lines:
            self._log(f"apply: {line}")
        self._warn_unset_secrets()

    def _read_config(self) -> tuple[str, Config, Mapping[str, str]]:
        """The file's text, its config and the secrets it names; what the file holds is
        refused, never retried: trying again would not mend it."""
        try:
            text = self.config_path.read_bytes().decode("utf-8")
            new = load_config(text, str(self.config_path))
        except ConfigErrors as errors:
            raise _Refused("the config has errors", str(errors).splitlines()) from None
        except UnicodeDecodeError as error:  # where, as check says it
            data = error.object
            line = data.count(b"\n", 0, error.start) + 1
            column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
            raise _Refused("the config has errors",
                           [f"{self.config_path}:{line}:{column}: not UTF-8 text"]) from None
        except Exception as error:
            raise _Refused(f"cannot read {self.config_path}: {_why(error)}") from None
        try:
            return text, new, self._load_secrets(new)
        except SecretsError as error:
            raise _Refused("the secrets file has errors", str(error).splitlines(),
                           stays="the running config and secrets stay") from None
        except Exception as error:
            raise _Refused(f"cannot read the secrets (settings.secrets_file): {_why(error)}"
                           ) from None

    def _apply_config(self, new: Config, text: str, now: datetime) -> list[str]:
        """Apply ``new`` and record it in one transaction; what it changed."""
        try:
            lines = config_changes(self.engine.config, new)

            def record(tx: Transaction, engine_lines: list[str]) -> None:
                lines.extend(engine_lines)
                self._write_apply(tx, now, ok=True, lines=lines or [NO_CHANGES], text=text)

            self.engine.apply(new, now, record)
        except Exception as error:
            if reason_of(error) is not None:
                raise  # the store: the loop waits it out and applies again
            raise _Refused(f"cannot apply the config: {_why(error)}") from error
        return lines or [NO_CHANGES]

    def _refuse(self, now: datetime, refused: _Refused) -> None:
        """Answer ``cronduit apply`` with the refusal, then log it: one line, and one per
        error of the file."""
        with self.store.transaction() as tx:
            self._write_apply(tx, now, ok=False, lines=refused.errors or [refused.why],
                              text=None)
        self._log(f"apply refused: {refused.why}; {refused.stays}")
        for line in refused.errors:
            self._log(f"apply refused: {line}")

    def _write_apply(self, tx: Transaction, now: datetime, *, ok: bool, lines: list[str],
                     text: str | None) -> None:
        """Answer ``cronduit apply`` and write the audit entry, naming the operator that
        command left in ``apply_asked`` (a bare SIGHUP has none: ``signal``); an apply that
        was applied keeps its ``text`` as the config in force."""
        if ok and text is not None:
            write_applied(tx, text, str(self.config_path), now)
        tx.set_meta("last_apply", json.dumps({"at": now.isoformat(), "ok": ok,
                                              "lines": lines}))
        asked = json.loads(tx.get_meta(APPLY_ASKED) or "{}")
        tx.set_meta(APPLY_ASKED, "{}")
        audit.record(tx, "apply", asked.get("operator") or "signal", now, ok=ok,
                     changes=audit.apply_lines(lines))


def _why(error: Exception) -> str:
    """An error in one line: its own words, else its kind."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    if isinstance(error, UnicodeDecodeError):  # its words would show a byte of the file
        return "not UTF-8 text"
    words = " ".join(str(error).split())
    return f"{type(error).__name__}: {words}" if words else type(error).__name__


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
