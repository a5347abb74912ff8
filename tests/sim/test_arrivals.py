"""Issue 36, step 4: the engine model's arrival cost against the real engine of 2026-12-06.

Patch 03's plain 0-step round now costs what a plain decode step costs, and "off" still lost 4-14 %
to a server without a drafter: the rest is in requests arriving. The model charges a cost per arrival
on the speculative server (``calibration.ArrivalCosts``), fitted to the three runs pooled by their
intervals; every figure here is read from the committed result files
(``bench/results/real-h200-2026-12-06``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from agent.profile.store import load_profile
from agent.sim import costmodel
from agent.sim.arrivals import arrival_misfit, pooled_off_over_baseline
from agent.sim.calibration import NO_ARRIVAL_COST, ArrivalCosts
from agent.sim.calibration_h200_big import (
    BASE_TIMING_1206,
    COMPARES_1206,
    H200_ARRIVAL,
    H200_ARRIVAL_PATCHED,
    H200_BIG,
    H200_BIG_ARRIVAL_RECORD,
    H200_PLAIN_ZERO_STEP_1206,
    TIMING_1206,
    plain_zero_step_from,
)
from agent.sim.config import sim_config
from agent.sim.engine import Engine
from agent.sim.request import SimRequest
from agent.sim.zerostep import NEVER_SPECULATE, on_path, record_model, with_arrival, with_zero_step

ROOT = Path(__file__).resolve().parents[2]
RECORD = H200_BIG_ARRIVAL_RECORD


def load(path: str) -> Any:
    return json.loads((ROOT / path).read_text())


@pytest.fixture(scope="module")
def pooled() -> dict[int, Any]:
    return pooled_off_over_baseline([load(path) for path in RECORD.results])


@pytest.fixture(scope="module")
def profiles() -> tuple[Any, Any]:
    return load_profile(ROOT / RECORD.spec_profile), load_profile(ROOT / RECORD.baseline_profile)


def test_the_plain_round_costs_what_a_plain_step_costs_as_the_timing_tables_say() -> None:
    derived = plain_zero_step_from(load(COMPARES_1206[0]), load(TIMING_1206), load(BASE_TIMING_1206))
    assert derived == H200_PLAIN_ZERO_STEP_1206 == RECORD.zero_step == H200_BIG.spec.plain_zero_step
    assert derived.request_s == 0.0 and derived.round_s == pytest.approx(0.00015, abs=5e-6)
    # without the plain server's own outside-the-forward stages the round's extra would read below
    # what c=1 says a round costs: the per-request part is 0, not negative
    assert plain_zero_step_from(load(COMPARES_1206[0]), load(TIMING_1206)).request_s == 0.0


def test_the_record_is_its_runs_pooled_by_their_intervals(pooled: dict[int, Any]) -> None:
    assert [c for c, _ in RECORD.off_over_baseline] == list(pooled) == [1, 16, 64, 128]
    for concurrency, recorded in RECORD.off_over_baseline:
        assert recorded == pytest.approx(pooled[concurrency].ratio, abs=0.0005), concurrency
    assert pooled[64].runs == 3 and pooled[64].half_width < 0.065, "the 6×8 s run carries c=64"
    # the tight run outweighs the loose ones: near its own 0.870, not the plain mean's 0.847
    tight = load(COMPARES_1206[2])["levels"][0]
    alone = tight["off"]["output_throughput"] / tight["baseline"]["output_throughput"]
    assert abs(pooled[64].ratio - alone) < 0.01


def test_with_the_fitted_arrival_cost_the_model_lies_inside_every_level_and_without_it_does_not(
    pooled: dict[int, Any], profiles: tuple[Any, Any]
) -> None:
    spec, base = profiles
    model = record_model(RECORD, spec, base, H200_BIG)

    def outside(figures: dict[int, float]) -> list[int]:
        return [c for c, r in figures.items() if abs(math.log(r / pooled[c].ratio)) > pooled[c].half_width]

    assert outside(model) == [], model
    assert all(abs(model[c] - r) < 0.025 for c, r in RECORD.off_over_baseline), model
    bare = record_model(dataclasses.replace(RECORD, arrival=NO_ARRIVAL_COST), spec, base, H200_BIG)
    assert 64 in outside(bare), "the plain round and the draft's extend alone leave c=64 above its interval"


def test_the_fitted_arrival_cost_is_where_the_misfit_is_least(
    pooled: dict[int, Any], profiles: tuple[Any, Any]
) -> None:
    misfit = arrival_misfit(RECORD, *profiles, H200_BIG, pooled)
    at = misfit(H200_ARRIVAL.request_s)
    assert at < misfit(H200_ARRIVAL.request_s - 0.0002) and at < misfit(H200_ARRIVAL.request_s + 0.0002)
    assert at < len(pooled), "a chi-square below its degrees of freedom: the one number fits the four levels"


def test_the_patched_arrival_path_brings_off_to_the_goal_in_the_model(profiles: tuple[Any, Any]) -> None:
    patched = dataclasses.replace(RECORD, arrival=H200_ARRIVAL_PATCHED)
    model = record_model(patched, *profiles, H200_BIG)
    assert all(r >= 0.965 for r in model.values()), model
    assert model[128] > model[1], "what is left then is the plain round's 0.15 ms, which counts most alone"


def _prefill_pass(cal: Any, threshold: int | None) -> tuple[Engine, float]:
    """One 256-token arrival into the speculative profile's engine (live threshold as given)."""
    spec = on_path(load_profile(ROOT / RECORD.spec_profile), "plain")
    engine = Engine(sim_config(spec, calibration=cal), seed=0)
    assert engine.controller is not None
    if threshold is not None:
        engine.controller.set_threshold(threshold)
    engine.submit(SimRequest(rid="a", input_len=256, max_new_tokens=8, ignore_eos=True))
    plan = engine.plan_step()
    assert plan is not None and plan.kind == "prefill"
    engine.commit_step(plan)
    return engine, plan.duration


