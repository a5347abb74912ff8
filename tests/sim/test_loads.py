"""``/v1/loads`` over real HTTP: the per-rank load SGLang's router polls from every worker.

The keys are checked against the pinned wheel's own ``LoadSnapshot`` (its struct fields and its
sections), and the counts against the engine's state while requests run.
"""

from __future__ import annotations

import ast
import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from agent.profile.schema import Profile
from agent.sglang import paths
from agent.sim.server import RunningSim, run_sim


@pytest.fixture
async def sim(local_sim: Profile) -> AsyncIterator[RunningSim]:
    async with run_sim(local_sim, port=0, speedup=1, seed=3) as running:
        yield running


def _snapshot_fields(sglang_src: Path) -> tuple[set[str], set[str]]:
    """``LoadSnapshot``'s annotated fields in the wheel, split into core scalars and sections."""
    tree = ast.parse((sglang_src / "srt/managers/load_snapshot.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "LoadSnapshot")
    fields = {
        n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    sections = {"memory", "speculative", "lora", "disaggregation", "queues"}
    return fields - sections, sections


async def test_loads_have_the_wheels_core_keys_and_count_the_running_requests(
    sim: RunningSim, sglang_src: Path
) -> None:
    core, sections = _snapshot_fields(sglang_src)
    body = {"text": "hello " * 16, "sampling_params": {"max_new_tokens": 400, "ignore_eos": True}}
    async with httpx.AsyncClient(base_url=sim.url, timeout=30) as client:
        tasks = [asyncio.create_task(client.post(paths.GENERATE, json=body)) for _ in range(3)]
        async with asyncio.timeout(20):
            while len(sim.server.engine.running) < 3:
                await asyncio.sleep(0.01)
        answer = await client.get(paths.LOADS, params={"include": "core,disagg,queues,memory"})
        for task in tasks:
            task.cancel()
    assert answer.status_code == 200
    data = answer.json()
    (load,) = data["loads"]
    assert core <= set(load), f"missing core keys: {core - set(load)}"
    assert set(load) - core <= sections
    assert load["num_running_reqs"] == 3
    assert load["num_used_tokens"] > 0 and 0 < load["token_usage"] < 1
    assert load["max_running_requests"] == sim.server.config.max_running_requests
    assert load["queues"]["waiting"] == load["num_waiting_reqs"]


async def test_only_core_when_asked_and_a_wrong_section_is_refused(sim: RunningSim) -> None:
    async with httpx.AsyncClient(base_url=sim.url, timeout=10) as client:
        core = (await client.get(paths.LOADS, params={"include": "core"})).json()["loads"][0]
        bad = await client.get(paths.LOADS, params={"include": "core,nonsense"})
    assert "queues" not in core and "disaggregation" not in core
    assert bad.status_code == 400 and "nonsense" in bad.json()["detail"]
