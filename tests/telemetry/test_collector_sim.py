"""The Collector against the simulated SGLang engine over real HTTP, under real (simulated) load."""

from __future__ import annotations

import asyncio

import httpx

from agent.sim.server import run_sim
from agent.telemetry.collector import Collector, Identity, Observation
from agent.telemetry.nvml import FixtureSampler

from .conftest import GPU, profile

API_KEY = "sk-sim-telemetry-5150"
TICK_S = 0.1
"""Ticks 10x faster than the daemon's default; the sim runs 20x faster than real time."""


async def test_collector_follows_a_loaded_sim() -> None:
    base = profile("local-sim")
    threshold = 4  # low, so that a few requests cross it (the shipped profile's crossover is far higher)
    prof = base.model_copy(
        update={"speculation": base.speculation.model_copy(update={"threshold": threshold})}
    )
    async with run_sim(prof, port=0, speedup=20, seed=7, api_key=API_KEY) as sim:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        async with httpx.AsyncClient(timeout=60.0) as http:
            gpus = FixtureSampler(GPU / "h200x2-loaded" / "nvml-loaded.json", scale_to=8)
            collector = Collector(sim.url, prof, gpus, http, api_key=API_KEY)
            idle = await collector.tick("ready", 1)
            assert idle.metrics_source == "metrics"
            assert idle.speculation.threshold == threshold and idle.speculation.threshold_available

            body = {"text": "hello " * 200, "sampling_params": {"max_new_tokens": 600, "ignore_eos": True}}
            load = [
                asyncio.create_task(http.post(sim.url + "/generate", json=body, headers=headers))
                for _ in range(threshold * 3)
            ]
            snaps: list[Observation] = []

            def seen_load() -> bool:
                busy = [s for s in snaps if (s.load.running or 0) >= threshold]
                return bool(busy) and any((s.throughput.output_tok_s or 0) > 0 for s in snaps)

            async with asyncio.timeout(60):
                while not seen_load():  # poll the condition at the tick rate; there is no event for it
                    snaps.append(await collector.tick("ready", 1))
                    await asyncio.sleep(TICK_S)
            responses = await asyncio.gather(*load)
            assert all(r.status_code == 200 for r in responses)

    busy = next(s for s in snaps if (s.load.running or 0) >= threshold)
    assert busy.speculation.configured
    assert busy.speculation.on is False and busy.speculation.off_reason == "above_threshold"
    assert busy.kv.pool_tokens == sim.server.config.pool_tokens
    assert busy.kv.used_tokens is not None and busy.kv.used_tokens > 0
    assert busy.kv.reserved_tokens == busy.load.running * (busy.kv.reserve_per_request_on or 0)
    rates = [s.throughput.output_tok_s for s in snaps if s.throughput.output_tok_s]
    assert rates and max(rates) > 0
    for snap in snaps:
        assert API_KEY not in snap.snapshot(1, Identity("local-sim", False, "sim")).model_dump_json()
    assert collector.server_info is not None and API_KEY not in repr(collector.server_info)
    await collector.aclose()
