"""The autopilot in ``agent serve``: the pilot fed by every published Snapshot, its commands applied
through the engine client's live control, each one an event and an audit line.

* ``stamp(snapshot)`` runs in the telemetry tick (synchronous, pure work): the pilot sees the tick,
  and the Snapshot is published with the autopilot's state on it. A command it decides is queued.
* One task applies queued commands, one at a time (``apply``: ``/set_internal_state`` and the read-back),
  and watches the clock: telemetry that stops arriving at all is stale too.
* ``configure(profile)`` follows the running profile: an operator action turning it on or off, new
  bounds, the operator's threshold or steps. Turning it off restores the operator's setting before the
  action's result is returned, so "applied" means the operator's threshold is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from agent.control.audit import AuditLog, AuditUnavailable
from agent.control.autopilot.pilot import Command, Effect, Notice, Pilot
from agent.control.autopilot.policy import Setting
from agent.control.autopilot.sample import sample_of
from agent.control.autopilot.settings import settings_of
from agent.control.autopilot.view import state_of
from agent.control.live import LiveOutcome
from agent.profile import Profile
from agent.sglang import live_control
from agent.wire import Snapshot
from agent.wire.autopilot import AutopilotState
from agent.wire.bench_evidence import BenchEvidence

log = logging.getLogger(__name__)

WATCH_EVERY_S = 1.0

Apply = Callable[[dict[str, int]], Awaitable[LiveOutcome]]
Emit = Callable[[str, str, dict[str, Any]], None]


def live_args(cmd: Command) -> dict[str, int]:
    """The live keys that change: the threshold, the pinned steps, or both (one call either way)."""
    before, target = cmd.before, cmd.target
    if cmd.kind in ("restore", "revert"):
        before = None  # back to the operator's setting: both keys, whatever ran in between
    args: dict[str, int] = {}
    if before is None or before.threshold != target.threshold:
        args[live_control.LIVE_THRESHOLD_KEY] = target.threshold
    if before is None or before.steps != target.steps:
        args[live_control.LIVE_STEPS_KEY] = target.steps
    return args


class AutopilotRunner:
    def __init__(
        self,
        profile: Profile,
        *,
        apply: Apply,
        emit: Emit,
        audit: AuditLog,
        refresh: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.profile = profile
        self.pilot = Pilot(settings_of(profile))
        self._apply, self.emit, self._audit, self._refresh, self._clock = apply, emit, audit, refresh, clock
        self._queue: asyncio.Queue[Command] = asyncio.Queue()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.state: AutopilotState = state_of(self.pilot, clock())
        self.counts: dict[str, int] = {}
        """Applied commands by kind, and "failed": what the exporter counts."""
        self.reverts: dict[str, int] = {}

    # ---- life -------------------------------------------------------------------------------------

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="autopilot")
        if self.profile.speculation.autopilot.enabled:
            await self.configure(self.profile)

    async def close(self, timeout_s: float = 5.0) -> None:
        """Stop; an autopilot setting in force goes back to the operator's first (the engine outlives
        the agent, and nobody would watch it)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        cmd = self.pilot.stopping()
        if cmd is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s), self._lock:
                    await self._execute(cmd)

    # ---- the operator -----------------------------------------------------------------------------

    async def configure(self, profile: Profile, pinned: int | None = None) -> str | None:
        """Follow the running profile; returns what an action's result should say about the autopilot.

        ``pinned``: the step pin the operator's action put in force live (-1: released). A profile's
        step count cannot say whether it is pinned (a release puts back the launched count), so the
        pin the action applied is the operator's steps; without one, a changed count is."""
        old, self.profile = self.profile, profile
        if pinned is not None:
            self.pilot.operator_steps = pinned
        elif old.speculation.num_steps != profile.speculation.num_steps:
            self.pilot.operator_steps = profile.speculation.num_steps or live_control.RELEASE_PINNED_STEPS
        self.pilot.now = max(self.pilot.now, self._clock())
        enabled = profile.speculation.autopilot.enabled
        if not enabled:
            while not self._queue.empty():  # decided before the operator said off: never applied
                self._queue.get_nowait()
            self.pilot.pending = None
        effects = self.pilot.configure(settings_of(profile), enabled)
        said = await self._handle_now(effects)
        self._update()
        return said

    async def _handle_now(self, effects: list[Effect]) -> str | None:
        said: list[str] = []
        for effect in effects:
            if isinstance(effect, Notice):
                self._notice(effect)
                said.append(effect.message)
                continue
            async with self._lock:
                outcome = await self._execute(effect)
            said.append(effect.why if outcome.ok else f"{effect.why}; it failed: {outcome.message}")
        return "; ".join(said) or None

    def prior(self, evidence: BenchEvidence | None) -> None:
        """The newest finished bench on this engine: the pilot starts from it while its own estimate
        of the crossover is missing (``prior``)."""
        self.pilot.prior = evidence

    # ---- each tick --------------------------------------------------------------------------------

    def stamp(self, snap: Snapshot) -> Snapshot:
        """The pilot sees this tick; the Snapshot goes out carrying the autopilot's state."""
        try:
            self._handle(self.pilot.observe(sample_of(snap)))
        except Exception:  # the autopilot must never cost a snapshot
            log.exception("autopilot failed on a tick")
        self._update(snap.time)
        return snap.model_copy(update={"autopilot": self.state})

    def _handle(self, effects: list[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, Notice):
                self._notice(effect)
            else:
                self.pilot.issued(effect)
                self._queue.put_nowait(effect)

    def _update(self, now: float | None = None) -> None:
        self.state = state_of(self.pilot, self._clock() if now is None else now)

    async def _run(self) -> None:
        """Apply queued commands; a second with none is the watchdog's tick.

        ``asyncio.timeout``, not ``asyncio.wait_for``: on Python 3.11, ``wait_for`` returned the
        command when a cancel landed in the tick it was queued, so ``close()``'s cancel was lost: the
        command reached the engine after the stop, and the task never ended. Awaited directly, a
        cancelled ``Queue.get`` leaves its command in the queue (the item is taken only when the getter
        resumes), so nothing is half-taken: a cancel means it is never applied, which is right, as
        ``close()`` then puts the operator's setting back from what the engine was last told, and a
        timeout in that tick leaves it for the next wait.
        """
        while True:
            try:
                async with asyncio.timeout(WATCH_EVERY_S):
                    cmd = await self._queue.get()
            except TimeoutError:
                self._handle(self.pilot.check_stale(self._clock()))
                continue
            try:
                async with self._lock:
                    await self._execute(cmd)
            except Exception:
                log.exception("autopilot command failed")
            self._update()

    # ---- applying ---------------------------------------------------------------------------------

    async def _execute(self, cmd: Command) -> LiveOutcome:
        self.pilot.issued(cmd)
        args = live_args(cmd)
        refused = self._audit_line(cmd, None) if args else None  # write-ahead: the intent first
        try:
            if refused is not None:
                outcome = LiveOutcome(False, f"refused: {refused}; nothing was changed on the engine")
            else:
                outcome = await self._apply(args) if args else LiveOutcome(True, "nothing to change")
        except Exception as exc:  # a broken engine answer is a failed command, not a dead autopilot
            outcome = LiveOutcome(False, f"{type(exc).__name__}: {exc}")
        now = self._clock()
        follow = self.pilot.applied(cmd, outcome.ok, outcome.message, now)
        self.counts[cmd.kind if outcome.ok else "failed"] = (
            self.counts.get(cmd.kind if outcome.ok else "failed", 0) + 1
        )
        if cmd.kind == "revert" and outcome.ok:
            self._count_revert(str(cmd.estimate.get("reason", "stale")))
        self._refresh()
        if refused is None:
            self._audit_line(cmd, outcome)
        if outcome.ok and cmd.kind != "restore":  # a restore's event is the pilot's "autopilot.disabled"
            name = {"move": "autopilot.move", "probe": "autopilot.probe", "probe_end": "autopilot.probe_end"}
            self.emit(
                name.get(cmd.kind, "autopilot.reverted"), f"autopilot: {cmd.why}", self._data(cmd, outcome)
            )
        for effect in follow:
            if isinstance(effect, Notice):
                self._notice(effect, self._data(cmd, outcome))
        return outcome

    def _notice(self, notice: Notice, extra: dict[str, Any] | None = None) -> None:
        if notice.name == "autopilot.reverted":
            self._count_revert(str(notice.data.get("reason", "engine")))
        self.emit(notice.name, notice.message, {**notice.data, **(extra or {})})

    def _count_revert(self, reason: str) -> None:
        self.reverts[reason] = self.reverts.get(reason, 0) + 1

    def _data(self, cmd: Command, outcome: LiveOutcome) -> dict[str, Any]:
        return {
            "kind": cmd.kind,
            "ok": outcome.ok,
            "before": _setting(cmd.before),
            "after": _setting(cmd.target),
            "estimate": cmd.estimate,
            "readback": outcome.readback,
        }

    def _audit_line(self, cmd: Command, outcome: LiveOutcome | None) -> str | None:
        """The intent (``outcome`` None: refused when it cannot be written, returns why) or the
        outcome of a command (written later when the disk is full)."""
        args = live_args(cmd)
        live = {live_control.READBACK_OF[k]: v for k, v in args.items()}
        status = "intent" if outcome is None else "applied" if outcome.ok else "failed"
        record: dict[str, Any] = {
            "operator": "autopilot",
            "action": {"kind": f"autopilot.{cmd.kind}", "mode": "live", "args": args},
            "before": _setting(cmd.before),
            "after": _setting(cmd.target),
            "result": {
                "status": status,
                "message": "about to apply" if outcome is None else outcome.message,
                "why": cmd.why,
                "estimate": cmd.estimate,
            },
            "phase": "intent" if outcome is None else "outcome",
            "live": live if outcome is None else (outcome.readback if outcome.ok else None),
        }
        if outcome is not None:
            self._audit.append_or_later(f"the autopilot's {cmd.kind} at {self._clock():.3f}", **record)
            return None
        try:
            self._audit.append(**record)
        except AuditUnavailable as exc:
            log.exception("the autopilot's intent could not be written")
            return str(exc)
        return None


def _setting(setting: Setting | None) -> dict[str, int] | None:
    return None if setting is None else {"threshold": setting.threshold, "steps": setting.steps}
