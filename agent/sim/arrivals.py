"""The arrival cost of a speculative server: real comparisons pooled by their noise, and the fit.

Once patch 03's plain 0-step round cost what a plain decode step costs, "off" still lost to a server
without a drafter (``bench/results/real-h200-2026-12-06``), in requests arriving and leaving between
decode rounds. The engine model charges it per arrival (``calibration.ArrivalCosts``); this module
fits that one number to a record's levels, each level weighed by how well the runs measured it.

Pooling: the runs of one comparison measured some levels with short windows (±3-28 % intervals) and
c=64 with six 8-s windows (±4.5 %). Their figures are pooled per level as the inverse-variance mean
of each run's log(off ÷ baseline), its variance from the two arms' interval half-widths added in
quadrature (``zerostep.ratio_band``'s reading), so that a tight run counts for what it is worth and a
loose one does not drag it (the plain mean gives c=64 0.847; the 6×8 s run alone 0.870).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.profile.schema import Profile
from agent.sim.calibration import ArrivalCosts, Calibration, ZeroStepRecord
from agent.sim.config import sim_config
from agent.sim.engine import Engine
from agent.sim.loadmodel import run_closed_loop
from agent.sim.zerostep import NEVER_SPECULATE, on_path, roomy, with_arrival, with_zero_step

Z95 = 1.959964
ARRIVAL_GRID_S = tuple(i * 0.0001 for i in range(61))
"""The ``ArrivalCosts.request_s`` values the fit tries first (0 to 6 ms), then refined around the best."""


@dataclass(frozen=True)
class Pooled:
    ratio: float
    half_width: float
    """Of the pooled ratio's 95 % interval, relative (as ``output_throughput_ci_rel``)."""
    runs: int


def pooled_off_over_baseline(results: Sequence[Mapping[str, Any]]) -> dict[int, Pooled]:
    """Per level, off ÷ baseline pooled over the runs by inverse variance (see the module docstring).
    Levels without both arms or without their intervals are left out."""
    sums: dict[int, list[float]] = {}
    for result in results:
        for row in result.get("levels", []):
            off, base = row.get("off") or {}, row.get("baseline") or {}
            off_rel, base_rel = off.get("output_throughput_ci_rel"), base.get("output_throughput_ci_rel")
            if (
                not (off.get("output_throughput") and base.get("output_throughput"))
                or not off_rel
                or not base_rel
            ):
                continue
            ratio = float(off["output_throughput"]) / float(base["output_throughput"])
            sigma = math.hypot(float(off_rel), float(base_rel)) / Z95
            weight = 1.0 / sigma**2
            acc = sums.setdefault(int(row["concurrency"]), [0.0, 0.0, 0.0])
            acc[0] += weight * math.log(ratio)
            acc[1] += weight
            acc[2] += 1
    return {
        c: Pooled(math.exp(w_log / w), Z95 / math.sqrt(w), int(n))
        for c, (w_log, w, n) in sorted(sums.items())
    }


def arrival_misfit(
    record: ZeroStepRecord,
    spec_profile: Profile,
    baseline_profile: Profile,
    calibration: Calibration,
    pooled: Mapping[int, Pooled],
) -> Callable[[float], float]:
    """``misfit(request_s)``: the sum over the record's levels of the squared log difference between the
    model's off ÷ baseline with that arrival cost and the pooled figure, over the figure's variance (a
    chi-square with as many terms as levels). The baseline arm does not depend on it and runs once."""
    spec = on_path(spec_profile, record.zero_step_path)
    levels = [c for c, _ in record.off_over_baseline]
    lens = (record.input_len, record.output_len)
    base_config = sim_config(roomy(baseline_profile), calibration=calibration)
    base = {c: run_closed_loop(base_config, c, *lens).output_tok_s for c in levels}
    cal = with_zero_step(calibration, record.zero_step, record.zero_step_path)
    arrival = record.arrival or ArrivalCosts()

    def misfit(request_s: float) -> float:
        trial = with_arrival(cal, dataclasses.replace(arrival, request_s=request_s))
        total = 0.0
        for c in levels:
            engine = Engine(sim_config(roomy(spec), calibration=trial), seed=0)
            assert engine.controller is not None
            engine.controller.set_threshold(NEVER_SPECULATE)
            off = run_closed_loop(engine.config, c, *lens, engine=engine).output_tok_s
            sigma = pooled[c].half_width / Z95
            total += (math.log(off / base[c]) - math.log(pooled[c].ratio)) ** 2 / sigma**2
        return total

    return misfit


def fit_arrival(
    record: ZeroStepRecord,
    spec_profile: Profile,
    baseline_profile: Profile,
    calibration: Calibration,
    pooled: Mapping[int, Pooled],
    grid_s: Sequence[float] = ARRIVAL_GRID_S,
) -> tuple[ArrivalCosts, float]:
    """The ``request_s`` with the least ``arrival_misfit`` at the record's levels, and that misfit: the
    best of ``grid_s``, then a golden-section search in the grid cells around it."""
    misfit = arrival_misfit(record, spec_profile, baseline_profile, calibration, pooled)
    best = min(grid_s, key=misfit)
    step = (grid_s[1] - grid_s[0]) if len(grid_s) > 1 else 0.0001
    lo, hi = max(0.0, best - step), best + step
    for _ in range(20):
        a, b = hi - (hi - lo) / 1.618034, lo + (hi - lo) / 1.618034
        lo, hi = (lo, b) if misfit(a) <= misfit(b) else (a, hi)
    request_s = round((lo + hi) / 2, 6)
    return dataclasses.replace(record.arrival or ArrivalCosts(), request_s=request_s), misfit(request_s)
