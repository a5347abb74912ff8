"""A workload and arrivals through the agent's own door (issue 45 items 1, 2, 4): ``POST /v1/bench``
with the shipped dataset and open-loop rates runs on the real agent's simulated engine, and the
stored result records both; a dataset the agent does not ship is refused by name and audited,
and nothing is read or started."""

from __future__ import annotations

import hashlib

from daemon_harness import Agent, read_stream

from agent.bench.workload import SHIPPED


async def test_a_rate_sweep_of_the_shipped_dataset_runs_through_the_agent(shared_agent: Agent) -> None:
    body = {"mode": "sweep", "concurrency": [1], "request_rates": [20.0, "inf"], "min_requests": 6,
            "repeats": 1, "input_len": 64, "output_len": 8, "drain_wait_s": 0, "operator": "ops",
            "workload": {"kind": "dataset", "dataset": "chat-small.jsonl"}}  # fmt: skip
    async with shared_agent.client() as c:
        since = (await c.get("/v1/status")).json()["last_seq"]
        unknown = await c.post(
            "/v1/bench", json={**body, "workload": {"kind": "dataset", "dataset": "x.jsonl"}}
        )
        started = await c.post("/v1/bench", json=body)
        assert started.status_code == 202, started.text
        bench_id = started.json()["bench_id"]
        await read_stream(
            c,
            since,
            lambda it: any(k == "event" and d["name"] in ("bench.finished", "bench.failed") for k, d in it),
            120,
        )
        stored = (await c.get(f"/v1/bench/{bench_id}")).json()
    assert unknown.status_code == 422
    assert unknown.json()["detail"] == (
        "dataset: not a dataset shipped with the agent; those are: chat-small.jsonl"
    )
    rejected = [a for a in shared_agent.audit_lines() if a["action"].get("kind") == "bench_start"]
    assert any("not a dataset shipped" in str(a["result"].get("message")) for a in rejected), rejected
    assert stored["state"] == "finished", stored.get("error")
    work = stored["workload"]
    assert work["file"] == "chat-small.jsonl"
    assert work["sha256"] == hashlib.sha256((SHIPPED / "chat-small.jsonl").read_bytes()).hexdigest()
    assert [level["request_rate"] for level in stored["levels"]] == [20.0, "inf"]
    assert stored["arrivals"]["process"] == "poisson"
    assert stored["options"]["workload"]["kind"] == "dataset"
