"""Health findings from the real agent on the simulated engine: they fire when the engine is in trouble.

A saturated engine (more requests arriving than it finishes, a small KV pool) must raise the queue,
time-to-first-token and KV findings; an idle ready engine, a stopped-answering engine (SIGSTOP) and
a restart raise theirs. Thresholds come from the profile's [health] section. Every wait is for a
snapshot that shows the finding, never a sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any

import httpx
import pytest
from daemon_harness import ENGINE_KEY, Agent, read_stream

from agent.wire import Snapshot

pytestmark = pytest.mark.slow

HEALTH = """
[health]
queue_window_s = 3
queue_min_requests = 5
ttft_p99_target_s = 1.0
kv_used_max_pct = 90
idle_after_s = {idle}
stale_after_s = 3
"""


def _with(agent: Agent, *, pool: int | None = None, idle: float = 0) -> Agent:
    text = agent.profile.read_text()
    if pool is not None:
        text = text.replace("[server]\n", f"[server]\nmax_total_tokens = {pool}\n", 1)
    agent.profile.write_text(text + HEALTH.format(idle=idle))
    return agent


def _codes(data: dict[str, Any]) -> set[str]:
    return {f["code"] for f in data["findings"]}


async def _snapshot_with(c: httpx.AsyncClient, since: int, codes: set[str], timeout_s: float) -> Snapshot:
    items = await read_stream(
        c, since, lambda it: it[-1][0] == "snapshot" and codes <= _codes(it[-1][1]), timeout_s
    )
    return Snapshot.model_validate(items[-1][1])


async def test_a_saturated_engine_raises_queue_ttft_and_kv_findings(make_agent: Any) -> None:
    agent = _with(make_agent("sim-saturated"), pool=40_000).start()
    url = agent.wait_state("ready")["engine_url"]
    body = {"text": "word " * 2900, "sampling_params": {"max_new_tokens": 200, "ignore_eos": True}}
    async with (
        httpx.AsyncClient(timeout=300, headers={"Authorization": f"Bearer {ENGINE_KEY}"}) as engine,
        agent.client() as c,
    ):
        since = (await c.get("/v1/status")).json()["last_seq"]
        quiet = await _snapshot_with(c, since, set(), 10)
        assert not _codes(quiet.model_dump()) & {"queue_growing", "ttft_over_target", "kv_nearly_full"}

        async def arrivals() -> None:  # open loop: four a second, more than the engine finishes
            sent: list[asyncio.Task[httpx.Response]] = []
            try:
                while True:
                    sent.append(asyncio.create_task(engine.post(url + "/generate", json=body)))
                    await asyncio.sleep(0.25)  # the arrival rate of the load, not a wait for a result
            finally:
                for task in sent:
                    task.cancel()
                await asyncio.gather(*sent, return_exceptions=True)

        load = asyncio.create_task(arrivals())
        try:
            snap = await _snapshot_with(c, since, {"queue_growing", "ttft_over_target", "kv_nearly_full"}, 90)
        finally:
            load.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await load
    by_code = {f.code: f for f in snap.findings}
    queue, ttft, kv = by_code["queue_growing"], by_code["ttft_over_target"], by_code["kv_nearly_full"]
    assert snap.load.queued is not None and queue.value == snap.load.queued >= 5
    assert queue.since is not None and queue.since <= snap.time - 3
    assert ttft.value is not None and ttft.value > 1.0 and ttft.limit == 1.0 and ttft.unit == "s"
    assert kv.value is not None and kv.value >= 90 and kv.unit == "%"
    assert all(f.action and f.since is not None for f in snap.findings)
    assert [f.severity for f in snap.findings] == sorted(
        (f.severity for f in snap.findings), key=["critical", "warning", "info"].index
    )


async def test_idle_stalled_and_restarted_engines_raise_their_findings(make_agent: Any) -> None:
    agent = _with(make_agent("sim-health"), idle=5).start()
    first_pid = agent.wait_state("ready")["engine_pid"]
    async with agent.client() as c:
        since = (await c.get("/v1/status")).json()["last_seq"]
        idle = await _snapshot_with(c, since, {"no_traffic"}, 30)
        f = next(f for f in idle.findings if f.code == "no_traffic")
        assert f.value is not None and f.value >= 5 and f.since is not None and f.since <= idle.time - 5

        os.kill(first_pid, signal.SIGSTOP)  # alive, but no longer answering: what a hung scheduler does
        try:
            since = (await c.get("/v1/status")).json()["last_seq"]
            stale = await _snapshot_with(c, since, {"telemetry_stale"}, 60)
        finally:
            os.kill(first_pid, signal.SIGCONT)
        f = next(f for f in stale.findings if f.code == "telemetry_stale")
        assert stale.engine_state == "ready" and "/metrics" in f.explanation

        since = (await c.get("/v1/status")).json()["last_seq"]
        assert (await c.post("/v1/engine/restart", json={"drain_timeout_s": 0})).status_code == 202
        restarted = await _snapshot_with(c, since, {"engine_restarted"}, 60)
    f = next(f for f in restarted.findings if f.code == "engine_restarted")
    assert f.severity == "info" and "after a crash" not in f.title and f.value == 1
    assert restarted.engine_pid != first_pid
