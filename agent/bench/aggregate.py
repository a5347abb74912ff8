"""One arm at one level, from its repeats: the figure with its interval, and bench_serving's fields.

``output_throughput`` is the mean of the repeats' window figures with ``output_throughput_ci`` (its
95 % interval, ``interval.estimate``, moderated with what the whole run says about its noise:
``arm_estimates``); the other bench_serving fields pool every repeat's window (a percentile over all
their requests, a rate over all their seconds). ``runs`` keeps each repeat as it was measured, in the
order it ran.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.bench.counters import ACCEPT_FROM_COUNTERS, ACCEPT_FROM_SERVER_INFO
from agent.bench.interval import METHOD, Estimate, RunNoise, SliceSample, run_estimates
from agent.bench.trend import trend
from agent.bench.window_stats import Part, window_metrics


@dataclass
class RunOutcome:
    """One repeat of one arm at one level."""

    result: dict[str, Any]
    """What is kept in the result JSON (``runs``)."""
    part: Part
    slices: list[SliceSample]


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known and len(known) == len(values) else None


def _accept(runs: Sequence[dict[str, Any]]) -> tuple[float | None, str]:
    generated = [r.get("engine_generated_tokens") for r in runs]
    verifies = [r.get("engine_verify_calls") for r in runs]
    if all(g is not None for g in generated) and all(v for v in verifies):
        return sum(g for g in generated if g) / sum(v for v in verifies if v), ACCEPT_FROM_COUNTERS
    server = [r.get("accept_length_server_info") for r in runs]
    if all(s is not None for s in server):
        return statistics.fmean(float(s) for s in server if s is not None), ACCEPT_FROM_SERVER_INFO
    return None, "none: the engine reports no speculative verify counts"


Cell = tuple[str, int]
"""(arm, level index)."""


def arm_estimates(outcomes: Mapping[Cell, Sequence[RunOutcome]]) -> tuple[dict[Cell, Estimate], RunNoise]:
    """Every measured arm-level's figure and interval, from the whole run's repeats at once."""
    return run_estimates({cell: [o.slices for o in runs] for cell, runs in outcomes.items()})


def arm_result(
    concurrency: int, arm: str, outcomes: Sequence[RunOutcome], figure: Estimate, noise: RunNoise
) -> dict[str, Any]:
    runs = [o.result for o in outcomes]
    pooled = window_metrics([o.part for o in outcomes])
    engine = _mean([r.get("engine_output_throughput") for r in runs])
    diffs = [r.get("engine_stream_diff") for r in runs]
    diff = None if any(d is None for d in diffs) else max(diffs, key=lambda d: abs(d or 0.0))
    accept, source = _accept(runs)
    peaks = [r["engine_max_running_reqs"] for r in runs if r.get("engine_max_running_reqs") is not None]
    means = [r["engine_mean_running_reqs"] for r in runs if r.get("engine_mean_running_reqs") is not None]
    notes = [r["concurrency_note"] for r in runs if r.get("concurrency_note")]
    drift = trend(
        [(float(r.get("step", i)), o.slices) for i, (r, o) in enumerate(zip(runs, outcomes, strict=True))],
        noise,
    )
    result: dict[str, Any] = {
        "max_concurrency": concurrency,
        "requests": sum(int(r["requests"]) for r in runs),
        **pooled,
        "output_throughput": figure.mean,
        "output_throughput_ci": None if figure.interval is None else list(figure.interval),
        "output_throughput_ci_rel": figure.half_width_rel,
        "output_throughput_repeats": [r["output_throughput"] for r in runs],
        "ci_method": METHOD,
        "ci_df": figure.df,
        "ci_run_k": round(noise.k, 4),
        "trend": None if drift is None else drift.as_dict(),
        "repeats": figure.repeats,
        "window_s": sum(float(r["window_s"]) for r in runs),
        "window_slices": figure.slices,
        "engine_output_throughput": engine,
        "engine_finished_throughput": _mean([r.get("engine_finished_throughput") for r in runs]),
        "engine_stream_diff": diff,
        "engine_stream_mismatch": any(r.get("engine_stream_mismatch") for r in runs),
        "accept_length": accept,
        "accept_length_source": source,
        "engine_max_running_reqs": max(peaks) if peaks else None,
        "engine_mean_running_reqs": statistics.fmean(means) if means else None,
        "concurrency_reached": all(r.get("concurrency_reached") is not False for r in runs),
        "client_cpu_fraction": max(float(r.get("client_cpu_fraction", 0.0)) for r in runs),
        "runs": runs,
    }
    if notes:
        result["concurrency_note"] = notes[0]
    problems = sorted({r["flush_cache_problem"] for r in runs if r.get("flush_cache_problem")})
    if problems:
        result["flush_cache_problem"] = problems[0]
    return result
