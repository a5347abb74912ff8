"""The Bench screen says where a run ran (GPUs, driver, CUDA, SGLang, attention backend, model,
profile), in the words ``agent bench show`` prints, and an older run as "not recorded"."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from console_testkit import RunningAgent, text_of, until

from agent.bench.provenance import agent_context, environment, gpu_facts
from agent.bench.store import BenchStore, new_bench_id
from agent.profile.store import load_profile
from agent.sglang.info_view import parse_server_info
from agent.telemetry.nvml import FixtureSampler
from agent.wire.bench_env import NOT_RECORDED
from agent.wire.bench_result import BenchResult
from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.bench import BenchScreen

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "profiles" / "kimi-k25-eagle3.toml"


def _environment() -> dict[str, Any]:
    info = parse_server_info(
        json.loads((REPO / "tests/fixtures/sglang-0.5.23-real/server_info.json").read_text())
    )
    gpus, _ = gpu_facts(
        FixtureSampler(REPO / "tests/fixtures/gpu/h200/nvml.json").sample(), "the agent's telemetry"
    )
    assert gpus is not None
    ctx = agent_context(load_profile(PROFILE), PROFILE, None, "sim")
    return environment(info, ctx) | {"gpus": gpus.model_dump()}


def _store(agent: RunningAgent, env: dict[str, Any] | None) -> str:
    bench_id = new_bench_id(time.time())
    arm = {"output_throughput": 300.0, "output_throughput_ci": [290.0, 310.0], "repeats": 2, "window_s": 3.0,
           "concurrency": 1.0}  # fmt: skip
    record: dict[str, Any] = {
        "bench_id": bench_id,
        "mode": "compare",
        "state": "finished",
        "created_at": time.time(),
        "finished_at": time.time(),
        "levels": [{"concurrency": c, "on": arm, "off": arm} for c in (1, 8)],
        "recommended_threshold": 0,
        "recommendation": {"reason": "on is ahead."},
    }
    if env is not None:
        record["environment"] = env
    BenchStore(agent.state_dir).save(BenchResult.model_validate(record))
    return bench_id


async def _table(agent: RunningAgent, bench_id: str, marker: str) -> str:
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(160, 45)) as pilot:
        await until(lambda: app.model.latest is not None, what="a snapshot")
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        await until(lambda: screen.shown_result == bench_id, what="the newest run shown")
        text = await until(lambda: marker in text_of(app, "#bench-table") and text_of(app, "#bench-table"),
                           what="where it ran")  # fmt: skip
        return " ".join(text.split())


async def test_a_result_shows_the_hardware_and_software_it_ran_on(agent: RunningAgent) -> None:
    words = await _table(agent, _store(agent, _environment()), "GPUs:")
    assert "GPUs: 1 × NVIDIA H200, driver 580.159.04, CUDA 13.0 (driver)" in words
    assert "server: SGLang 0.5.23, attention triton, model /tmp/models/tiny-llama" in words
    assert "profile: kimi-k25-eagle3 (sha256 " in words


async def test_an_older_result_says_not_recorded(agent: RunningAgent) -> None:
    words = await _table(agent, _store(agent, None), "where it ran:")
    assert f"where it ran: {NOT_RECORDED}" in words
