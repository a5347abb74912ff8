"""The simulated engine follows patch 03: the plain 0-step path, its reserve, the catch-up, the live keys."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from agent.profile.schema import Profile
from agent.profile.store import load_profile
from agent.sglang import kv, live_control
from agent.sglang.client import EngineClient, EngineRefused
from agent.sim import costmodel
from agent.sim.calibration import CALIBRATION
from agent.sim.config import sim_config
from agent.sim.engine import Engine
from agent.sim.request import SimRequest
from agent.sim.server import run_sim

ROOT = Path(__file__).resolve().parents[2]


def kimi(path: str) -> Profile:
    profile = load_profile(ROOT / "profiles" / "kimi-k25-eagle3.toml")
    spec = profile.speculation.model_copy(update={"zero_step": path})
    return profile.model_copy(update={"speculation": spec})


def run(engine: Engine, requests: int, new_tokens: int = 16) -> None:
    for _ in range(requests):
        engine.submit(SimRequest(rid=engine.new_rid(), input_len=64, max_new_tokens=new_tokens))
    while (plan := engine.plan_step()) is not None:
        engine.commit_step(plan)


def test_a_plain_zero_step_round_costs_a_decode_step_and_no_draft_pass() -> None:
    batch, kv_tokens = 64, 64 * 2000
    plain = costmodel.zero_step_s(CALIBRATION, batch, kv_tokens, plain=True)
    verify = costmodel.zero_step_s(CALIBRATION, batch, kv_tokens)
    decode = costmodel.decode_step_s(CALIBRATION, batch, kv_tokens)
    extra = CALIBRATION.spec.plain_zero_step
    assert plain == pytest.approx(decode + extra.round_s + extra.request_s * batch)
    assert plain < verify, "no draft-extend pass, a cheaper path"
    assert costmodel.zero_step_s(CALIBRATION, batch, kv_tokens, skip_draft_extend=True, plain=True) == plain


def test_a_batch_at_the_threshold_reserves_a_plain_decodes_kv_on_the_plain_path() -> None:
    for path, want in (("plain", kv.PLAIN_DECODE_RESERVE), ("verify", None)):
        config = sim_config(kimi(path))
        engine = Engine(config, seed=1)
        assert engine.controller is not None
        engine.controller.set_threshold(2)  # every batch of two or more at 0 steps
        run(engine, 4)
        reserve = engine.zero_step.readback()["last_reserve"]
        assert reserve == (want if want is not None else config.reserve_per_decode)
    assert sim_config(kimi("plain")).reserve_per_decode == 8


def test_rounds_are_counted_by_path_and_the_first_drafting_round_catches_up() -> None:
    engine = Engine(sim_config(kimi("plain")), seed=3)
    assert engine.controller is not None
    engine.controller.set_threshold(1)  # never speculate
    run(engine, 3)
    counts = engine.zero_step.readback()
    assert counts["plain_rounds"] > 0 and counts["verify_rounds"] == 0 and counts["catchups"] == 0
    engine.controller.set_threshold(0)
    run(engine, 3)
    assert engine.zero_step.readback()["catchups"] == 0, "fresh requests: nothing was missed"
    engine.controller.set_threshold(1)
    for i in range(3):
        engine.submit(SimRequest(rid=f"long{i}", input_len=64, max_new_tokens=64))
    for _ in range(8):
        plan = engine.plan_step()
        assert plan is not None
        engine.commit_step(plan)
    engine.controller.set_threshold(0)
    while (plan := engine.plan_step()) is not None:
        engine.commit_step(plan)
    after = engine.zero_step.readback()
    assert after["catchups"] == 1 and after["catchup_tokens"] > 0


async def test_the_live_keys_over_http_as_the_patch_answers_them() -> None:
    async with run_sim(kimi("plain"), port=0, speedup=50.0) as sim, httpx.AsyncClient() as http:
        engine = EngineClient(sim.url, http)
        state = await engine.set_zero_step_path(live_control.ZERO_STEP_VERIFY)
        assert state.path == "verify" and state.launch_path == "plain" and state.plain_built
        state = await engine.set_zero_step_path(live_control.ZERO_STEP_PLAIN)
        assert state.path == "plain"
        with pytest.raises(EngineRefused):
            await engine.set_internal_state({live_control.ZERO_STEP_KEY: 2})
        assert await engine.round_timing() is None
        await engine.set_live(adaptive_spec_threshold=1)
        await engine.time_rounds(5)
        table = await engine.round_timing()
        assert table is not None and table["remaining"] == 5
        body = {"text": "w5 w6 w7", "sampling_params": {"max_new_tokens": 32, "temperature": 0.0}}
        answer = await http.post(f"{sim.url}/generate", json=body, timeout=30)
        assert answer.status_code == 200
        table = await engine.round_timing()
        assert table is not None and table["remaining"] == 0
        plain = table["kinds"]["zero_plain"]
        assert plain["rounds"] == 5 and "draft_extend" not in plain["stages"]
        assert plain["stages"]["target_forward"]["gpu_ms"] > 0


async def test_a_verify_launch_refuses_the_plain_path() -> None:
    async with run_sim(kimi("verify"), port=0, speedup=50.0) as sim, httpx.AsyncClient() as http:
        engine = EngineClient(sim.url, http)
        with pytest.raises(EngineRefused):
            await engine.set_zero_step_path(live_control.ZERO_STEP_PLAIN)
        live = await engine.live_state()
        assert live is not None and live.zero_step is not None
        assert live.zero_step.plain_built is False and live.zero_step.path == "verify"
