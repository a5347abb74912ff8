"""The engine supervisor: one engine process per agent, started, watched, restarted, drained, stopped.

The engine runs in its own session and process group (``start_new_session=True``), so a signal to the group
reaches SGLang's TP workers too, and so the agent's own death (or its terminal's) does not take the engine
down. Its pid, pgid, /proc start time and argv hash go to a state file; a restarted agent adopts the engine it
finds there instead of starting a second one, and never signals a pid whose start time or command line no
longer match (pid reuse).

Liveness is polled (every ``poll_s``) rather than waited for, because an adopted engine is not our child and
cannot be waited on; a child we forked is reaped through ``Popen.poll``.

Two profiles are kept: ``launched``, what the engine process was started with (what it has built), and
``profile``, that with the live values applied since. A crash restart launches ``launched`` again, and
``restore_live`` puts the live values back before the engine is announced ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from agent.engine.adopt import adopt_recorded
from agent.engine.failure import PortHolder, port_holder, port_in_use, read_log_since, startup_error
from agent.engine.launcher import launch, record_writer
from agent.engine.logfile import EngineLog
from agent.engine.policy import RestartPolicy
from agent.engine.probe import is_ready
from agent.engine.record import EngineKind, clear_record, read_record
from agent.engine.running import RunningEngine, drain, terminate, unknown_running_requests
from agent.engine.spec import EngineSpec
from agent.engine.state_disk import StateDisk, is_full
from agent.profile import Profile, dump_profile
from agent.wire.snapshot import EngineState

log = logging.getLogger(__name__)

Emit = Callable[[str, str, dict[str, Any]], None]
"""``emit(name, message, data)``: publish an engine event (kind "engine") on the agent's stream."""

RestoreLive = Callable[[str, Profile, Profile, bool], Awaitable[Profile]]
"""``restore_live(url, launched, running, adopted)``: put ``running``'s live values on the engine at
``url``, launched with ``launched``, once it answers (``adopted``: an engine a previous agent left,
whose live values are read and reconciled, never overwritten); returns the running profile in force."""

IO_RETRY_S = (1.0, 2.0, 5.0, 10.0, 30.0)  # after an I/O error supervision goes on after these pauses


async def _nothing_to_restore(url: str, launched: Profile, running: Profile, adopted: bool) -> Profile:
    return running


TERM_GRACE_S: dict[EngineKind, float] = {"sim": 10.0, "sglang": 30.0}
"""SIGTERM to SIGKILL; SGLang may be mid CUDA-graph capture and needs longer."""

STARTUP_TIMEOUT_S: dict[EngineKind, float] = {"sim": 60.0, "sglang": 3600.0}
"""Until ready; Kimi K2.5 loads ~600 GB of weights and may JIT kernels on a first start."""

__all__ = ["STARTUP_TIMEOUT_S", "TERM_GRACE_S", "PortHeld", "RunningEngine", "Supervisor", "port_in_use"]


class PortHeld(OSError):
    """The engine's port is held by a process this agent did not start: starting again cannot help."""

    def __init__(self, holder: PortHolder) -> None:
        super().__init__(holder.describe())
        self.holder = holder


