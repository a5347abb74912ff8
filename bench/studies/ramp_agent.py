"""The agent's side of ``autopilot_ramp.py``: each arm switch as an operator action (plan, confirm:
audited), the agent's stream kept for the autopilot's events, and the operator's setting put back.

One thing goes to the engine directly, as ``agent bench compare`` does it: before each arm the step
policy is put back at the launch step count (pinned, then released: ``EngineProbe.reset_steps``).
SGLang's EMA policy remembers what ran before, and turning the autopilot off releases the steps
(which resets the policy) while a fixed threshold set after another fixed arm does not: without the
reset, the arm that follows the autopilot would start from a fresh policy and the others from an aged
one. (On the sim, over two ramps without the reset, the fixed arm that followed the autopilot averaged
0.5-0.9 % below the other fixed arm of its level, 0.2 % in one with it: within the noise either way.)"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from agent.bench.engine import EngineProbe
from agent.sglang.info_view import ServerInfo
from agent.sglang.live_control import NO_THRESHOLD
from agent.sglang.rules import MAX_THRESHOLD
from bench.kit.agent_api import plan_and_confirm, stream_items

RESTORE_TIMEOUT_S = 90.0


class RampFailed(Exception):
    """The ramp could not go on (an action refused or failed, the engine gone)."""


def resume_threshold(events: list[dict[str, Any]], until: float, readback: int | None) -> int | None:
    """The threshold the autopilot held when its window ended: the engine's read-back then, unless a
    probe of its own was under way (a probe runs the other side for a few seconds and then returns to
    what it held: the probe event's ``before``). ``until``: the wall time of that read-back."""
    probing: int | None = None
    for event in events:
        if float(event.get("time", 0.0)) > until:
            break
        name, data = event.get("name"), event.get("data") or {}
        if name == "autopilot.probe" and data.get("ok", True):
            probing = (data.get("before") or {}).get("threshold")
        elif name in ("autopilot.probe_end", "autopilot.move", "autopilot.reverted", "autopilot.disabled"):
            probing = None
    return probing if probing is not None else readback


async def steps_to_reset(probe: EngineProbe, info: ServerInfo) -> tuple[int | None, str]:
    """The step count each arm starts from, and why; None where the policy does not move (the steps
    are pinned) or the launch count is not a built state (``agent.bench.compare``'s rule)."""
    state = await probe.live_state()
    launch = info.speculative_num_steps
    if state is None:
        return None, "no reset: the engine reads back no live state"
    if state.pinned:
        return (
            None,
            f"no reset: the steps are pinned at {state.pinned_steps}, so SGLang's policy does not move",
        )
    if launch is None or launch <= 0 or launch not in state.prebuilt_steps:
        return None, f"no reset: the launch step count {launch} is not a built state"
    return launch, (
        f"before each arm the step policy is pinned at the launch count {launch} and released on the engine "
        "(as agent bench compare does), so every arm starts from the same policy state"
    )


def none_equivalent(info: ServerInfo) -> int:
    """A threshold that speculates at every batch this server can run, as "none" (0) does.

    The agent turns the autopilot on only over an operator's threshold (its profile rule: the
    autopilot needs one), so an autopilot that held "none" re-enters at this instead: the server's
    running cap + 1, which no batch reaches."""
    cap = info.max_running_requests
    return MAX_THRESHOLD if cap is None else min(MAX_THRESHOLD, cap + 1)


@dataclass
class Operator:
    """The operator's setting at the start: what the end (or a signal) puts back."""

    threshold: int
    autopilot: bool


@dataclass
class Session:
    """One run's talk with the agent: every action it made and every stream item it saw, timed from
    ``started`` (the same wall clock as the agent's events: both run on one host)."""

    agent: httpx.AsyncClient
    started: float = field(default_factory=time.time)
    actions: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    resets: list[float] = field(default_factory=list)
    """When the step policy was put back at the launch count (before an arm)."""
    stream_note: str | None = None

    def at(self) -> float:
        return round(time.time() - self.started, 3)

    async def act(self, kind: str, value: int | bool, why: str) -> dict[str, Any]:
        """One operator action through the agent (plan, confirm when live); RampFailed if not applied."""
        called = self.at()
        plan, done = await plan_and_confirm(self.agent, kind, value)
        entry: dict[str, Any] = {"at_s": called, "kind": kind, "value": value, "why": why,
                                 "action_id": plan.get("action_id"), "mode": plan.get("mode")}  # fmt: skip
        if done is None:
            entry["status"] = "noop" if plan.get("mode") == "noop" else str(plan.get("mode"))
            entry["message"] = plan.get("reason") or plan.get("detail")
        else:
            entry["status"], entry["message"] = done.get("status"), done.get("message")
        entry["done_s"] = self.at()
        self.actions.append(entry)
        if entry["status"] not in ("applied", "noop"):
            raise RampFailed(
                f"{kind} {value}: the agent did not apply it ({entry['status']}): {entry['message']}"
            )
        return entry

    async def follow(self, since: int) -> None:
        """Every event and a compact line per snapshot of the agent's stream, until cancelled."""
        try:
            async for kind, item in stream_items(self.agent, since):
                if kind == "event":
                    self.events.append(item)
                elif kind == "snapshot":
                    spec, auto = item.get("speculation") or {}, item.get("autopilot") or {}
                    self.snapshots.append({
                        "time": item.get("time"), "threshold": spec.get("threshold"), "steps": spec.get("steps"),
                        "running": (item.get("load") or {}).get("running"),
                        "autopilot": auto.get("mode"), "output_tok_s": (item.get("throughput") or {}).get("output_tok_s"),
                    })  # fmt: skip
        except (httpx.HTTPError, ValueError) as exc:
            self.stream_note = f"the agent's stream stopped: {type(exc).__name__}: {exc}"


async def operator_setting(agent: httpx.AsyncClient) -> Operator:
    running = (await agent.get("/v1/profile")).json()["profile"]["speculation"]
    threshold = running.get("threshold")
    return Operator(
        NO_THRESHOLD if threshold is None else int(threshold),
        bool((running.get("autopilot") or {}).get("enabled")),
    )


async def restore(session: Session, operator: Operator, probe: EngineProbe) -> dict[str, Any]:
    """The operator's threshold, then the autopilot as it was; read back from the agent and the engine."""
    out: dict[str, Any] = {"threshold": operator.threshold, "autopilot": operator.autopilot, "actions": []}
    try:
        async with asyncio.timeout(RESTORE_TIMEOUT_S):
            first = len(session.actions)
            await session.act("threshold", operator.threshold, "restore the operator's threshold")
            if operator.autopilot:
                await session.act("autopilot", True, "restore the operator's autopilot (it was on)")
            out["actions"] = session.actions[first:]
            now = await operator_setting(session.agent)
            out["agent_threshold"], out["agent_autopilot"] = now.threshold, now.autopilot
            live = await probe.live_state()
            out["engine_threshold"] = None if live is None else live.threshold
    except Exception as exc:  # reported (and exit 1): the operator must know it is not back
        out["error"] = f"{type(exc).__name__}: {exc}"
    agent_ok = (
        out.get("agent_threshold") == operator.threshold and out.get("agent_autopilot") == operator.autopilot
    )
    engine_ok = operator.autopilot or out.get("engine_threshold") == operator.threshold
    out["ok"] = "error" not in out and agent_ok and engine_ok
    return out
