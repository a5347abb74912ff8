"""A request id is one operator's request: a resend by another operator is refused, and audited
with the second asker's name; the first plan stays the first asker's.

Before, a repeated ``request_id`` with another ``operator`` returned the first plan, so the second
asker was never named anywhere (and could confirm a plan the audit gives to the first). Refusing
(409) keeps "who asked" exact; recording both on one plan would leave its confirm with two owners.
Against the real ``agent serve --engine sim``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from daemon_harness import Agent

pytestmark = pytest.mark.slow


def _audit(agent: Agent) -> list[dict[str, Any]]:
    path = agent.state_dir / "audit.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


async def test_a_request_id_resent_by_another_operator_is_refused_and_audited_with_that_operator(
    shared_agent: Agent,
) -> None:
    rid = f"owner-{time.time_ns()}"
    body = {"request_id": rid, "kind": "threshold", "value": 61, "operator": "alice"}
    async with shared_agent.client() as c:
        first = await c.post("/v1/actions", json=body)
        assert first.status_code == 200
        again = await c.post("/v1/actions", json=body)  # the same asker's resend: the same plan
        assert again.status_code == 200 and again.json()["action_id"] == first.json()["action_id"]
        other = await c.post("/v1/actions", json=body | {"operator": "bob"})
        assert other.status_code == 409, other.text
        said = other.json()["detail"]
        assert rid in said and "alice" in said and "bob" in said and "'" not in said, said
        confirmed = await c.post(f"/v1/actions/{first.json()['action_id']}/confirm")
        assert confirmed.json()["status"] == "applied"
    lines = _audit(shared_agent)
    refused = [r for r in lines if r["action"].get("conflicting_request_id") == rid]
    assert len(refused) == 1 and refused[0]["operator"] == "bob", refused
    assert refused[0]["result"]["status"] == "rejected" and "alice" in refused[0]["result"]["message"]
    applied = [r for r in lines if r["action"].get("request_id") == rid and r["phase"] == "outcome"]
    assert [r["operator"] for r in applied] == ["alice"]
