"""``bench/real/round_timing.py`` and ``trace_rounds.py`` against the simulated engine over real HTTP.

Both change the engine's live settings for a measurement (threshold 1, a zero-step path) under a
load they keep themselves; an engine left so would serve the next run wrong. Here the round timer's
three settings are timed on the sim (which follows patch 03's timer and live keys), and both
scripts put back what the engine had, the trace script also when the engine refuses to trace (the
sim has no ``/start_profile``). GPU sessions are too short to find out there.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import httpx
import pytest

from agent.profile.store import load_profile
from agent.sglang import live_control
from agent.sglang.client import EngineClient, EngineError
from agent.sim.server import run_sim
from bench.real import round_timing, trace_rounds

ROOT = Path(__file__).resolve().parents[2]


def _kimi_plain():  # type: ignore[no-untyped-def]
    profile = load_profile(ROOT / "profiles" / "kimi-k25-eagle3.toml")
    spec = profile.speculation.model_copy(update={"zero_step": "plain"})
    return profile.model_copy(update={"speculation": spec})


async def _set_operator_values(url: str) -> None:
    async with httpx.AsyncClient() as http:
        engine = EngineClient(url, http)
        await engine.set_live(adaptive_spec_threshold=40)
        await engine.set_zero_step_path(live_control.ZERO_STEP_VERIFY)


async def _live(url: str) -> tuple[int, str | None]:
    async with httpx.AsyncClient() as http:
        live = await EngineClient(url, http).live_state()
    assert live is not None and live.zero_step is not None
    return live.threshold, live.zero_step.path


async def test_round_timing_times_every_setting_and_puts_the_operators_values_back() -> None:
    async with run_sim(_kimi_plain(), port=0, speedup=50.0, seed=2) as sim:
        await _set_operator_values(sim.url)
        args = argparse.Namespace(
            url=sim.url, baseline=False, concurrency=4, rounds=5, output_len=64, warmup_s=0.2, limit_s=30.0
        )
        results = await round_timing.measure(args)
        for setting in ("zero_verify", "zero_plain", "spec"):
            table = results[setting]["table"]
            assert table is not None and table["remaining"] == 0, setting
            assert table["kinds"][setting]["rounds"] >= 5, table
        assert results["zero_plain"]["zero_step"]["path"] == "plain"
        assert results["zero_verify"]["zero_step"]["path"] == "verify"
        assert results["requests_sent"] >= 4
        assert await _live(sim.url) == (40, "verify")
        lines = round_timing.table_lines(results)
        assert any(line.startswith("| target_forward |") for line in lines)


async def test_trace_rounds_puts_the_operators_values_back_when_the_engine_cannot_trace(
    tmp_path: Path,
) -> None:
    async with run_sim(_kimi_plain(), port=0, speedup=50.0, seed=2) as sim:
        await _set_operator_values(sim.url)
        args = argparse.Namespace(
            url=sim.url,
            baseline=False,
            concurrency=2,
            output_len=64,
            warmup_s=0.1,
            steps=5,
            name="sim",
            out=tmp_path,
            with_stack=False,
            limit_s=5.0,
        )
        with pytest.raises(EngineError):
            await trace_rounds.record(args)
        assert await _live(sim.url) == (40, "verify")


async def test_a_server_without_a_drafter_is_refused_unless_timed_as_a_baseline() -> None:
    profile = load_profile(ROOT / "profiles" / "kimi-k25-baseline.toml")
    async with run_sim(profile, port=0, speedup=50.0) as sim, httpx.AsyncClient() as http:
        with pytest.raises(SystemExit, match="lacks patch 03"):
            async with round_timing.under_load(http, sim.url, 2, 64, baseline=False):
                pytest.fail("the load must not start")
        async with round_timing.under_load(http, sim.url, 2, 64, baseline=True) as session:
            assert session.live is None  # nothing read back, so nothing is put back on exit


def test_unique_prompts_prefill_their_whole_prompt_and_text_prompts_do_not() -> None:
    """The arrival traces need every arrival to prefill: token-id prompts drawn per request (as the
    compare sends them); the text prompt's words are one ``<unk>`` under the tiny models' tokenizer."""
    unique = round_timing.LoadShape(output_len=128, input_len=256, unique=True)
    a, b = unique.body(1), unique.body(2)
    assert len(a["input_ids"]) == 256 and a["input_ids"] != b["input_ids"]
    assert a["sampling_params"]["max_new_tokens"] == 128
    assert "input_ids" not in round_timing.LoadShape(output_len=128).body(1)