class Supervisor:
    def __init__(
        self,
        *,
        kind: EngineKind,
        record_path: Path,
        engine_log: EngineLog,
        http: httpx.AsyncClient,
        spec_for: Callable[[Profile], EngineSpec],
        emit: Emit,
        policy: RestartPolicy | None = None,
        running_requests: Callable[[], Awaitable[int | None]] | None = None,
        drain_hooks: list[Callable[[], Awaitable[None]]] | None = None,
        poll_s: float = 0.2,
        redact: Callable[[list[str]], list[str]] | None = None,
        restore_live: RestoreLive = _nothing_to_restore,
        disk: StateDisk | None = None,
    ) -> None:
        self.kind: EngineKind = kind
        self.record_path = record_path
        self.log = engine_log
        self.http = http
        self.spec_for = spec_for
        self.emit = emit
        self.policy = policy or RestartPolicy()
        self.running_requests = running_requests or unknown_running_requests
        self.drain_hooks = drain_hooks if drain_hooks is not None else []
        self.poll_s = poll_s
        self.state: EngineState = "stopped"
        self.profile: Profile | None = None
        """What runs, live values included (what the operator sees and changes)."""
        self.launched: Profile | None = None
        """What the engine process was launched with: what it has built."""
        self.restore_live = restore_live
        self.disk = disk or StateDisk(str(record_path.parent))
        self.engine: RunningEngine | None = None
        self.failures = 0
        self.last_startup_s: float | None = None
        self.restarts = 0
        self.last_error: dict[str, Any] | None = None
        """Why the last start failed (the log's exception and frame, or who holds the port); None once ready."""
        self._redact = redact or (lambda lines: lines)
        self._log_offset = 0
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._state_changed = asyncio.Event()

    # ---- what the rest of the agent reads -------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self.engine.pid if self.engine else None

    @property
    def url(self) -> str | None:
        return self.engine.url if self.engine else None

    # ---- commands ---------------------------------------------------------------------------------

    async def begin(self, profile: Profile) -> None:
        """Adopt the engine a previous agent left running, or start one for ``profile``."""
        async with self._lock:
            adopted = adopt_recorded(self.record_path, self.emit, profile)
            if adopted is not None:
                engine, launched = adopted.engine, adopted.launched
                self.kind, self.engine = engine.kind, engine
                self.profile, self.launched = adopted.running, launched
                self.emit(
                    "engine.reattached",
                    f"Reattached to the running {engine.kind} engine (pid {engine.pid}); it was not restarted",
                    {"pid": engine.pid, "url": engine.url},
                )
                if dump_profile(launched) != dump_profile(profile):
                    self.emit(
                        "engine.profile_differs",
                        "The running engine was launched with a different profile than --profile; "
                        "apply the profile to restart it with the new settings",
                        {"running": launched.identity.name, "given": profile.identity.name},
                    )
            else:
                self.profile = self.launched = profile
            self.failures = 0
            self._task = asyncio.create_task(self._lifecycle(self.engine), name="engine-lifecycle")

    async def start(self) -> bool:
        """Start again after a stop or a crash loop; False when it already runs."""
        async with self._lock:
            if self._task is not None and not self._task.done():
                return False
            self.failures = 0
            self._set_state("starting")
            self._task = asyncio.create_task(self._lifecycle(None), name="engine-lifecycle")
            return True

    async def restart(
        self, profile: Profile | None, *, drain_timeout_s: float, launch: Profile | None = None
    ) -> None:
        """Drain and stop the engine, then start it with ``profile`` (or the same one).

        ``launch`` is what to launch when it differs from ``profile`` (a live value that cannot be
        launched as such); ``profile``'s live values are then put back once the engine is ready.
        """
        async with self._lock:
            await self._stop_locked(drain_timeout_s)
            if profile is not None:
                self.profile, self.launched = profile, launch or profile
            self.failures = 0
            self.restarts += 1
            self._set_state("starting")
            self._task = asyncio.create_task(self._lifecycle(None), name="engine-lifecycle")

    async def stop(self, *, drain_timeout_s: float) -> None:
        async with self._lock:
            await self._stop_locked(drain_timeout_s)
            self._set_state("stopped")

    async def detach(self) -> None:
        """Stop watching, leave the engine running (the agent is exiting; the engine is not)."""
        await self._cancel_lifecycle()

    def update_running_profile(self, profile: Profile) -> None:
        """A live change was applied: record it so a crash restart and a reattach keep it (the launch
        profile, what the process has built, stays as it was)."""
        self.profile = profile
        record = read_record(self.record_path)
        if record is not None and self.engine is not None and record.pid == self.engine.pid:
            live = dump_profile(profile)
            value = None if live == record.profile_toml else live
            new = record.model_copy(update={"live_profile_toml": value})
            self.disk.write("the engine record", record_writer(self.record_path, new))

    # ---- internals --------------------------------------------------------------------------------

    def _set_state(self, state: EngineState) -> None:
        if state != self.state:
            log.info("engine state %s -> %s", self.state, state)
        self.state = state
        changed, self._state_changed = self._state_changed, asyncio.Event()
        changed.set()

    async def wait_for_state(self, states: set[str], timeout_s: float | None = None) -> bool:
        """Wait until the engine is in one of ``states``; False on timeout. With ``asyncio.timeout``: 3.11's
        ``wait_for`` lost a cancel landing as the state changed (a SIGTERM at "ready" left smoke running)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while self.state not in states:
            changed = self._state_changed
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            try:
                async with asyncio.timeout(remaining):
                    await changed.wait()
            except TimeoutError:
                return False
        return True

    def _launch(self, profile: Profile) -> tuple[RunningEngine, EngineSpec]:
        spec = self.spec_for(profile)
        holder = port_holder(spec.host, spec.port) if spec.kind == "sglang" else None
        if holder is not None:
            raise PortHeld(holder)
        engine, self._log_offset = launch(spec, profile, self.log, self.record_path, self.disk)
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

    async def _lifecycle(self, adopted: RunningEngine | None) -> None:
        """Supervise; an I/O error (a full state disk) never ends it: it starts again after a pause,
        with the engine that runs, and comes back by itself once the disk does."""
        tries = 0
        while True:
            try:
                await self._supervise(adopted)
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

    async def _supervise(self, adopted: RunningEngine | None) -> None:
        engine = adopted
        reattached = adopted is not None  # its live values are the engine's to tell, not ours to set
        while True:
            assert self.profile is not None and self.launched is not None
            ready = False
            if engine is None:
                self._set_state("starting" if self.failures == 0 else "restarting")
                try:
                    engine, spec = self._launch(self.launched)
                except PortHeld as held:
                    self._port_held(held.holder)
                    return
                except OSError as exc:
                    if is_full(exc):  # the disk's failure, not the profile's: waited out at the limit
                        self.disk.failed("the engine start", exc)
                    self.emit(
                        "engine.start_failed",
                        f"The engine could not be started: {exc}; failure {self.failures + 1} of "
                        f"{self.policy.crash_loop_limit}",
                        {"failures": self.failures + 1},
                    )
                    engine = None
                else:
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
            else:
                # Adopted: it may still be loading (the previous agent died during start-up).
                timeout = STARTUP_TIMEOUT_S[engine.kind]
                ready = await self._wait_ready(engine, timeout)
                if not ready and not engine.exited()[0]:
                    self.emit(
                        "engine.start_timeout",
                        f"The adopted engine was not ready within {timeout:.0f} s; stopping it",
                        {"pid": engine.pid},
                    )
                    await self._terminate(engine)
            if engine is not None and ready:
                self.last_error = None
                restored = await self.restore_live(engine.url, self.launched, self.profile, reattached)
                self.update_running_profile(restored)
                reattached = False
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
            self.failures += 1
            self._set_state("crashed")
            if engine is not None:
                how = f"exit code {code}" if code is not None else "it is gone"
                before = "before it was ready " if not ready else ""
                self.emit(
                    "engine.crashed",
                    f"The engine (pid {engine.pid}) stopped {before}unexpectedly ({how})"
                    + (
                        f": {why['summary']}" + (f" (raised at {why['frame']})" if why["frame"] else "")
                        if why
                        else ""
                    )
                    + f"; failure {self.failures} of {self.policy.crash_loop_limit}",
                    {"pid": engine.pid, "exit_code": code, "failures": self.failures, "error": why},
                )
            clear_record(self.record_path)
            self.engine = None
            engine = None
            if self.failures >= self.policy.crash_loop_limit and self.disk.problem is not None:
                await self._wait_for_disk()
            if self.failures >= self.policy.crash_loop_limit:
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

    async def _wait_for_disk(self) -> None:
        """Crashes while the state disk is full are the disk's, not the profile's: wait for space,
        then start again rather than give up as a crash loop."""
        self.emit(
            "engine.restarting",
            f"The engine failed {self.failures} times while the state disk is full; starting it again once "
            "there is space",
            {"failures": self.failures},
        )
        while self.disk.problem is not None:
            await asyncio.sleep(1.0)
        self.failures = 0

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

    async def _cancel_lifecycle(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _drain(self, timeout_s: float) -> None:
        self._set_state("draining")
        await drain(self.drain_hooks, self.running_requests, self.emit, timeout_s, self.poll_s)

    async def _stop_locked(self, drain_timeout_s: float) -> None:
        await self._cancel_lifecycle()
        engine = self.engine
        if engine is None:
            return
        if self.state == "ready" and drain_timeout_s > 0 and not engine.exited()[0]:
            await self._drain(drain_timeout_s)
        await self._terminate(engine)
        clear_record(self.record_path)
        self.engine = None
        self.emit("engine.stopped", f"The engine (pid {engine.pid}) is stopped", {"pid": engine.pid})

    async def _terminate(self, engine: RunningEngine) -> None:
        await terminate(engine, TERM_GRACE_S[engine.kind], self.poll_s, self.emit)
