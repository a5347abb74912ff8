"""The engine model's off ÷ baseline, measured the way the GPU benchmark measures it, and the zero-step costs fitted to a record.

"Off" is the speculative profile's engine with the live threshold at 1, so every batch decodes at 0
steps (the ``off`` arm of ``agent bench compare``); "baseline" is the profile without a drafter (its
``--baseline-url`` arm). Both run as closed loops on the model's virtual clock
(``agent.sim.loadmodel``) with the same workload.

Both run with fp8 KV, which doubles the model's pool: the real-engine comparison runs a small
target on an H200 that never runs out of KV, so the ratio it gives is the cost of the 0-step
*round*. What the drafter costs in KV capacity (its share of each cell, its weights, the widest
candidate's reserve) the model takes from SGLang's own formulas (``agent.sglang.kv``), not from
the zero-step costs, and ``agent kv`` shows it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agent.profile.schema import Profile
from agent.sglang.live_control import NO_THRESHOLD
from agent.sim.calibration import CALIBRATION, ArrivalCosts, Calibration, ZeroStepCosts, ZeroStepRecord
from agent.sim.config import sim_config
from agent.sim.engine import Engine
from agent.sim.loadmodel import run_closed_loop

NEVER_SPECULATE = 1
"""The live threshold of the off arm: every batch of one request or more decodes at 0 steps."""
ROOMY_KV_DTYPE = "fp8_e4m3"
ROUND_SEARCH_S = (0.0, 0.05)
"""The range the fit searches for ``ZeroStepCosts.round_s`` (below 0, a 0-step round would be cheaper
than a plain decode step of a server without a drafter)."""
REQUEST_GRID_S = tuple(i * 0.000005 for i in range(21))
"""The ``ZeroStepCosts.request_s`` values the fit tries (0 to 0.1 ms a request; the H200 run without
the skip fits best at 0.07 ms)."""


def roomy(profile: Profile) -> Profile:
    """The profile with fp8 KV: twice the pool, so a closed loop of 128 clients never waits for KV."""
    server = profile.server.model_copy(update={"kv_cache_dtype": ROOMY_KV_DTYPE})
    return profile.model_copy(update={"server": server})


def with_zero_step(calibration: Calibration, costs: ZeroStepCosts, path: str = "verify") -> Calibration:
    """The calibration with ``costs`` for the 0-step ``path`` (``verify``: SGLang's own; ``plain``: patch 03)."""
    if path == "plain":
        spec = dataclasses.replace(calibration.spec, plain_zero_step=costs)
    else:
        spec = dataclasses.replace(calibration.spec, zero_step=costs)
    return dataclasses.replace(calibration, spec=spec)


def with_arrival(calibration: Calibration, arrival: ArrivalCosts) -> Calibration:
    """The calibration with ``arrival`` as what an arriving request costs the speculative server."""
    return dataclasses.replace(calibration, spec=dataclasses.replace(calibration.spec, arrival=arrival))


def on_path(profile: Profile, path: str) -> Profile:
    """``profile`` with its 0-step rounds on ``path`` (the path a record was measured on)."""
    if profile.speculation.zero_step == path:
        return profile
    speculation = profile.speculation.model_copy(update={"zero_step": path})
    return profile.model_copy(update={"speculation": speculation})


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


def measured_off_over_baseline(results: Sequence[Mapping[str, Any]]) -> dict[int, float]:
    """Off ÷ baseline per level of real ``agent bench compare --baseline-url --json`` results.

    Several results (runs of one comparison) are pooled per level: the mean of their off figures over
    the mean of their baseline figures, each run weighing the same, so that one noisy run moves the
    record less than it would alone. Levels without both arms are left out.
    """
    offs: dict[int, list[float]] = {}
    bases: dict[int, list[float]] = {}
    for result in results:
        for row in result.get("levels", []):
            off, base = row.get("off") or {}, row.get("baseline") or {}
            if off.get("output_throughput") and base.get("output_throughput"):
                level = int(row["concurrency"])
                offs.setdefault(level, []).append(float(off["output_throughput"]))
                bases.setdefault(level, []).append(float(base["output_throughput"]))
    return {c: (sum(offs[c]) / len(offs[c])) / (sum(bases[c]) / len(bases[c])) for c in sorted(offs)}


def equal_load_levels(results: Sequence[Mapping[str, Any]]) -> list[int]:
    """The levels where both the off and the baseline arm of every result held the asked concurrency
    (``concurrency_reached``): only there is off ÷ baseline a ratio of equal loads."""
    levels: set[int] | None = None
    for result in results:
        ok = {
            int(row["concurrency"])
            for row in result.get("levels", [])
            if all((row.get(arm) or {}).get("concurrency_reached") for arm in ("off", "baseline"))
        }
        levels = ok if levels is None else levels & ok
    return sorted(levels or ())


def ratio_band(results: Sequence[Mapping[str, Any]]) -> dict[int, tuple[float, float]]:
    """Per level, the range real off ÷ baseline figures can take within their noise.

    Each run's ratio with its 95 % interval: the two arms' relative half-widths
    (``output_throughput_ci_rel``) added in quadrature, as for the ratio of two independent means;
    over several runs, from the lowest run's low end to the highest run's high end. Levels without
    both arms, or without an interval, are left out.
    """
    bands: dict[int, tuple[float, float]] = {}
    for result in results:
        for row in result.get("levels", []):
            off, base = row.get("off") or {}, row.get("baseline") or {}
            off_rel, base_rel = off.get("output_throughput_ci_rel"), base.get("output_throughput_ci_rel")
            if not (off.get("output_throughput") and base.get("output_throughput")):
                continue
            if off_rel is None or base_rel is None:
                continue
            ratio = float(off["output_throughput"]) / float(base["output_throughput"])
            half = ratio * math.hypot(float(off_rel), float(base_rel))
            level = int(row["concurrency"])
            lo, hi = bands.get(level, (math.inf, -math.inf))
            bands[level] = (min(lo, ratio - half), max(hi, ratio + half))
    return dict(sorted(bands.items()))


def record_model(
    record: ZeroStepRecord, spec_profile: Profile, baseline_profile: Profile, calibration: Calibration
) -> dict[int, float]:
    """The engine model's off ÷ baseline at the record's levels, with the record's zero-step costs."""
    if spec_profile.speculation.skip_zero_step_draft_extend != record.skip_zero_step_draft_extend:
        raise ValueError(
            f"{spec_profile.identity.name}: speculation.skip_zero_step_draft_extend must be "
            f"{str(record.skip_zero_step_draft_extend).lower()}, the setting the record's off arm ran with"
        )
    levels = [c for c, _ in record.off_over_baseline]
    cal = with_zero_step(calibration, record.zero_step, record.zero_step_path)
    if record.arrival is not None:
        cal = with_arrival(cal, record.arrival)
    spec_profile = on_path(spec_profile, record.zero_step_path)
    return off_over_baseline(spec_profile, baseline_profile, levels, record.input_len, record.output_len, cal)


def fit_zero_step(
    record: ZeroStepRecord,
    spec_profile: Profile,
    baseline_profile: Profile,
    calibration: Calibration = CALIBRATION,
    tolerance_s: float = 1e-6,
    request_grid_s: Sequence[float] = REQUEST_GRID_S,
) -> ZeroStepCosts:
    """The zero-step costs of the record's path whose modelled off ÷ baseline is nearest the record's at
    every level.

    For each ``request_s`` of ``request_grid_s``, ``round_s`` is bisected so that the mean ratio over
    the levels is the record's (the ratio falls as the cost grows); the pair with the smallest
    largest difference at any level wins. The baseline arm does not depend on the costs and runs once.
    """
    spec_profile = on_path(spec_profile, record.zero_step_path)
    levels = [c for c, _ in record.off_over_baseline]
    measured = dict(record.off_over_baseline)
    target = sum(measured.values()) / len(levels)
    lens = (record.input_len, record.output_len)
    base = {c: baseline_throughput(baseline_profile, c, *lens, calibration) for c in levels}

    def ratios(costs: ZeroStepCosts) -> dict[int, float]:
        cal = with_zero_step(calibration, costs, record.zero_step_path)
        if record.arrival is not None:
            cal = with_arrival(cal, record.arrival)
        return {c: off_throughput(spec_profile, c, *lens, cal) / base[c] for c in levels}

    def mean(round_s: float, request_s: float) -> float:
        return sum(ratios(ZeroStepCosts(round_s, request_s)).values()) / len(levels)

    best: tuple[float, ZeroStepCosts] | None = None
    for request_s in request_grid_s:
        lo, hi = ROUND_SEARCH_S
        if not mean(hi, request_s) <= target <= mean(lo, request_s):
            continue
        while hi - lo > tolerance_s:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mean(mid, request_s) > target else (lo, mid)
        costs = ZeroStepCosts(round_s=round((lo + hi) / 2, 6), request_s=round(request_s, 7))
        worst = max(abs(r - measured[c]) for c, r in ratios(costs).items())
        if best is None or worst < best[0]:
            best = (worst, costs)
    if best is None:
        raise ValueError(
            f"no zero-step costs in round {ROUND_SEARCH_S} s, request {request_grid_s[-1]} s give a mean "
            f"off ÷ baseline of {target:.3f}"
        )
    return best[1]
