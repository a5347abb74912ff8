"""The demo's traffic against the real demo stack (``DemoStack``: agent, simulated engine, traffic).

It follows the engine through a restart (the restarted engine listens on a new port): the traffic
must be back within 10 s of the agent's ``engine.ready``. It pauses while the agent benchmarks, so
the benchmark measures the engine alone. And the GPU screen's data is the simulated 8-GPU host,
labelled as simulated, moving with the load. Every wait is for an item on the agent's stream.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest

from agent.wire import Snapshot
from console.demo.stack import DemoStack

pytestmark = pytest.mark.slow

Item = tuple[str, dict[str, Any]]


@pytest.fixture
def stack() -> Iterator[DemoStack]:
    demo = DemoStack(peak=8, period_s=20.0)
    try:
        demo.start()
        yield demo
    finally:
        demo.stop()


def _client(stack: DemoStack) -> httpx.AsyncClient:
    token = stack.token_path.read_text().strip()
    return httpx.AsyncClient(
        transport=httpx.AsyncHTTPTransport(uds=str(stack.socket_path)),
        base_url="http://agent",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )


async def _items(c: httpx.AsyncClient, since: int) -> AsyncIterator[Item]:
    async with c.stream("GET", "/v1/stream", params={"since": since}, timeout=None) as response:
        kind = None
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: ") and kind:
                yield kind, json.loads(line.removeprefix("data: "))


async def _until(stream: AsyncIterator[Item], done: Callable[[Item], bool], timeout_s: float) -> Item:
    deadline = time.monotonic() + timeout_s
    async for item in stream:
        if done(item):
            return item
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s"
    raise AssertionError("the stream ended")


def _flowing(pid: int | None = None) -> Callable[[Item], bool]:
    def check(item: Item) -> bool:
        kind, d = item
        return (
            kind == "snapshot"
            and (d["load"]["running"] or 0) >= 1
            and (pid is None or d["engine_pid"] == pid)
        )

    return check


async def test_demo_traffic_follows_a_restart_within_10_s_and_pauses_for_a_benchmark(
    stack: DemoStack,
) -> None:
    async with _client(stack) as c, contextlib.aclosing(_items(c, 0)) as stream:
        _, first = await _until(stream, _flowing(), 60)
        old_pid = first["engine_pid"]
        # The simulated GPUs follow the load of the tick before: the next busy tick shows it.
        _, busy = await _until(
            stream, lambda it: _flowing()(it) and it[1]["gpus"]["devices"][0]["utilization_pct"], 10
        )
        gpus = Snapshot.model_validate(busy).gpus

        plan = (await c.post("/v1/actions", json={"request_id": f"topk-{time.time_ns()}", "kind": "topk",
                                                  "value": 4})).json()  # fmt: skip
        assert plan["mode"] == "restart"
        await c.post(f"/v1/actions/{plan['action_id']}/confirm")
        _, ready = await _until(
            stream,
            lambda it: (
                it[0] == "event" and it[1]["name"] == "engine.ready" and it[1]["data"]["pid"] != old_pid
            ),
            90,
        )
        _, back = await _until(stream, _flowing(ready["data"]["pid"]), 30)
        assert back["time"] - ready["time"] <= 10.0, "the demo traffic came back too late after the restart"

        body = {"mode": "sweep", "concurrency": [1], "requests_per_level": 10, "input_len": 64, "output_len": 128,
                "warmup_requests": 0, "min_level_seconds": 0}  # fmt: skip
        started = await c.post("/v1/bench", json=body)
        assert started.status_code == 202, started.text
        _, began = await _until(stream, lambda it: it[0] == "event" and it[1]["name"] == "bench.started", 30)
        during: list[int] = []

        def bench_over(item: Item) -> bool:
            kind, d = item
            if kind == "snapshot" and d["time"] >= began["time"] + 2.5:  # its requests in flight are cut off
                during.append(d["load"]["running"] or 0)
            return kind == "event" and d["name"] in ("bench.finished", "bench.failed")

        _, ended = await _until(stream, bench_over, 120)
        assert ended["name"] == "bench.finished", ended
        assert during and max(during) <= 1, during  # the benchmark's one stream alone
        _, resumed = await _until(stream, lambda it: _flowing()(it) and it[1]["load"]["running"] >= 1, 30)
        assert resumed["time"] - ended["time"] <= 10.0
    assert gpus.source == "simulated" and gpus.detail and gpus.detail.startswith("simulated host")
    assert len(gpus.devices) == 8 and all("RTX PRO 6000" in (g.name or "") for g in gpus.devices)
    assert all((g.utilization_pct or 0) > 0 and g.processes[0].pid == old_pid for g in gpus.devices)
