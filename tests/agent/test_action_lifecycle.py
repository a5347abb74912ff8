"""Every operator action ends, and says how: applied, failed or cancelled, on the stream and in the audit.

Against the real ``agent serve --engine sim`` (see daemon_harness.py): a console shows "applying"
until the agent's terminal event for that action arrives, so each path here waits for that event,
never for time.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from daemon_harness import ENGINE_KEY, Agent, read_stream

from agent.sglang import live_control
from agent.wire import EVENT, ActionEvent, ActionResult

pytestmark = pytest.mark.slow


def _audit(agent: Agent, action_id: str) -> list[dict[str, Any]]:
    path = agent.state_dir / "audit.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    return [a for a in lines if a["action"].get("action_id") == action_id and a["phase"] != "intent"]


def _live_threshold(agent: Agent) -> int:
    url = agent.status()["engine_url"]
    info = httpx.get(
        url + "/server_info", headers={"Authorization": f"Bearer {ENGINE_KEY}"}, timeout=10
    ).json()
    return int(info["internal_states"][0][live_control.READBACK_FIELD]["threshold"])


def _action_events(items: list[tuple[str, dict[str, Any]]], action_id: str) -> list[ActionEvent]:
    events = [EVENT.validate_python(d) for k, d in items if k == "event"]
    return [e for e in events if isinstance(e, ActionEvent) and e.data.action_id == action_id]


async def test_a_cancelled_plan_ends_cancelled_is_audited_so_and_never_applies(shared_agent: Agent) -> None:
    before = _live_threshold(shared_agent)
    wanted = before + 7
    body = {"request_id": f"cancel-{time.time_ns()}", "kind": "threshold", "value": wanted, "operator": "ops"}
    async with shared_agent.client() as c:
        since = (await c.get("/v1/status")).json()["last_seq"]
        plan = (await c.post("/v1/actions", json=body)).json()
        assert plan["mode"] == "live"
        cancelled = ActionResult.model_validate(
            (await c.post(f"/v1/actions/{plan['action_id']}/cancel", json={"operator": "night-ops"})).json()
        )
        again = ActionResult.model_validate((await c.post(f"/v1/actions/{plan['action_id']}/cancel")).json())
        confirm = ActionResult.model_validate(
            (await c.post(f"/v1/actions/{plan['action_id']}/confirm")).json()
        )
        unknown = await c.post("/v1/actions/act-nope/cancel")
        items = await read_stream(
            c,
            since,
            lambda it: any(e.name == "action.cancelled" for e in _action_events(it, plan["action_id"])),
            10,
        )
        audit_api = (await c.get("/v1/audit")).json()["lines"]
    assert cancelled.status == "cancelled" and "nothing was changed" in cancelled.message
    assert again == cancelled and confirm == cancelled  # over: neither a second cancel nor a confirm moves it
    assert unknown.status_code == 404
    assert _live_threshold(shared_agent) == before  # never applied
    events = _action_events(items, plan["action_id"])
    assert [e.name for e in events] == ["action.planned", "action.cancelled"]
    assert events[0].data.terminal is False and events[1].data.terminal is True
    assert events[1].data.status == "cancelled" and events[1].data.value == wanted
    assert "waiting for the operator to confirm" in events[0].message
    assert events[1].message.startswith(f"threshold → {wanted}: cancelled")
    (line,) = _audit(shared_agent, plan["action_id"])
    assert line["result"]["status"] == "cancelled"
    assert line["operator"] == "night-ops"
    assert line["after"] == {"speculation.threshold": wanted}  # what was asked for, not applied
    assert any(a["action"].get("action_id") == plan["action_id"] for a in audit_api)


async def test_an_applied_live_change_ends_with_one_terminal_event_in_words(shared_agent: Agent) -> None:
    wanted = _live_threshold(shared_agent) + 3
    body = {"request_id": f"live-{time.time_ns()}", "kind": "threshold", "value": wanted}
    async with shared_agent.client() as c:
        since = (await c.get("/v1/status")).json()["last_seq"]
        plan = (await c.post("/v1/actions", json=body)).json()
        result = (await c.post(f"/v1/actions/{plan['action_id']}/confirm")).json()
        items = await read_stream(
            c, since, lambda it: any(e.data.terminal for e in _action_events(it, plan["action_id"])), 10
        )
        running = (await c.get("/v1/profile")).json()
    assert result["status"] == "applied"
    assert running["profile"]["speculation"]["threshold"] == wanted  # the live value, not the file's
    assert f"threshold = {wanted}" in running["toml"] and running["name"] == "sim-shared"
    events = _action_events(items, plan["action_id"])
    assert [e.name for e in events] == ["action.planned", "action.applied"]
    assert f"the engine reports threshold {wanted}" in events[1].message
    assert "{" not in events[1].message and "'" not in events[1].message


async def test_a_restart_action_ends_applied_once_the_engine_is_ready(make_agent: Any) -> None:
    agent: Agent = make_agent("sim-restart-end").start()
    before = agent.wait_state("ready")
    async with agent.client() as c:
        since = (await c.get("/v1/status")).json()["last_seq"]
        rid = f"topk-{time.time_ns()}"
        plan = (await c.post("/v1/actions", json={"request_id": rid, "kind": "topk", "value": 4})).json()
        assert plan["mode"] == "restart"
        confirmed = (await c.post(f"/v1/actions/{plan['action_id']}/confirm")).json()
        items = await read_stream(
            c, since, lambda it: any(e.data.terminal for e in _action_events(it, plan["action_id"])), 90
        )
        result = (await c.get(f"/v1/actions/{plan['action_id']}")).json()
    assert confirmed["status"] == "applying"
    events = _action_events(items, plan["action_id"])
    assert [e.name for e in events] == ["action.planned", "action.applying", "action.applied"]
    assert [e.data.terminal for e in events] == [False, False, True]
    ready = [d for k, d in items if k == "event" and d["name"] == "engine.ready"]
    assert ready and ready[-1]["seq"] < events[-1].seq  # ended after the new engine was ready
    assert result["status"] == "applied"
    assert agent.status()["engine_pid"] != before["engine_pid"]
    (line,) = _audit(agent, plan["action_id"])
    assert line["result"]["status"] == "applied"


async def test_an_agent_stopping_during_a_restart_ends_the_action_as_failed(make_agent: Any) -> None:
    """A restart still draining when the agent is stopped: the action fails, with the reason, audited."""
    agent: Agent = make_agent("sim-restart-stop", extra=["--drain-timeout", "120"]).start()
    url = agent.wait_state("ready")["engine_url"]
    body = {"text": "hello " * 32, "sampling_params": {"max_new_tokens": 4000, "ignore_eos": True}}
    async with httpx.AsyncClient(timeout=120, headers={"Authorization": f"Bearer {ENGINE_KEY}"}) as engine:
        load = asyncio.create_task(engine.post(url + "/generate", json=body))
        async with agent.client() as c:
            since = (await c.get("/v1/status")).json()["last_seq"]
            await read_stream(
                c,
                since,
                lambda it: any(k == "snapshot" and (d["load"]["running"] or 0) >= 1 for k, d in it),
                30,
            )
            rid = f"topk-stop-{time.time_ns()}"
            plan = (await c.post("/v1/actions", json={"request_id": rid, "kind": "topk", "value": 4})).json()
            await c.post(f"/v1/actions/{plan['action_id']}/confirm")
            await read_stream(c, since, lambda it: any(d.get("name") == "engine.draining" for _, d in it), 30)
            await c.post("/v1/agent/stop", json={"engine_too": False})
        assert agent.proc is not None
        agent.proc.wait(timeout=60)
        load.cancel()
    (line,) = _audit(agent, plan["action_id"])  # written before the agent exited
    assert line["result"]["status"] == "failed"
    assert "the agent stopped before the restart finished" in line["result"]["message"]


async def test_a_fleet_change_id_is_in_the_intent_and_the_outcome_and_a_bad_one_is_refused(
    shared_agent: Agent,
) -> None:
    """The console's fleet change sends one ``change_id`` to every host: each host's audit keeps it on
    both lines of the change, so `agent audit` on any host finds its part of the change."""
    wanted = _live_threshold(shared_agent) + 3
    change = f"chg-{time.time_ns()}"
    body = {
        "request_id": f"fleet-{time.time_ns()}",
        "kind": "threshold",
        "value": wanted,
        "change_id": change,
    }
    async with shared_agent.client() as c:
        bad = await c.post(
            "/v1/actions", json={**body, "request_id": f"bad-{time.time_ns()}", "change_id": "x y"}
        )
        plan = (await c.post("/v1/actions", json=body)).json()
        result = ActionResult.model_validate(
            (await c.post(f"/v1/actions/{plan['action_id']}/confirm")).json()
        )
    assert bad.status_code == 422 and "change_id" in bad.text
    assert result.status == "applied" and result.plan.request.change_id == change
    path = shared_agent.state_dir / "audit.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    mine = [a for a in lines if a["action"].get("action_id") == plan["action_id"]]
    assert [a["phase"] for a in mine] == ["intent", "outcome"]
    assert {a["action"]["change_id"] for a in mine} == {change}
    assert _live_threshold(shared_agent) == wanted
