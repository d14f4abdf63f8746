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
import os
import signal
import socket
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from cronduit.clock import SourceClock
from cronduit.core import outage
from cronduit.core.config.model import Config
from cronduit.core.enums import EventState
from cronduit.core.secret_names import unset_secrets
from cronduit.core.text import clean
from cronduit.core.timespec import format_utc
from cronduit.daemon import edges
from cronduit.daemon.edges import Acceptor, NotificationSender
from cronduit.daemon.heartbeat import (
    HEARTBEAT_EVERY,
    DaemonInfo,
    own_start_time,
    write_heartbeat,
)
from cronduit.daemon.lease import NodeLease
from cronduit.daemon.memory import TRIM_EVERY, freeze_long_lived, release_free_memory
from cronduit.daemon.metrics import GAUGES_EVERY, DaemonMetrics
from cronduit.daemon.reload import Reloader
from cronduit.engine import Engine
from cronduit.faults import reason_of
from cronduit.ports import Clock, Event, LeaseLost, NodeTaken, Runner, Store
from cronduit.secrets import missing_secrets_file

T = TypeVar("T")

if TYPE_CHECKING:
    from cronduit.http.server import HttpServer

MAX_SLEEP = 1.0
"""Seconds between wall-clock checks, whatever is due: also how often a daemon sharing the
state looks for work other daemons accepted, when no notification woke it sooner."""
NOTIFY_EVERY = MAX_SLEEP
"""Seconds between the notification sender's looks for due notifications when no tick
queued one: retries come due (5 s and more apart), and a daemon sharing the store may queue
some. A tick that queued notifications has them looked for at once."""
SWEEP_EVERY = 2.0
"""Seconds between looks for nodes whose lease expired, where daemons share the state: a
dead daemon's runs are taken over within its lease and this. A look is one indexed read of
the few rows of ``nodes``; every 2 s, a daemon frozen inside a transaction (whose row
lock keeps the sweep off its node until the server ends its session, 5 s after its last
statement) is swept within 2 s of that, not 5."""


class _StoppedWaiting(Exception):
    """Asked to stop while start-up waited for the state folder to be writable."""


