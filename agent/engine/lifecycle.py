"""One engine's life under supervision: launch, wait until ready, put the live values back, watch,
count failures, restart with backoff, and wait out a full state disk.

``EngineLife`` is the supervisor's base (``agent.engine.supervisor`` adds the commands: begin, start,
restart, stop). Liveness is polled (every ``poll_s``) rather than waited for, because an adopted engine
is not our child and cannot be waited on; a child we forked is reaped through ``Popen.poll``.

A full state disk is not the engine's failure: a start that cannot be made for want of room, or an
engine that dies before it is ready while there is none, is not counted toward the crash-loop limit;
the supervisor waits for room (``engine.waiting_for_disk``) and starts again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from agent.engine.adopt import Origin
from agent.engine.failure import PortHolder, crash_words, port_holder, read_log_since, startup_error
from agent.engine.faults import fault_point
from agent.engine.keeper import RecordKeeper
from agent.engine.launcher import launch
from agent.engine.logfile import EngineLog
from agent.engine.policy import RestartPolicy
from agent.engine.probe import is_ready
from agent.engine.record import EngineKind
from agent.engine.running import RunningEngine, terminate
from agent.engine.spec import EngineSpec
from agent.engine.state_disk import StateDisk, is_full
from agent.profile import Profile
from agent.sglang.live_state import relaunch_profile
from agent.wire.snapshot import EngineState

log = logging.getLogger(__name__)

Emit = Callable[[str, str, dict[str, Any]], None]
"""``emit(name, message, data)``: publish an engine event (kind "engine") on the agent's stream."""

RestoreLive = Callable[[str, Profile, Profile, Origin], Awaitable[Profile]]
"""``restore_live(url, launched, running, origin)``: put ``running``'s live values on the engine at
``url``, launched with ``launched``, once it answers (``origin`` "adopted": an engine a previous agent
left in force, whose live values are read and reconciled, never overwritten); returns the running
profile in force."""

IO_RETRY_S = (1.0, 2.0, 5.0, 10.0, 30.0)  # after an I/O error supervision goes on after these pauses
DISK_POLL_S = 1.0

TERM_GRACE_S: dict[EngineKind, float] = {"sim": 10.0, "sglang": 30.0}
"""SIGTERM to SIGKILL; SGLang may be mid CUDA-graph capture and needs longer."""

STARTUP_TIMEOUT_S: dict[EngineKind, float] = {"sim": 60.0, "sglang": 3600.0}
"""Until ready; Kimi K2.5 loads ~600 GB of weights and may JIT kernels on a first start."""


class PortHeld(OSError):
    """The engine's port is held by a process this agent did not start: starting again cannot help."""

    def __init__(self, holder: PortHolder) -> None:
        super().__init__(holder.describe())
        self.holder = holder


