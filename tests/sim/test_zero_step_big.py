"""Issue 23, step 4: the engine model's 0-step round against the GPU-bound real engine, before and after patch 03.

Every figure is read from the committed result files (``agent.sim.calibration_h200_big`` names them):
the plain path's costs are derived from the timing table and the c = 1 comparison, and the model's
off ÷ baseline with them must lie inside the real comparison's noise band at every level; SGLang's
own path keeps its fit to the runs before the patch. Kimi's plain estimate is the H200 figure scaled
by memory bandwidth.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from agent.profile.schema import Profile
from agent.profile.store import load_profile
from agent.sim.arrivals import pooled_off_over_baseline
from agent.sim.calibration import (
    CALIBRATION,
    H200_HBM_BYTES_S,
    H200_PLAIN_ZERO_STEP,
    KIMI_HBM_BYTES_S,
    ZERO_STEP_TOLERANCE,
    ZeroStepCosts,
    ZeroStepRecord,
    scaled,
)
from agent.sim.calibration_h200_big import (
    BASELINE_TOLERANCE,
    COMPARE,
    H200_BIG,
    H200_BIG_PLAIN_RECORD,
    H200_BIG_RECORDS,
    H200_BIG_VERIFY_RECORD,
    PLAIN_ROUND_KIND,
    SHARED_STAGES,
    TIMING,
    fit_target,
    measured_baseline,
    plain_zero_step_from,
)
from agent.sim.zerostep import (
    baseline_throughput,
    equal_load_levels,
    measured_off_over_baseline,
    ratio_band,
    record_model,
    with_zero_step,
)

ROOT = Path(__file__).resolve().parents[2]


def load(path: str) -> Any:
    return json.loads((ROOT / path).read_text())


def profiles(record: ZeroStepRecord) -> tuple[Profile, Profile]:
    return load_profile(ROOT / record.spec_profile), load_profile(ROOT / record.baseline_profile)


def outside(model: dict[int, float], band: dict[int, tuple[float, float]]) -> dict[int, str]:
    return {
        c: f"model {r:.3f}, real {band[c][0]:.3f} … {band[c][1]:.3f}"
        for c, r in model.items()
        if not band[c][0] <= r <= band[c][1]
    }


def test_the_plain_costs_are_the_timing_table_and_the_one_stream_comparison() -> None:
    derived = plain_zero_step_from(load(COMPARE), load(TIMING))
    assert derived == H200_PLAIN_ZERO_STEP == H200_BIG_PLAIN_RECORD.zero_step
    # the calibration carries the plain round as it is since 2026-12-06 (tests/sim/test_arrivals.py)
    # what the derivation reads: the plain round's GPU time outside the decode forward and the sample
    stages = load(TIMING)[PLAIN_ROUND_KIND]["table"]["kinds"][PLAIN_ROUND_KIND]["stages"]
    outside_graph = sum(s["gpu_ms"] for n, s in stages.items() if n not in SHARED_STAGES)
    assert 0.4 < outside_graph < 0.5 and stages["prepare"]["gpu_ms"] > 0.8 * outside_graph
    batch = load(TIMING)[PLAIN_ROUND_KIND]["table"]["kinds"][PLAIN_ROUND_KIND]["mean_batch_size"]
    at_batch = derived.round_s + derived.request_s * batch
    assert at_batch == pytest.approx(outside_graph / 1000.0, abs=1e-6)


@pytest.mark.parametrize("name", sorted(H200_BIG_RECORDS))
def test_the_records_are_what_their_result_files_say(name: str) -> None:
    record = H200_BIG_RECORDS[name]
    results = [load(path) for path in record.results]
    for result in results:
        assert result["options"]["input_len"] == record.input_len
        assert result["options"]["output_len"] == record.output_len
    pooled = measured_off_over_baseline(results)
    held = equal_load_levels(results)
    if record.arrival is not None and record.arrival.request_s:
        # runs of different levels, pooled by their intervals: every level some run held
        pooled = {c: p.ratio for c, p in pooled_off_over_baseline(results).items()}
        held = sorted(set().union(*(equal_load_levels([r]) for r in results)))
    levels = [c for c, _ in record.off_over_baseline]
    assert levels == held, "every level where both arms held the load, no other"
    for concurrency, recorded in record.off_over_baseline:
        assert recorded == pytest.approx(pooled[concurrency], abs=0.0005), f"{name}, c={concurrency}"
    spec, _ = profiles(record)
    assert spec.speculation.skip_zero_step_draft_extend == record.skip_zero_step_draft_extend


def test_on_the_plain_path_the_model_lies_inside_the_real_noise_band() -> None:
    record = H200_BIG_PLAIN_RECORD
    spec, base = profiles(record)
    band = ratio_band([load(path) for path in record.results])
    model = record_model(record, spec, base, H200_BIG)
    assert model.keys() == {c for c, _ in record.off_over_baseline}
    assert not outside(model, band), outside(model, band)

    # The band tells paths apart: SGLang's verify costs on the same levels fall out of it, and so does
    # the timing table's extra charged whole to every round (0.45 ms at one request too).
    verify = record_model(
        dataclasses.replace(record, zero_step=H200_BIG_VERIFY_RECORD.zero_step), spec, base, H200_BIG
    )
    assert outside(verify, band).keys() >= {16, 64}
    batch = load(TIMING)[PLAIN_ROUND_KIND]["table"]["kinds"][PLAIN_ROUND_KIND]["mean_batch_size"]
    flat = ZeroStepCosts(
        round_s=H200_PLAIN_ZERO_STEP.round_s + batch * H200_PLAIN_ZERO_STEP.request_s, request_s=0.0
    )
    per_round = record_model(dataclasses.replace(record, zero_step=flat), spec, base, H200_BIG)
    assert 1 in outside(per_round, band)


def test_on_the_verify_path_the_model_keeps_the_runs_before_patch_03() -> None:
    record = H200_BIG_VERIFY_RECORD
    spec, base = profiles(record)
    model = record_model(record, spec, base, H200_BIG)
    for concurrency, ratio in record.off_over_baseline:
        assert abs(model[concurrency] - ratio) <= ZERO_STEP_TOLERANCE, (
            f"c={concurrency}: model {model[concurrency]:.3f}, measured {ratio:.3f}; "
            "python -m bench.studies.zero_step_tax --deployment h200-big --fit fits the costs again"
        )
    band = ratio_band([load(path) for path in record.results])
    assert not outside(model, band), outside(model, band)
    # and the plain path's costs would not give these runs back
    plain = record_model(dataclasses.replace(record, zero_step=H200_PLAIN_ZERO_STEP), spec, base, H200_BIG)
    assert outside(plain, band).keys() == set(band)


def test_the_model_of_the_target_gives_back_the_baseline_arms() -> None:
    """The ratios mean something only if the plain step is the real one: the baseline arms (the mean of
    the runs per level, before and after the patch) within ``BASELINE_TOLERANCE``."""
    _, base = profiles(H200_BIG_PLAIN_RECORD)
    paths = (*H200_BIG_VERIFY_RECORD.results, *H200_BIG_PLAIN_RECORD.results)
    measured = measured_baseline([load(path) for path in paths])
    assert list(measured) == [1, 4, 16, 32, 64, 128]
    for concurrency, figure in measured.items():
        model = baseline_throughput(base, concurrency, 256, 128, H200_BIG)
        assert abs(model / figure - 1) <= BASELINE_TOLERANCE, (concurrency, model, figure)
    # what the fit leaves: "within 9.1 % at every level", as the calibration's docstring says
    assert fit_target(base, measured, rounds=0)[1] < 0.0915


def test_kimis_plain_estimate_is_the_h200_figure_scaled_by_memory_bandwidth() -> None:
    factor = H200_HBM_BYTES_S / KIMI_HBM_BYTES_S
    assert CALIBRATION.spec.plain_zero_step == scaled(H200_PLAIN_ZERO_STEP, factor)
    assert CALIBRATION.target.experts_read_s == pytest.approx(63e9 / KIMI_HBM_BYTES_S, rel=0.02)
    assert CALIBRATION.spec.plain_zero_step.round_s == pytest.approx(
        H200_PLAIN_ZERO_STEP.round_s * factor, rel=1e-3
    )
    # cheaper than SGLang's own path on Kimi as well, which also pays the draft-extend pass
    plain, verify = CALIBRATION.spec.plain_zero_step, CALIBRATION.spec.zero_step
    assert plain.round_s + 125 * plain.request_s < verify.round_s + 125 * verify.request_s + 0.005


def test_the_noise_band_adds_the_arms_intervals_and_spans_the_runs() -> None:
    def run(off: float, off_rel: float | None, base: float, base_rel: float) -> dict[str, Any]:
        return {"levels": [{"concurrency": 4,
                            "off": {"output_throughput": off, "output_throughput_ci_rel": off_rel, "concurrency_reached": True},
                            "baseline": {"output_throughput": base, "output_throughput_ci_rel": base_rel, "concurrency_reached": off_rel is not None}}]}  # fmt: skip

    (lo, hi) = ratio_band([run(90.0, 0.03, 100.0, 0.04)])[4]
    assert (lo, hi) == pytest.approx((0.9 - 0.9 * 0.05, 0.9 + 0.9 * 0.05))  # hypot(3 %, 4 %) = 5 %
    two = ratio_band([run(90.0, 0.03, 100.0, 0.04), run(50.0, 0.0, 50.0, 0.0)])[4]
    assert two == pytest.approx((lo, 1.0))
    assert ratio_band([run(90.0, None, 100.0, 0.04)]) == {}
    assert equal_load_levels([run(90.0, 0.03, 100.0, 0.04)]) == [4]
    assert equal_load_levels([run(90.0, 0.03, 100.0, 0.04), run(90.0, None, 100.0, 0.04)]) == []


def test_the_round_timer_shows_the_plain_paths_cost_where_the_real_one_does() -> None:
    from agent.sim.zero_step_path import stage_split

    cal = with_zero_step(H200_BIG, H200_PLAIN_ZERO_STEP, "plain")
    kind, stages = stage_split(cal, 0, True, 58, 58 * 320, 1, True)
    assert kind == "zero_plain" and set(stages) == {"prepare", "target_forward"}
    assert stages["prepare"] * 1000 == pytest.approx(
        (H200_PLAIN_ZERO_STEP.round_s + 58 * H200_PLAIN_ZERO_STEP.request_s) * 1000
    )
    kind, stages = stage_split(cal, 0, False, 58, 58 * 320, 1, True)
    assert kind == "zero_verify" and set(stages) == {"target_forward"}
