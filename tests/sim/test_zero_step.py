"""Issue 18: what a 0-step round costs in the engine model, and the comparisons it must reproduce.

The Kimi K2.5 figure is an estimate until it is measured on its host (``ZERO_STEP_RECORD.source``
says so); the real engine on one H200 measured it (``agent.sim.calibration_h200``), and the model of
that deployment must give back the ratios of the records' result files, which the test reads itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.profile.store import load_profile
from agent.sim import costmodel
from agent.sim.calibration import (
    CALIBRATION,
    CROSSOVER_CONTEXT,
    ZERO_STEP_RECORD,
    ZERO_STEP_TOLERANCE,
    Calibration,
    ZeroStepCosts,
    ZeroStepRecord,
)
from agent.sim.calibration_h200 import H200_HEAVY, H200_RECORDS
from agent.sim.zerostep import (
    measured_off_over_baseline,
    off_over_baseline,
    on_path,
    record_model,
    with_zero_step,
)

ROOT = Path(__file__).resolve().parents[2]


def _model(record: ZeroStepRecord, calibration: Calibration) -> dict[int, float]:
    spec, base = load_profile(ROOT / record.spec_profile), load_profile(ROOT / record.baseline_profile)
    return record_model(record, spec, base, calibration)


def test_kimi_off_over_baseline_is_the_recorded_estimate() -> None:
    record = ZERO_STEP_RECORD
    assert CALIBRATION.spec.zero_step == record.zero_step  # the one place the values come from
    assert not record.measured and record.source.startswith("ESTIMATE")
    model = _model(record, CALIBRATION)
    for concurrency, recorded in record.off_over_baseline:
        assert abs(model[concurrency] - recorded) <= ZERO_STEP_TOLERANCE, (
            f"c={concurrency}: model off ÷ baseline {model[concurrency]:.3f}, recorded {recorded:.3f}"
        )


def test_runs_are_pooled_as_mean_off_over_mean_baseline() -> None:
    def run(off: float, base: float | None) -> dict[str, object]:
        level4 = {"concurrency": 4, "off": {"output_throughput": off}}
        if base is not None:
            level4["baseline"] = {"output_throughput": base}
        return {"levels": [{"concurrency": 1, "off": {"output_throughput": off}, "baseline": {"output_throughput": 200.0}}, level4]}  # fmt: skip

    # c=1: (100 + 200) / 2 over (200 + 200) / 2
    pooled = measured_off_over_baseline([run(100.0, 400.0), run(200.0, 100.0)])
    assert pooled[1] == pytest.approx(0.75)
    assert pooled[4] == pytest.approx(150.0 / 250.0)  # the mean of the runs' ratios would be 1.125
    assert 4 not in measured_off_over_baseline([run(100.0, None)])  # no baseline arm: left out


@pytest.mark.parametrize("name", sorted(H200_RECORDS))
def test_the_real_engine_comparison_is_what_its_result_files_say(name: str) -> None:
    """The record's ratios are its result files' off ÷ baseline (mean off over mean baseline across
    the runs, per level), so they cannot drift from the data."""
    record = H200_RECORDS[name]
    assert record.measured
    assert record.results
    results = [json.loads((ROOT / path).read_text()) for path in record.results]
    for result in results:
        assert result["options"]["input_len"] == record.input_len
        assert result["options"]["output_len"] == record.output_len
    pooled = measured_off_over_baseline(results)
    for concurrency, recorded in record.off_over_baseline:
        assert recorded == pytest.approx(pooled[concurrency], abs=0.0005), f"{name}, c={concurrency}"


@pytest.mark.parametrize("name", sorted(H200_RECORDS))
def test_the_model_of_the_h200_gives_back_the_measured_ratios(name: str) -> None:
    record = H200_RECORDS[name]
    model = _model(record, H200_HEAVY)
    for concurrency, ratio in record.off_over_baseline:
        assert abs(model[concurrency] - ratio) <= ZERO_STEP_TOLERANCE, (
            f"{name}, c={concurrency}: model {model[concurrency]:.3f}, measured {ratio:.3f}; "
            "python -m bench.studies.zero_step_tax --deployment h200-heavy --from its results fits the costs again"
        )


def test_a_zero_step_round_is_a_plain_step_plus_the_path_plus_the_draft_extend_pass() -> None:
    costs = CALIBRATION.spec.zero_step
    for batch in (1, 8, 64, 256):
        kv_tokens = batch * CROSSOVER_CONTEXT
        plain = costmodel.decode_step_s(CALIBRATION, batch, kv_tokens)
        path = costs.round_s + costs.request_s * batch
        skipped = costmodel.spec_step_s(CALIBRATION, batch, kv_tokens, 0, 1, 1, skip_draft_extend=True)
        full = costmodel.spec_step_s(CALIBRATION, batch, kv_tokens, 0, 1, 1)
        assert skipped == pytest.approx(plain + path)
        assert full == pytest.approx(plain + path + costmodel.draft_pass_s(CALIBRATION, batch))


def test_the_engine_model_follows_the_profiles_skip_setting() -> None:
    """heavy-skip and heavy-spec differ only in the skip; their off arms must differ by the draft pass."""
    skip, spec = H200_RECORDS["skip"], H200_RECORDS["noskip"]
    base = load_profile(ROOT / skip.baseline_profile)
    same = with_zero_step(H200_HEAVY, skip.zero_step)
    with_skip = off_over_baseline(load_profile(ROOT / skip.spec_profile), base, [16], 256, 128, same)[16]
    without = off_over_baseline(load_profile(ROOT / spec.spec_profile), base, [16], 256, 128, same)[16]
    assert with_skip > without + 0.02


def test_dearer_zero_step_costs_lower_off_over_baseline() -> None:
    """The ratio the tests compare moves with the costs (what the fit relies on)."""
    spec = on_path(load_profile(ROOT / ZERO_STEP_RECORD.spec_profile), ZERO_STEP_RECORD.zero_step_path)
    base = load_profile(ROOT / ZERO_STEP_RECORD.baseline_profile)
    cheap = with_zero_step(CALIBRATION, ZeroStepCosts(round_s=0.0, request_s=0.0))
    costly = with_zero_step(CALIBRATION, ZeroStepCosts(round_s=0.006, request_s=0.00005))
    free = off_over_baseline(spec, base, [16], calibration=cheap)[16]
    taxed = off_over_baseline(spec, base, [16], calibration=costly)[16]
    assert taxed < free - 0.05
    # with no 0-step path cost, the draft's passes (extend and over prefilled tokens) are left
    assert 0.9 < free < 1.0