class EngineLife:
    """The loop of one engine's life; the state it reads and writes is the supervisor's."""

    kind: EngineKind
    log: EngineLog
    http: httpx.AsyncClient
    spec_for: Callable[[Profile], EngineSpec]
    emit: Emit
    policy: RestartPolicy
    poll_s: float
    state: EngineState
    profile: Profile | None
    """What runs, live values included (what the operator sees and changes)."""
    launched: Profile | None
    """What the engine process was launched with: what it has built."""
    restore_live: RestoreLive
    disk: StateDisk
    keeper: RecordKeeper
    engine: RunningEngine | None
    failures: int
    last_startup_s: float | None
    restarts: int
    last_error: dict[str, Any] | None
    """Why the last start failed (the log's exception and frame, or who holds the port); None once ready."""
    _redact: Callable[[list[str]], list[str]]
    _log_offset: int
    _replace: RunningEngine | None
    _state_changed: asyncio.Event

    @property
    def pid(self) -> int | None:
        return self.engine.pid if self.engine else None

    @property
    def url(self) -> str | None:
        return self.engine.url if self.engine else None

    def _set_state(self, state: EngineState) -> None:
        if state != self.state:
            log.info("engine state %s -> %s", self.state, state)
        self.state = state
        changed, self._state_changed = self._state_changed, asyncio.Event()
        changed.set()

    def update_running_profile(self, profile: Profile) -> None:
        """A live change was applied: record it so a crash restart and a reattach keep it (the launch
        profile, what the process has built, stays as it was)."""
        self.profile = profile
        self.keeper.live(self.pid, profile, pending=False)

    def _launch(self, profile: Profile, running: Profile) -> tuple[RunningEngine, EngineSpec]:
        spec = self.spec_for(profile)
        holder = port_holder(spec.host, spec.port) if spec.kind == "sglang" else None
        if holder is not None:
            raise PortHeld(holder)
        engine, self._log_offset, record = launch(spec, profile, running, self.log, self.disk)
        self.keeper.put(record)
        if self.restarts:
            fault_point("restart_launched")
        return engine, spec

    async def _wait_ready(self, engine: RunningEngine, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if engine.exited()[0]:
                return False
            if await is_ready(self.http, engine.url):
                return True
            await asyncio.sleep(self.poll_s)
        return False

    async def _wait_exit(self, engine: RunningEngine) -> int | None:
        while True:
            done, code = engine.exited()
            if done:
                return code
            await asyncio.sleep(self.poll_s)

    async def _lifecycle(self, adopted: RunningEngine | None, origin: Origin) -> None:
        """Supervise; an I/O error (a full state disk) never ends it: it starts again after a pause,
        with the engine that runs, and comes back by itself once the disk does."""
        tries = 0
        while True:
            try:
                await self._supervise(adopted, origin)
                return
            except asyncio.CancelledError:
                raise
            except OSError as exc:
                log.exception("engine supervision met an I/O error")
                pause = IO_RETRY_S[min(tries, len(IO_RETRY_S) - 1)]
                tries += 1
                said = f"Supervision met an I/O error ({exc.strerror or exc}); it goes on in {pause:.0f} s"
                self.emit("engine.supervisor_error", said, {"retry_s": pause})
                self.disk.failed("the engine supervision", exc)
                await asyncio.sleep(pause)
                self.disk.ok("the engine supervision")
                self.engine = adopted = self.engine if self.engine and not self.engine.exited()[0] else None
                if adopted is not None and self.state == "ready":
                    origin = "adopted"  # it kept its values while supervision paused
            except Exception as exc:  # a bug here must not leave the engine silently unwatched
                log.exception("engine supervision failed")
                self._set_state("unknown")
                self.emit(
                    "engine.supervisor_error",
                    f"The agent stopped watching the engine after an internal error ({type(exc).__name__}: "
                    f"{exc}); restart the agent to reattach",
                    {},
                )
                return

    async def _start_one(self) -> tuple[RunningEngine | None, bool, bool]:
        """Launch the engine and wait until it is ready: (the engine, ready, the start failed for want
        of room on the state disk)."""
        assert self.profile is not None and self.launched is not None
        self._set_state("starting" if self.failures == 0 else "restarting")
        # The operator's live threshold goes into the launch itself: no request runs on a value
        # nobody set while it waits to be put back (a crash restart, a restart finished).
        self.launched = relaunch_profile(self.launched, self.profile)
        try:
            engine, spec = self._launch(self.launched, self.profile)
        except PortHeld:
            raise
        except OSError as exc:
            if is_full(exc) or not self.disk.has_room():
                self.disk.failed("the engine start", exc)
                return None, False, True
            self.emit(
                "engine.start_failed",
                f"The engine could not be started: {exc}; failure {self.failures + 1} of "
                f"{self.policy.crash_loop_limit}",
                {"failures": self.failures + 1},
            )
            return None, False, False
        self.disk.ok("the engine start")
        self.engine = engine
        self.emit(
            "engine.starting",
            f"Started the {engine.kind} engine (pid {engine.pid}); waiting until it is ready",
            {"pid": engine.pid, "url": engine.url},
        )
        t0 = time.monotonic()
        ready = await self._wait_ready(engine, spec.startup_timeout_s)
        if ready:
            self.last_startup_s = time.monotonic() - t0
        elif not engine.exited()[0]:
            self.emit(
                "engine.start_timeout",
                f"The engine was not ready within {spec.startup_timeout_s:.0f} s; stopping it",
                {"pid": engine.pid},
            )
            await self._terminate(engine)
        return engine, ready, not ready and not self.disk.has_room()

    async def _wait_adopted(self, engine: RunningEngine) -> bool:
        """Adopted: it may still be loading (the previous agent died during start-up)."""
        timeout = STARTUP_TIMEOUT_S[engine.kind]
        ready = await self._wait_ready(engine, timeout)
        if not ready and not engine.exited()[0]:
            self.emit(
                "engine.start_timeout",
                f"The adopted engine was not ready within {timeout:.0f} s; stopping it",
                {"pid": engine.pid},
            )
            await self._terminate(engine)
        return ready

    async def _supervise(self, adopted: RunningEngine | None, origin: Origin) -> None:
        engine = adopted
        if self._replace is not None:  # the restart a previous agent began: its engine goes first
            old, self._replace = self._replace, None
            await self._terminate(old)
        while True:
            assert self.profile is not None and self.launched is not None
            no_room = False
            if engine is None:
                try:
                    engine, ready, no_room = await self._start_one()
                except PortHeld as held:
                    self._port_held(held.holder)
                    return
            else:
                ready = await self._wait_adopted(engine)
            if engine is not None and ready:
                self.last_error = None
                restored = await self.restore_live(engine.url, self.launched, self.profile, origin)
                self.update_running_profile(restored)
                origin = "launched"  # whatever comes next is launched by this agent
                self._set_state("ready")
                self.emit(
                    "engine.ready",
                    f"The engine is ready (pid {engine.pid})",
                    {"pid": engine.pid, "url": engine.url, "startup_s": self.last_startup_s},
                )
                ready_at = time.monotonic()
                code = await self._wait_exit(engine)
                if time.monotonic() - ready_at >= self.policy.healthy_reset_s:
                    self.failures = 0
            else:
                code = engine.exited()[1] if engine is not None else None
            why = self._startup_error() if engine is not None and not ready else None
            if not no_room:
                self.failures += 1
                self._set_state("crashed")
            if engine is not None:
                counted = (
                    "not counted: the state disk is full"
                    if no_room
                    else f"failure {self.failures} of {self.policy.crash_loop_limit}"
                )
                self.emit(
                    "engine.crashed",
                    crash_words(engine.pid, code, ready, why, counted),
                    {"pid": engine.pid, "exit_code": code, "failures": self.failures, "error": why},
                )
            self.keeper.restarting(self.launched, self.profile)
            self.engine = None
            engine = None
            if no_room:
                await self._wait_for_room()
                continue
            if self.failures >= self.policy.crash_loop_limit:
                self.keeper.clear()
                self._set_state("crash_loop")
                self.emit(
                    "engine.crash_loop",
                    f"The engine failed {self.failures} times in a row; not restarting it. Read the engine "
                    "log, fix the profile, then start the engine again",
                    {"failures": self.failures},
                )
                return
            delay = self.policy.delay(self.failures)
            self._set_state("restarting")
            self.emit(
                "engine.restarting",
                f"Restarting the engine in {delay:.1f} s (attempt {self.failures + 1})",
                {"delay_s": delay, "failures": self.failures},
            )
            self.restarts += 1
            await asyncio.sleep(delay)

    async def _wait_for_room(self) -> None:
        """A start the full state disk stopped is the disk's failure, not the profile's: wait for room
        (state "restarting", uncounted), then start again."""
        self._set_state("restarting")
        self.emit(
            "engine.waiting_for_disk",
            "The engine cannot be started while the state disk is full; it starts once there is room "
            "(not counted toward the crash-loop limit)",
            {"failures": self.failures},
        )
        while not self.disk.has_room():
            await asyncio.sleep(DISK_POLL_S)
        self.restarts += 1

    def _startup_error(self) -> dict[str, Any] | None:
        """The engine log's account of a start that failed, redacted (kept for ``agent status``)."""
        found = startup_error(read_log_since(self.log.path, self._log_offset))
        if found is not None:
            self.last_error = found.as_status(self._redact, str(self.log.path))
        return self.last_error if found is not None else None

    def _port_held(self, holder: PortHolder) -> None:
        """One event and a stop: another start would find the same holder."""
        self.last_error = holder.as_status()
        self.engine = None
        self._set_state("stopped")
        self.emit("engine.port_held", self.last_error["summary"], dict(self.last_error["port_holder"]))

    async def _terminate(self, engine: RunningEngine) -> None:
        await terminate(engine, TERM_GRACE_S[engine.kind], self.poll_s, self.emit)