class Daemon:
    """One ``cronduit serve``."""

    def __init__(self, config_path: Path, config: Config, store: Store, runner: Runner,
                 clock: Clock, *, dry_run: bool, log: Callable[[str], None],
                 checkpoint: Callable[[str], None] | None = None,
                 secrets: Callable[[Config], Mapping[str, str]] = lambda _: {},
                 open_store: Callable[[], Store] | None = None, config_text: str = "",
                 bind: Callable[[str, int], socket.socket] | None = None,
                 node: str = "local", lease: NodeLease | None = None,
                 metrics: DaemonMetrics | None = None) -> None:
        self.config_path = config_path
        self.metrics = metrics or DaemonMetrics()
        """What ``/metrics`` serves: fed by the engine, its gauges read by this loop."""
        self._last_gauges: float | None = None
        """When the gauges were last read from the store (the loop's clock)."""
        self._rendering_ahead: asyncio.Future[int] | None = None
        """The metrics' text of what changed, being rendered ahead of the next scrape."""
        self.store = store
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
        self.lease = lease
        """This daemon's node lease where other daemons share the store; None: alone."""
        self._lease_lost = False
        self._said_lost = False
        """Whether the loss of the lease under way was logged (once per loss)."""
        self._lease_outage: outage.Outage | None = None
        self.engine = Engine(config, store, runner, dispatch=not dry_run, log=self._log,
                             checkpoint=checkpoint or (lambda _: None), node=node,
                             shared=lease is not None, observer=self.metrics)
        self.reloader = Reloader(config_path, store, self.engine, config_text, secrets,
                                 self._log)
        self._wake = asyncio.Event()
        self._stopping = False
        self._reload = False
        self._outage: outage.Outage | None = None
        """The state folder's outage under way (a full or read-only disk), if any."""
        self._last_beat: float | None = None
        self._last_trim = 0.0
        self._last_notify: float | None = None
        """When the notification sender last began a pass (the loop's clock)."""
        self._notify_owed = False
        """Whether notifications were committed that no pass has begun since."""
        self._last_sweep = 0.0
        """When lost nodes were last swept for (the loop's clock)."""
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
            if self.lease is not None:
                await self._retrying(self.lease.take)
                self._log(f"node {self.lease.name}: lease taken (epoch {self.lease.epoch}, "
                          f"renewed every {self.lease.every:g}s)")
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
        keeping = hinting = None
        if self.lease is not None:
            keeping = asyncio.create_task(self._keep_lease())
            loop = asyncio.get_running_loop()

            def hint() -> None:  # from the listener's thread
                loop.call_soon_threadsafe(self.wake)

            hinting = self.lease.membership.listen(hint)
        try:
            await self._loop()
        finally:
            if keeping is not None:
                keeping.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await keeping
            if hinting is not None:
                await asyncio.to_thread(hinting.close)
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
        await self._retrying(lambda: self.reloader.record_start(changes, self.clock.now()))
        await self._retrying(lambda: self.engine.start(self.clock.now()))

    def _listen(self) -> socket.socket | None:
        """Bind and listen before anything else starts; None: no HTTP server."""
        if self._open_store is None:
            return None
        sock = edges.listen(self.engine.config, self._bind)
        if self.lease is not None:  # the node's row says the port bound (the config's may be 0)
            self.lease.claim = replace(self.lease.claim, listen=edges.bound_address(sock))
        return sock

    async def _start_http(self, sock: socket.socket | None) -> Acceptor | None:
        """Serve on the listening socket, then say where in the heartbeat and the log."""
        if sock is None or self._open_store is None:
            return None
        wiring = edges.HttpWiring(
            config_path=self.config_path, open_store=self._open_store,
            config=lambda: self.engine.config, secret=self._secret,
            dispatching=lambda: self.engine.dispatch, run_of=self.run_of, wake=self.wake,
            clock=self.clock, log=self._log, metrics=self.metrics.render,
            node=None if self.lease is None else self.lease.name,
            nodes=None if self.lease is None else self.lease.membership.nodes)
        self.http, acceptor = await edges.start_http(wiring, sock)
        address = edges.bound_address(sock)
        self._info = replace(self._info, listen=address)
        try:
            self._heartbeat(self.clock.now())
        except Exception as error:  # a full disk: the loop's first turn writes it again
            if reason_of(error) is None:
                raise
        self._log(f"listening on http://{address}")
        freeze_long_lived()  # the config, the schedules and the HTTP app, all made by now
        return acceptor

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
            except LeaseLost as error:  # a fenced transaction wrote nothing
                self._lease_lost = True
                self._log(f"warning: {error}")
                continue
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
        if self._rendering_ahead is not None:  # nothing left running at the stop
            await self._rendering_ahead

    async def _once(self) -> datetime | None:
        """One turn of the loop: an apply asked for, the heartbeat when due, a tick. Raises
        what the store or the state folder raised; a turn retried does no step twice that
        committed (the engine keeps what it must record until it has)."""
        # First: a wake (a SIGHUP, a trigger accepted) that comes at any point of the turn is
        # kept for the next one, so nothing asked during a heartbeat waits a whole sleep.
        self._wake.clear()
        if self.lease is not None and (self._lease_lost or not self.lease.starts_runs()):
            await self._off_loop(self._regain_lease)
            if self._lease_lost:
                return None
        if isinstance(self.clock, SourceClock):  # the store's: every due time is its
            await self._off_loop(self.clock.refresh)
        if self._reload:
            await self._off_loop(self._apply)
            self._reload = False  # only once applied: a failed apply is tried again
        beat_at = asyncio.get_running_loop().time()
        # Paced on the monotonic clock: a wall clock stepped back must not stop the beats.
        if self._last_beat is None or beat_at - self._last_beat >= HEARTBEAT_EVERY.seconds:
            await self._off_loop(self._heartbeat, self.clock.now())
            self._last_beat = beat_at
        if self.lease is not None and beat_at - self._last_sweep >= SWEEP_EVERY:
            self.engine.sweep_due = True  # the tick below sweeps nodes whose lease expired
            self._last_sweep = beat_at
        if beat_at - self._last_trim >= TRIM_EVERY:
            await self._off_loop(release_free_memory)
            await self._off_loop(self.engine.prune_executions, self.clock.now())
            self._last_trim = beat_at
        if self._last_gauges is None or beat_at - self._last_gauges >= GAUGES_EVERY:
            await self._off_loop(self.metrics.refresh, self.store, self.engine.config)
            self._last_gauges = beat_at
        due = await self._off_loop(self.engine.tick, self.clock.now())
        if self.metrics.pending():  # the gauges that moved, what the tick counted
            self._render_metrics_ahead()
        self._ticked.set()
        self._ticked = asyncio.Event()
        if self.engine.dispatch and self._notifications is not None:
            self._kick_notifications(self._notifications)
        return due

    def _kick_notifications(self, sender: NotificationSender) -> None:
        """A pass of the notification sender when the engine committed notifications (or
        one before could not begin, a pass being under way), and every
        :data:`NOTIFY_EVERY` seconds. Not after every tick: a pass begins with a transaction
        on the engine's thread, which the next tick, a durable run's next step, waited for."""
        self._notify_owed = self._notify_owed or self.engine.take_notified() > 0
        at = asyncio.get_running_loop().time()
        if (not self._notify_owed and self._last_notify is not None
                and at - self._last_notify < NOTIFY_EVERY):
            return
        if sender.kick():
            self._notify_owed = False
            self._last_notify = at

    def _render_metrics_ahead(self) -> None:
        """Render the metrics that changed on a thread of their own (neither the event loop
        nor the engine's thread), so that a scrape renders only what changed since: at
        most a turn's worth (a second), not every job's runs since the last scrape. One
        render at a time; what changes meanwhile waits for the next turn."""
        ahead = self._rendering_ahead
        if self.http is not None and (ahead is None or ahead.done()):
            self._rendering_ahead = asyncio.get_running_loop().run_in_executor(
                None, self.metrics.write_changes)

    async def _keep_lease(self) -> None:
        """Renew the node's lease every third of it, on a thread of its own (a long commit
        of the engine's must not hold a renewal up). A renewal that fails logs a line as
        the failures begin and one as they end; one refused marks the lease lost for the
        loop to take again."""
        lease = self.lease
        assert lease is not None
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(lease.every)
            if self._lease_lost:
                continue  # the loop is taking the node again
            try:
                held = await asyncio.to_thread(lease.renew)
            except Exception as error:
                reason = reason_of(error)
                if reason is None:
                    raise
                step = outage.failed(self._lease_outage, reason, loop.time(), outage.LEASE)
                self._lease_outage = step.outage
                if step.line is not None:
                    self._log(f"node {lease.name}: {step.line}")
                continue
            step = outage.succeeded(self._lease_outage, loop.time(), outage.LEASE)
            self._lease_outage = step.outage
            if step.line is not None:
                self._log(f"node {lease.name}: {step.line}")
            if not held:
                self._lease_lost = True
                self.wake()

    def _regain_lease(self) -> None:
        """The lease is lost or about to be: no run starts. Renew it if the store still
        holds it for this epoch; else take the node again (a new epoch) and adopt what is
        still this node's, as after a restart. Raises what the store raised."""
        lease = self.lease
        assert lease is not None
        if not self._lease_lost and lease.renew():
            return
        self._lease_lost = True
        if not self._said_lost:
            self._said_lost = True
            self._log(f"warning: node {lease.name}: its lease (epoch {lease.epoch}) was lost: "
                      "it lapsed, by the database's clock, or another daemon swept the node; "
                      "no runs start here until the node is taken again")
        self.engine.forget_launches()
        try:
            lease.take()
        except NodeTaken as error:
            self._log(f"warning: {error}; no runs start here until it is free")
            return
        self._lease_lost = self._said_lost = False
        self._log(f"node {lease.name}: lease taken again (epoch {lease.epoch}); runs going "
                  "here past the old lease were ended by the supervisor")
        self.engine.start(self.clock.now())

    @property
    def secrets(self) -> Mapping[str, str]:
        """Secret values by name, as the last apply read them."""
        return self.reloader.secrets

    def _apply(self) -> None:
        if self.reloader.apply(self.clock.now()):
            self._warn_unset_secrets()
            freeze_long_lived()

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
            if event is not None and event.state == EventState.CONSUMED:
                return event.run_id
            if event is None or event.state != EventState.NEW or loop.time() >= deadline:
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
            async with asyncio.timeout(seconds):  # no task of its own, as wait_for makes
                await self._wake.wait()

    def _heartbeat(self, now: datetime, *, stopped: bool = False) -> None:
        self._info = replace(self._info, heartbeat_at=now.isoformat(), stopped=stopped)
        write_heartbeat(self.store, self._info, shared=self.lease is not None)

    def _stop(self) -> None:
        self._stopping = True
        self.wake()

    def _ask_reload(self) -> None:
        self._reload = True
        self.wake()
