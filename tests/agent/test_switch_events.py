"""``agent serve --engine sim`` as a subprocess: moving the threshold through the API under load puts
"speculation switched" events on the stream, next to the snapshots that show the switch."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from daemon_harness import ENGINE_KEY, Agent, read_stream

pytestmark = pytest.mark.slow

Items = list[tuple[str, dict[str, Any]]]


async def _set_threshold(client: httpx.AsyncClient, value: int) -> dict[str, Any]:
    body = {"request_id": f"switch-{value}-{time.time_ns()}", "kind": "threshold", "value": value}
    plan = (await client.post("/v1/actions", json=body)).json()
    assert plan["mode"] == "live", plan
    result: dict[str, Any] = (await client.post(f"/v1/actions/{plan['action_id']}/confirm")).json()
    assert result["status"] == "applied", result
    return result


def _events(items: Items, name: str) -> list[dict[str, Any]]:
    return [d for k, d in items if k == "event" and d["name"] == name]


async def test_moving_the_threshold_under_load_publishes_speculation_switched(make_agent: Any) -> None:
    agent: Agent = make_agent("sim-switch").start()
    url = agent.wait_state("ready")["engine_url"]
    body = {"text": "hello " * 64, "sampling_params": {"max_new_tokens": 4000, "ignore_eos": True}}
    async with httpx.AsyncClient(timeout=300, headers={"Authorization": f"Bearer {ENGINE_KEY}"}) as engine:
        load = [asyncio.create_task(engine.post(url + "/generate", json=body)) for _ in range(4)]
        try:
            async with agent.client() as c:
                await c.put("/v1/telemetry", json={"tick_interval_s": 0.25})
                since = (await c.get("/v1/status")).json()["last_seq"]
                await read_stream(
                    c,
                    since,
                    lambda it: any(
                        k == "snapshot" and (d["load"]["running"] or 0) >= 4 and d["speculation"]["on"]
                        for k, d in it
                    ),
                    60,
                )
                await _set_threshold(c, 2)  # 4 running >= 2: the server stops drafting
                # The switch shows in the gauges, the threshold in /server_info's read-back, which the
                # collector reads every few ticks: the two events may come a tick or two apart.
                off_items = await read_stream(
                    c,
                    since,
                    lambda it: (
                        bool(_events(it, "speculation.off")) and bool(_events(it, "speculation.threshold"))
                    ),
                    60,
                )
                mark = off_items[-1][1]["seq"]
                await _set_threshold(c, 0)  # no threshold: speculate at every batch size
                on_items = await read_stream(c, mark, lambda it: bool(_events(it, "speculation.on")), 60)
        finally:
            for task in load:
                task.cancel()
            await asyncio.gather(*load, return_exceptions=True)
    (off,) = _events(off_items, "speculation.off")
    assert off["kind"] == "speculation"
    assert off["data"]["reason"] == "above_threshold" and off["data"]["running"] >= 2
    assert "at or above the threshold of 2" in off["message"]
    # the event sits next to the first snapshot that shows the switch, with that snapshot's time
    before = [d for k, d in off_items if k == "snapshot" and d["seq"] < off["seq"]]
    assert before[-1]["speculation"]["on"] is False and before[-1]["time"] == off["time"]
    assert _events(off_items, "speculation.threshold")  # the live threshold change is seen too
    (on,) = _events(on_items, "speculation.on")
    assert on["data"]["steps"] > 0 and on["seq"] > off["seq"]
