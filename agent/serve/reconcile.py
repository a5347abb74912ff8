"""The engine's live values and the audit: put back after a crash (audited), settled at start.

* A crashed engine is launched again with its launch profile; the operator's live values go back on
  it once it answers, write-ahead like any change: intent, apply, outcome. So do they on an engine
  a previous agent launched and stopped before it put them back (a restart cut short: the engine
  record says ``live_pending``), and on the restart it began and this agent finishes.
* The first time an engine answers after the agent started (reattached or launched), the agent
  reads what is in force on it and settles the audit: every intent left without an outcome (the
  agent was killed between the two) gets one, "applied" when the engine shows it, "failed" when
  not; and one ``reconcile`` line records the engine's live values against what the agent's record
  said. Where they differ on a reattached engine, what is in force wins and is recorded: the agent
  never sets a value back on its own (a kill between the engine's change and the record's update
  once made the next start revert it quietly). A benchmark's forced setting is no such value: a
  ``bench_force`` intent left without an outcome (its run was cut short) is put back first, audited,
  so the arm's value is never adopted as the operator's (``agent.serve.bench_forcing``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import httpx

from agent.control.audit import AuditLog, AuditUnavailable
from agent.control.live import apply_live, readback_words
from agent.engine.adopt import Origin
from agent.profile import Profile, ProfileError
from agent.profile.store import profile_from_dict
from agent.serve.bench_forcing import ForcingLedger, forcer_alive, forcings
from agent.sglang import live_control
from agent.sglang.client import EngineClient, EngineError
from agent.sglang.live_control import READBACK_OF
from agent.sglang.live_state import live_args_to_restore, live_threshold

log = logging.getLogger(__name__)

Emit = Callable[[str, str, dict[str, Any]], None]
SOURCE = {"via": "agent", "what": "start-up reconciliation"}


def expected_live(launched: Profile, running: Profile) -> dict[str, int]:
    """The live values ``running`` puts on an engine launched with ``launched`` (read-back names)."""
    out = {"threshold": live_threshold(running)}
    steps = running.speculation.num_steps
    if steps is not None and steps != launched.speculation.num_steps:
        out["pinned_steps"] = steps
    return out


def with_engine_values(running: Profile, launched: Profile, engine: dict[str, Any]) -> Profile:
    """``running`` with what the engine has in force (its read-back), where it can say so."""
    data = running.model_dump(mode="json", exclude_none=True)
    spec = dict(data.get("speculation", {}))
    threshold = engine.get("threshold")
    if threshold is not None:
        if threshold == live_control.NO_THRESHOLD:
            spec.pop("threshold", None)
        else:
            spec["threshold"] = threshold
    pinned = engine.get("pinned_steps")
    if pinned is not None:
        released = pinned == live_control.RELEASE_PINNED_STEPS
        spec["num_steps"] = launched.speculation.num_steps if released else pinned
    data["speculation"] = spec
    try:
        return profile_from_dict(data, "<engine read-back>")
    except ProfileError:
        return running


class LiveLedger:
    """``Supervisor(restore_live=...)``: restores after a crash, reconciles on the first answer."""

    def __init__(
        self,
        *,
        http: httpx.AsyncClient,
        headers: Callable[[], dict[str, str]],
        audit: AuditLog,
        emit: Emit,
        pending: dict[str, dict[str, Any]] | None = None,
        on_first_answer: Callable[[], None] | None = None,
    ) -> None:
        self.http, self.headers, self.audit, self.emit = http, headers, audit, emit
        self.pending = pending
        """Intents without an outcome as the agent found them at its start (None: read them then)."""
        self.on_first_answer = on_first_answer
        """Called once the first engine answers (the open restarts are settled then)."""
        self.reconciled = False
        self.forcings = ForcingLedger(http=http, headers=headers, audit=audit, emit=emit)
        """Benchmarks' forced live settings, written ahead (``agent.serve.bench_forcing``)."""

    async def __call__(self, url: str, launched: Profile, running: Profile, origin: Origin) -> Profile:
        if not self.reconciled:
            self.reconciled = True
            cut_short = origin in ("adopted_pending", "resumed")
            why = (
                "the previous agent stopped before it put them back"
                if cut_short
                else "the engine started again"
            )
            now = running if origin == "adopted" else await self.restore(url, launched, running, why)
            await self.put_back_forcings(url)
            settled = await self.reconcile(url, launched, now, origin != "launched")
            if self.on_first_answer is not None:
                self.on_first_answer()
            return settled
        if origin == "adopted":
            return running  # supervision came back after an I/O error: the engine kept its values
        return await self.restore(url, launched, running)

    def _pending(self) -> dict[str, dict[str, Any]]:
        return self.audit.index().pending if self.pending is None else self.pending

    async def put_back_forcings(self, url: str) -> None:
        """What a benchmark cut short forced (its intent has no outcome) goes back before the
        reconciliation reads the engine: the arm's value is no operator's. A forcer that still runs
        (an ``agent bench`` outliving this agent's restart) puts it back itself."""
        why = "the benchmark was cut short (its process stopped before it put the operator's values back)"
        for intent in forcings(self._pending().values()):
            action = intent.get("action") or {}
            if forcer_alive(action):
                continue
            op = {"action": action, "operator": intent.get("operator"), "source": SOURCE}
            await self.forcings.put_back(op, url, f"settled at the agent's start: {why}")

    async def read(self, url: str) -> dict[str, Any] | None:
        client = EngineClient(url, self.http, headers=self.headers(), timeout_s=10.0)
        try:
            live = await client.live_state()
        except EngineError:
            return None
        return None if live is None else {"threshold": live.threshold, "pinned_steps": live.pinned_steps}

    async def restore(
        self, url: str, launched: Profile, running: Profile, why: str = "the engine started again"
    ) -> Profile:
        """Put ``running``'s live values on a fresh engine: intent, apply, outcome."""
        args = live_args_to_restore(launched, running)
        if not args:
            return running
        live = {READBACK_OF[k]: v for k, v in args.items()}
        action = {"kind": "live_restore", "args": args, "profile": running.identity.name}
        try:
            self.audit.append(operator="agent", action=action, before=None, after=live, phase="intent",
                              result={"status": "intent", "message": why}, live=live)  # fmt: skip
        except AuditUnavailable as exc:
            self.emit(
                "engine.live_restore_failed",
                f"The live settings were not put back ({exc}); the engine runs its launch settings",
                live,
            )
            self._audit_later(launched, f"the live settings were not put back ({exc})")
            return launched
        outcome = await apply_live(self.http, url, args, self.headers())
        status = "applied" if outcome.ok else "failed"
        self.audit.append_or_later("the outcome of the live restore", operator="agent", action=action,
                                   before=None, after=live, phase="outcome",
                                   result={"status": status, "message": outcome.message},
                                   live=outcome.readback if outcome.ok else None)  # fmt: skip
        if outcome.ok:
            said = f"The operator's live settings are in force on the engine: {outcome.message}"
            self.emit("engine.live_restored", said, live)
            return running
        self.emit(
            "engine.live_restore_failed",
            f"The live settings could not be put back ({outcome.message}); the engine runs its launch "
            "settings, set them again",
            live,
        )
        return launched

    def _audit_later(self, launched: Profile, why: str) -> None:
        """What runs instead (the launch settings), audited once the audit can be written again."""
        live = {"threshold": live_threshold(launched)}
        self.audit.append_or_later("the audit of the live restore", operator="agent",
                                   action={"kind": "live_restore", "profile": launched.identity.name},
                                   before=None, after=live, live=live, result={"status": "applied",
                                   "message": f"{why}: the engine runs its launch settings"})  # fmt: skip

    async def reconcile(self, url: str, launched: Profile, running: Profile, adopted: bool) -> Profile:
        engine = await self.read(url)
        self._settle_intents(engine, adopted, running)
        expected = expected_live(launched, running)
        differs = engine is not None and any(
            engine.get(k) is not None and engine[k] != v for k, v in expected.items()
        )
        result = running
        if engine is None:
            message = "the engine reports no live values (no live control); nothing to reconcile"
        elif not differs:
            message = f"the engine's live values match the agent's record: {readback_words(engine)}"
        else:
            said = readback_words({k: engine[k] for k in expected if engine.get(k) is not None})
            message = (
                f"the engine has {said}, the agent's record said {readback_words(expected)}: kept what is "
                "in force on the engine, nothing was set back"
            )
            if not running.speculation.autopilot.enabled:  # the autopilot's setting is not the operator's
                result = with_engine_values(running, launched, engine)
        if not self.audit.append_or_later(
            "the start-up reconciliation",
            operator="agent",
            action={"kind": "reconcile", "adopted": adopted, "profile": running.identity.name},
            before=expected,
            after=engine,
            result={"status": "reconciled", "message": message},
            source=SOURCE,
            live=engine,
        ):
            message = f"{message} (its audit line waits for room on the state disk)"
        self.emit("agent.reconciled", f"Reconciled with the engine: {message}", {"engine": engine,
                  "expected": expected, "differs": differs})  # fmt: skip
        return result

    def _settle_intents(self, engine: dict[str, Any] | None, adopted: bool, running: Profile) -> None:
        """Give each intent left without an outcome the outcome the engine (or, for a change that is
        not live, the profile it runs) shows."""
        for intent in self._pending().values():
            if intent in forcings([intent]):
                continue  # a benchmark's forcing: put back above (put_back_forcings), or its forcer's
            want = intent.get("live") or {}
            if want:
                took = bool(adopted and engine and all(engine.get(k) == v for k, v in want.items()))
            else:
                took = adopted and _profile_shows(running, intent.get("after") or {})
            shown = readback_words(engine) if engine else "no live values"
            why = "the engine shows it" if took else "the engine does not show it"
            if not adopted:
                why = "the engine was started again since"
            self.audit.append_or_later(
                    f"the outcome of {(intent.get('action') or {}).get('action_id')}",
                    operator=intent.get("operator"),
                    action=intent.get("action") or {},
                    before=intent.get("before"),
                    after=intent.get("after"),
                    result={"status": "applied" if took else "failed",
                            "message": f"settled at the agent's start: {why} ({shown})"},
                    phase="outcome",
                    source=SOURCE,
                    live=want if took else None,
                )  # fmt: skip


def _profile_shows(profile: Profile, after: dict[str, Any]) -> bool:
    """Whether every ``dotted.key: value`` of an intent's changes holds in ``profile``."""
    data: Any = profile.model_dump(mode="json")
    if not after:
        return False
    for key, value in after.items():
        node = data
        for part in str(key).split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node != value:
            return False
    return True
