"""The engine supervisor: one engine process per agent, started, watched, restarted, drained, stopped.

The engine runs in its own session and process group (``start_new_session=True``), so a signal to the group
reaches SGLang's TP workers too, and so the agent's own death (or its terminal's) does not take the engine
down. Its pid, pgid, /proc start time and argv hash go to a state file; a restarted agent adopts the engine it
finds there instead of starting a second one, and never signals a pid whose start time or command line no
longer match (pid reuse).

Liveness is polled (every ``poll_s``) rather than waited for, because an adopted engine is not our child and
cannot be waited on; a child we forked is reaped through ``Popen.poll``.

Two profiles are kept: ``launched``, what the engine process was started with (what it has built), and
``profile``, that with the live values applied since. A crash restart (or a restart finished by the
next agent) launches ``launched`` again with the live threshold carried into the launch where it can
be (``relaunch_profile``: no request runs on the launch's value), and ``restore_live`` puts the
other live values back before the engine is announced ready. The record carries
both through every restart (``agent.engine.keeper``), so an agent stopped at any point of one (a kill
-9 before the engine was ready included) is followed by one that finishes it.

A full state disk is not the engine's failure: a start that cannot be made for want of room, or an
engine that dies before it is ready while there is none, is not counted toward the crash-loop limit;
the supervisor waits for room (``engine.waiting_for_disk``) and starts again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from agent.engine import proc
from agent.engine.adopt import Adopted, Origin, adopt_recorded
from agent.engine.failure import port_in_use
from agent.engine.faults import fault_point
from agent.engine.find import FoundEngine
from agent.engine.keeper import RecordKeeper
from agent.engine.lifecycle import (
    STARTUP_TIMEOUT_S,
    TERM_GRACE_S,
    Emit,
    EngineLife,
    PortHeld,
    RestoreLive,
)
from agent.engine.logfile import EngineLog
from agent.engine.policy import RestartPolicy
from agent.engine.record import EngineKind
from agent.engine.running import RunningEngine, drain, unknown_running_requests
from agent.engine.spec import EngineSpec
from agent.engine.state_disk import StateDisk
from agent.profile import Profile, dump_profile
from agent.sglang.live_state import relaunch_profile
from agent.wire.snapshot import Finding

__all__ = [
    "STARTUP_TIMEOUT_S",
    "TERM_GRACE_S",
    "PortHeld",
    "RestoreLive",
    "RunningEngine",
    "Supervisor",
    "port_in_use",
]


async def _nothing_to_restore(url: str, launched: Profile, running: Profile, origin: Origin) -> Profile:
    return running


class Supervisor(EngineLife):
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
        engine_dir: Path | None = None,
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
        self.state = "stopped"
        self.profile = None
        self.launched = None
        self.restore_live = restore_live
        self.disk = disk or StateDisk(str(record_path.parent))
        self.keeper = RecordKeeper(record_path, self.disk)
        self.engine_dir = engine_dir
        """Where this agent's engines read their launch files: how an engine is known without its record."""
        self.record_problem: str | None = None
        """The engine record was unreadable at the start: what was found and done (a finding)."""
        self.named: list[FoundEngine] = []
        """Engines of this agent found without a record that it could not adopt: none starts beside them."""
        self.engine = None
        self.failures = 0
        self.last_startup_s = None
        self.restarts = 0
        self.last_error = None
        self._redact = redact or (lambda lines: lines)
        self._log_offset = 0
        self._task: asyncio.Task[None] | None = None
        self._replace = None
        self._lock = asyncio.Lock()
        self._state_changed = asyncio.Event()

    # ---- commands ---------------------------------------------------------------------------------

    async def begin(self, profile: Profile) -> None:
        """Adopt the engine a previous agent left running (or finish the restart it began), or
        start one for ``profile``; never a second engine beside one that runs."""
        async with self._lock:
            hint = (profile.server.host, profile.server.port) if self.kind == "sglang" else None
            found = adopt_recorded(
                self.record_path, self.emit, profile, engine_dir=self.engine_dir, port_hint=hint
            )
            self.record_problem = found.problem
            self.profile = self.launched = profile
            self.failures = 0
            self.named = found.named
            if found.named:
                self._not_started(found.problem or "an engine of this agent runs without a record")
                return
            adopted = found.adopted
            origin: Origin = "launched"
            engine: RunningEngine | None = None
            if adopted is not None:
                engine, origin = self._take(adopted, profile)
            self._task = asyncio.create_task(self._lifecycle(engine, origin), name="engine-lifecycle")

    def _take(self, adopted: Adopted, given: Profile) -> tuple[RunningEngine | None, Origin]:
        """Take over what the record says: the engine to watch (None: one to launch), and how."""
        self.profile, self.launched = adopted.running, adopted.launched
        engine = adopted.engine
        if engine is not None and adopted.origin == "resumed":
            self._replace = engine  # a restart stopped half way: the old engine goes first
            engine = None
        elif engine is not None:
            self.kind, self.engine = engine.kind, engine
            self.keeper.adopted()
            if self.keeper.record is None or self.keeper.record.pid != engine.pid:
                self._record_found(engine)
            self.emit(
                "engine.reattached",
                f"Reattached to the running {engine.kind} engine (pid {engine.pid}); it was not restarted",
                {"pid": engine.pid, "url": engine.url},
            )
        # A launch that differs from --profile only by a live threshold carried into it is the same build.
        if dump_profile(adopted.launched) != dump_profile(relaunch_profile(given, adopted.launched)):
            self.emit(
                "engine.profile_differs",
                "The running engine was launched with a different profile than --profile; "
                "apply the profile to restart it with the new settings",
                {"running": adopted.launched.identity.name, "given": given.identity.name},
            )
        return engine, adopted.origin

    def _record_found(self, engine: RunningEngine) -> None:
        """An engine adopted without a readable record gets one again (the next agent reads it)."""
        assert self.launched is not None
        self.keeper.found(engine, self.launched, self.log.path)

    def _not_started(self, why: str) -> None:
        """An engine runs that the agent cannot adopt: say so and start none."""
        self.last_error = {"time": time.time(), "summary": why, "frame": None, "lines": []}
        self.engine = None
        self._set_state("stopped")

    def record_finding(self) -> Finding | None:
        """The engine record was unreadable at this agent's start (what was found and done)."""
        if self.record_problem is None:
            return None
        return Finding(
            code="engine_record_unreadable",
            severity="warning" if self.engine is not None or self.state != "stopped" else "critical",
            title="The engine record was unreadable at the agent's start",
            explanation=self.record_problem,
            action="Nothing more when the engine was adopted: the record is written again. When an engine was "
            "named and not adopted, stop it, then start the engine from the console or the API. The "
            "unreadable file is kept beside the record for reading.",
        )

    async def start(self) -> bool:
        """Start again after a stop or a crash loop; False when it already runs."""
        async with self._lock:
            if self._task is not None and not self._task.done():
                return False
            self.named = [e for e in self.named if proc.is_same_process(e.pid, e.start_ticks)]
            if self.named:
                return False  # never a second engine beside one this agent could not adopt
            self.failures = 0
            self._set_state("starting")
            self._task = asyncio.create_task(self._lifecycle(None, "launched"), name="engine-lifecycle")
            return True

    async def restart(
        self, profile: Profile | None, *, drain_timeout_s: float, launch: Profile | None = None
    ) -> None:
        """Drain and stop the engine, then start it with ``profile`` (or the same one).

        ``launch`` is what to launch when it differs from ``profile`` (a live value that cannot be
        launched as such); ``profile``'s live values are then put back once the engine is ready.
        """
        async with self._lock:
            fault_point("restart_requested")
            if profile is not None:
                new_running, new_launch = profile, launch or profile
            else:
                assert self.profile is not None and self.launched is not None
                new_running, new_launch = self.profile, self.launched
            await self._stop_locked(drain_timeout_s, then=(new_launch, new_running))
            self.profile, self.launched = new_running, new_launch
            self.failures = 0
            self.restarts += 1
            self._set_state("starting")
            self._task = asyncio.create_task(self._lifecycle(None, "launched"), name="engine-lifecycle")

    async def stop(self, *, drain_timeout_s: float) -> None:
        async with self._lock:
            await self._stop_locked(drain_timeout_s)
            self._set_state("stopped")

    async def detach(self) -> None:
        """Stop watching, leave the engine running (the agent is exiting; the engine is not)."""
        await self._cancel_lifecycle()

    # ---- internals --------------------------------------------------------------------------------

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

    async def _cancel_lifecycle(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _drain(self, timeout_s: float) -> None:
        self._set_state("draining")
        await drain(self.drain_hooks, self.running_requests, self.emit, timeout_s, self.poll_s)

    async def _stop_locked(self, drain_timeout_s: float, then: tuple[Profile, Profile] | None = None) -> None:
        """Drain and stop the engine; ``then``: the (launch, running) profiles a restart starts next,
        which the record names before the engine is stopped (an agent stopped in between finishes
        the restart); without it the record goes."""
        await self._cancel_lifecycle()
        engine = self.engine
        if engine is None:
            if then is not None:
                self.keeper.restarting(*then)
            else:
                self.keeper.clear()
            return
        if self.state == "ready" and drain_timeout_s > 0 and not engine.exited()[0]:
            await self._drain(drain_timeout_s)
        if then is not None:
            self.keeper.restarting(*then)
            fault_point("restart_stopping")
        await self._terminate(engine)
        if then is None:
            self.keeper.clear()
        else:
            fault_point("restart_stopped")
        self.engine = None
        self.emit("engine.stopped", f"The engine (pid {engine.pid}) is stopped", {"pid": engine.pid})