def test_an_arrival_costs_the_speculative_server_its_prefill_the_drafts_extend_and_the_arrival_cost() -> None:
    cal = with_arrival(with_zero_step(H200_BIG, H200_PLAIN_ZERO_STEP_1206, "plain"), ArrivalCosts(0.002))
    plain = costmodel.prefill_step_s(cal, 256, 256 * 128, speculative=False)
    _, duration = _prefill_pass(cal, NEVER_SPECULATE)
    assert duration == pytest.approx(plain + costmodel.draft_pass_s(cal, 256) + 0.002)


def test_on_the_patched_path_an_arrival_at_0_steps_is_a_plain_prefill_and_the_draft_catches_up_later() -> (
    None
):
    cal = with_arrival(
        with_zero_step(H200_BIG, H200_PLAIN_ZERO_STEP_1206, "plain"), ArrivalCosts(0.002, at_zero_steps=False)
    )
    plain = costmodel.prefill_step_s(cal, 256, 256 * 128, speculative=False)
    engine, duration = _prefill_pass(cal, NEVER_SPECULATE)
    assert duration == pytest.approx(plain), "at 0 steps: what a server without a drafter pays"
    assert engine.zero_step.readback()["plain_prefills"] == 1, "counted as patch 03 counts it"
    for _ in range(2):  # two plain rounds at 0 steps
        plan = engine.plan_step()
        assert plan is not None and plan.steps == 0
        engine.commit_step(plan)
    assert engine.controller is not None
    engine.controller.set_threshold(0)  # speculation resumes: the first drafting round catches up
    while engine.zero_step.counters["catchups"] == 0 and (plan := engine.plan_step()) is not None:
        engine.commit_step(plan)
    assert engine.zero_step.counters["catchups"] == 1
    assert engine.zero_step.counters["catchup_tokens"] >= 256, "the deferred extend over the prompt"
    # a speculating batch still pays the arrival in full, and that prefill is not a plain one
    speculating_engine, speculating = _prefill_pass(cal, 0)
    assert speculating == pytest.approx(plain + costmodel.draft_pass_s(cal, 256) + 0.002)
    assert speculating_engine.zero_step.readback()["plain_prefills"] == 0
