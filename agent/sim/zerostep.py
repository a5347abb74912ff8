"""The engine model's off ÷ baseline, measured the way the GPU benchmark measures it, and the tax fitted to a record.

"Off" is the speculative profile's engine with the live threshold at 1, so every batch decodes at 0
steps (the ``off`` arm of ``agent bench compare``); "baseline" is the profile without a drafter (its
``--baseline-url`` arm). Both run as closed loops on the model's virtual clock
(``agent.sim.loadmodel``) with the same workload.

Both run with fp8 KV, which doubles the model's pool: the real-engine comparison runs a small
target on an H200 that never runs out of KV, so the ratio it gives is the cost of the 0-step
*round*. What the drafter costs in KV capacity (its share of each cell, its weights, the widest
candidate's reserve) the model takes from SGLang's own formulas (``agent.sglang.kv``), not from
this tax, and ``agent kv`` shows it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from agent.profile.schema import Profile
from agent.sglang.live_control import NO_THRESHOLD
from agent.sim.calibration import CALIBRATION, Calibration, ZeroStepRecord
from agent.sim.config import sim_config
from agent.sim.engine import Engine
from agent.sim.loadmodel import run_closed_loop

NEVER_SPECULATE = 1
"""The live threshold of the off arm: every batch of one request or more decodes at 0 steps."""
ROOMY_KV_DTYPE = "fp8_e4m3"
TAX_SEARCH = (-0.05, 1.0)
"""The range the fit searches (a tax below 0 would make 0 steps cheaper than no drafter at all)."""


def roomy(profile: Profile) -> Profile:
    """The profile with fp8 KV: twice the pool, so a closed loop of 128 clients never waits for KV."""
    server = profile.server.model_copy(update={"kv_cache_dtype": ROOMY_KV_DTYPE})
    return profile.model_copy(update={"server": server})


def with_tax(calibration: Calibration, tax: float) -> Calibration:
    return dataclasses.replace(calibration, spec=dataclasses.replace(calibration.spec, zero_step_tax=tax))


def off_throughput(
    spec_profile: Profile, concurrency: int, input_len: int, output_len: int, calibration: Calibration
) -> float:
    """Output tok/s of the speculative profile's engine forced to 0 steps at every batch size."""
    engine = Engine(sim_config(roomy(spec_profile), calibration=calibration), seed=0)
    if engine.controller is None or engine.controller.check_threshold(NEVER_SPECULATE) is not None:
        raise ValueError(
            f"{spec_profile.identity.name}: the off arm needs adaptive speculation with a 0-step state "
            "(speculation.adaptive and speculation.threshold)"
        )
    engine.controller.set_threshold(NEVER_SPECULATE)
    assert NEVER_SPECULATE > NO_THRESHOLD
    return run_closed_loop(engine.config, concurrency, input_len, output_len, engine=engine).output_tok_s


def baseline_throughput(
    baseline_profile: Profile, concurrency: int, input_len: int, output_len: int, calibration: Calibration
) -> float:
    if baseline_profile.speculative:
        raise ValueError(f"{baseline_profile.identity.name}: the baseline must not speculate")
    config = sim_config(roomy(baseline_profile), calibration=calibration)
    return run_closed_loop(config, concurrency, input_len, output_len).output_tok_s


def off_over_baseline(
    spec_profile: Profile,
    baseline_profile: Profile,
    levels: Iterable[int],
    input_len: int = 1024,
    output_len: int = 256,
    calibration: Calibration = CALIBRATION,
) -> dict[int, float]:
    """The engine model's off ÷ baseline output throughput at each concurrency level."""
    return {
        c: off_throughput(spec_profile, c, input_len, output_len, calibration)
        / baseline_throughput(baseline_profile, c, input_len, output_len, calibration)
        for c in levels
    }


def fit_zero_step_tax(
    record: ZeroStepRecord,
    spec_profile: Profile,
    baseline_profile: Profile,
    calibration: Calibration = CALIBRATION,
    tolerance: float = 1e-4,
) -> float:
    """The tax whose modelled off ÷ baseline has the record's mean over its levels (bisection: the
    ratio falls as the tax grows). The baseline arm does not depend on the tax and runs once."""
    levels = [c for c, _ in record.off_over_baseline]
    target = sum(r for _, r in record.off_over_baseline) / len(levels)
    base = {
        c: baseline_throughput(baseline_profile, c, record.input_len, record.output_len, calibration)
        for c in levels
    }

    def mean_ratio(tax: float) -> float:
        cal = with_tax(calibration, tax)
        offs = [off_throughput(spec_profile, c, record.input_len, record.output_len, cal) for c in levels]
        return sum(o / base[c] for o, c in zip(offs, levels, strict=True)) / len(levels)

    lo, hi = TAX_SEARCH
    if not mean_ratio(hi) <= target <= mean_ratio(lo):
        raise ValueError(f"no tax in {TAX_SEARCH} gives a mean off ÷ baseline of {target:.3f}")
    while hi - lo > tolerance:
        mid = (lo + hi) / 2
        if mean_ratio(mid) > target:
            lo = mid
        else:
            hi = mid
    return round((lo + hi) / 2, 4)
