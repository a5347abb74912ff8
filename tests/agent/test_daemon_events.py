"""The daemon stamps a snapshot's identity once and publishes telemetry's change events beside it;
every event name the agent emits is one of ``wire.EventName``."""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path

import pytest

from agent.profile import load_profile
from agent.serve.daemon import Daemon, ServeConfig
from agent.serve.paths import StatePaths
from agent.telemetry.collector import Observation
from agent.wire import Finding, Gpus, KvView, Latency, Load, Speculation, Throughput
from agent.wire.events import EVENT_NAMES

REPO = Path(__file__).resolve().parents[2]
PROFILE_PATH = REPO / "profiles" / "local-sim.toml"
EMITTERS = {"emit", "publish_event", "BenchEvent", "EventDraft", "Notice"}
EVENT_SHAPED = ("engine.", "action.", "bench.", "agent.", "finding.", "speculation.", "autopilot.")


def observed(time: float, *, on: bool, running: int, findings: list[Finding] | None = None) -> Observation:
    spec = Speculation(
        configured=True,
        on=on,
        steps=3 if on else 0,
        off_reason=None if on else "above_threshold",
        off_detail=None if on else f"{running} requests are running, at or above the threshold of 8",
    )
    return Observation(
        time=time,
        engine_state="ready",
        engine_pid=4242,
        metrics_source="metrics",
        throughput=Throughput(),
        load=Load(running=running),
        latency=Latency(),
        speculation=spec,
        kv=KvView(),
        gpus=Gpus(),
        findings=findings or [],
    )


@pytest.fixture
async def daemon(tmp_path: Path) -> Daemon:
    profile = load_profile(PROFILE_PATH)
    config = ServeConfig(
        profile, PROFILE_PATH, PROFILE_PATH.parent, "sim", StatePaths(tmp_path / "s").prepare()
    )
    made = Daemon(config, token="t" * 43)
    yield made  # type: ignore[misc]
    await made.http.aclose()


def _published(daemon: Daemon) -> list[dict[str, object]]:
    return [{**json.loads(item.json()), "item": item.kind} for item in daemon.hub.since(0)]


async def test_identity_is_stamped_once_and_a_switch_is_published_beside_its_snapshot(daemon: Daemon) -> None:
    profile = daemon.profile
    queueing = Finding(
        code="queueing", severity="warning", title="40 requests wait", explanation="e", action="a"
    )
    now = time.time()
    first = daemon._publish(observed(now, on=True, running=2), profile)
    second = daemon._publish(observed(now + 1, on=False, running=9, findings=[queueing]), profile)
    third = daemon._publish(observed(now + 2, on=True, running=3), profile)
    assert [s.engine_kind for s in (first, second, third)] == ["sim"] * 3
    assert {s.profile_name for s in (first, second, third)} == {profile.identity.name}
    assert first.seq < second.seq < third.seq and second.engine_pid == 4242
    items = _published(daemon)
    shown = [(i["item"], i.get("name")) for i in items]
    assert shown == [
        ("snapshot", None),
        ("snapshot", None),
        ("event", "speculation.off"),
        ("event", "finding.raised"),
        ("snapshot", None),
        ("event", "speculation.on"),
        ("event", "finding.cleared"),
    ]
    off = items[2]
    assert off["time"] == now + 1 and off["kind"] == "speculation"
    assert {k: v for k, v in off["data"].items() if v is not None} == {
        "reason": "above_threshold",
        "running": 9,
    }
    assert "9 requests are running" in str(off["message"])


async def test_an_event_name_outside_the_literal_is_published_not_lost(daemon: Daemon) -> None:
    daemon.emit("engine", "engine.something_new", "a newer supervisor said so", {"pid": 1})
    (event,) = [i for i in _published(daemon) if i["item"] == "event"]
    assert event["name"] == "agent.unknown_event"
    assert event["data"] == {
        "name": "engine.something_new",
        "data": {"pid": 1},
        "problem": "a name the wire does not list",
    }


async def test_data_that_does_not_fit_its_payload_is_published_whole_not_lost(daemon: Daemon) -> None:
    daemon.emit("engine", "engine.ready", "ready", {"pid": "not a pid", "url": "http://e"})
    (event,) = [i for i in _published(daemon) if i["item"] == "event"]
    assert event["name"] == "agent.unknown_event" and event["message"] == "ready"
    assert event["data"]["name"] == "engine.ready"
    assert event["data"]["data"] == {"pid": "not a pid", "url": "http://e"}
    assert "pid" in event["data"]["problem"]


def _emitted_names() -> set[str]:
    """Every event-shaped string constant in a function of agent/ that emits an event."""
    found: set[str] = set()
    for path in (REPO / "agent").rglob("*.py"):
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)]
            names = {
                c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "") for c in calls
            }
            if not names & EMITTERS:
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    text = node.value
                    if text.startswith(EVENT_SHAPED) and text.replace(".", "").replace("_", "").isalpha():
                        found.add(text)
    return found


def test_every_event_name_the_agent_emits_is_in_the_literal() -> None:
    emitted = _emitted_names()
    assert len(emitted) >= 30  # the scan found the supervisor's, the action book's, the bench's...
    assert sorted(emitted - EVENT_NAMES) == []
    assert {"speculation.on", "speculation.off", "finding.raised", "finding.cleared"} <= emitted
    assert {"autopilot.enabled", "autopilot.move", "autopilot.probe", "autopilot.reverted"} <= emitted
