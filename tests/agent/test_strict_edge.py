"""Strict types at the edge (issue 25): no boolean or text where the API wants a number, no number
where it wants a boolean; each refused with a 422 that names the field, and nothing changes. Against a
real ``agent serve --engine sim`` on its socket."""

from __future__ import annotations

from typing import Any

import pytest
from daemon_harness import Agent


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("PUT", "/v1/telemetry", {"tick_interval_s": True}, "tick_interval_s"),
        ("PUT", "/v1/telemetry", {"tick_interval_s": "2"}, "tick_interval_s"),
        ("POST", "/v1/engine/restart", {"drain_timeout_s": "5"}, "drain_timeout_s"),
        ("POST", "/v1/engine/stop", {"drain_timeout_s": False}, "drain_timeout_s"),
        ("POST", "/v1/agent/stop", {"engine_too": 1}, "engine_too"),
        ("POST", "/v1/agent/stop", {"engine_too": "true"}, "engine_too"),
        ("PUT", "/v1/profiles/x", {"toml": 12}, "toml"),
        ("POST", "/v1/actions", {"request_id": "strict-0001", "kind": "threshold", "value": 3.0}, "value"),
        # issue 38: each names the field and what that kind takes, not pydantic's list of types
        ("POST", "/v1/actions", {"request_id": "strict-0003", "kind": "threshold", "value": 4.0}, "value"),
        ("POST", "/v1/actions", {"request_id": "strict-0004", "kind": "steps", "value": 1.5}, "value"),
        ("POST", "/v1/actions", {"request_id": "strict-0005", "kind": "steps", "value": []}, "value"),
        ("POST", "/v1/actions", {"request_id": "strict-0006", "kind": "threshold", "value": {}}, "value"),
        ("POST", "/v1/actions", {"request_id": 12345678, "kind": "threshold", "value": 3}, "request_id"),
    ],
    ids=lambda v: v if isinstance(v, str) and not v.startswith("/") else None,
)
async def test_a_wrong_type_is_refused_naming_the_field_and_changes_nothing(
    shared_agent: Agent, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    before = shared_agent.status()
    async with shared_agent.client() as c:
        answer = await c.request(method, path, json=body)
        assert answer.status_code == 422, answer.text
        detail = answer.json()["detail"]
        assert any(item["loc"][:2] == ["body", field] for item in detail), detail
        # an action's value says what its kind takes (the catalogue's words), any other field its type
        said = (
            f"{body['kind']} takes a whole number"
            if path == "/v1/actions" and field == "value"
            else "Input should be"
        )
        assert all(said in item["msg"] for item in detail), detail
        after = (await c.get("/v1/status")).json()
    assert after["tick_interval_s"] == before["tick_interval_s"]
    assert after["engine_pid"] == before["engine_pid"] and after["engine_state"] == "ready"
    assert shared_agent.proc is not None and shared_agent.proc.poll() is None  # the agent still runs


async def test_the_right_types_still_go_through(shared_agent: Agent) -> None:
    async with shared_agent.client() as c:
        tick = await c.put("/v1/telemetry", json={"tick_interval_s": 1})  # an integer is a number
        assert tick.status_code == 200 and tick.json() == {"tick_interval_s": 1.0}
        plan = await c.post(
            "/v1/actions", json={"request_id": "strict-0002", "kind": "threshold", "value": 9}
        )
        assert plan.status_code == 200 and plan.json()["mode"] in ("live", "noop"), plan.text
        await c.post(f"/v1/actions/{plan.json()['action_id']}/cancel", json={"operator": "test"})
