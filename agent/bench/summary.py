"""A comparison's findings across levels: how adaptive did, what the baseline showed, where the
engine's counts and ours parted, and what the live switches cost to settle."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from agent.sglang.live_control import NO_THRESHOLD


def _tput(arm: dict[str, Any] | None) -> float | None:
    if arm is None or "unavailable" in arm:
        return None
    value = arm.get("output_throughput")
    return float(value) if value is not None else None


def twin_of_adaptive(threshold: int | None, adaptive: dict[str, Any], asked: int) -> str | None:
    """The forced arm adaptive should equal at a level: "on" below the threshold, "off" at or above it,
    judged by the running requests the server can hold (its window target: a server whose running cap
    or KV pool is below the asked level never reaches a threshold above what it holds)."""
    if threshold is None:
        return None
    if threshold == NO_THRESHOLD:
        return "on"
    targets = [int(r["window"]["target"]) for r in adaptive.get("runs") or [] if r.get("window")]
    held = min(targets) if targets else asked
    return "off" if held >= threshold else "on"


def _contains(interval: Sequence[float] | None, value: float | None) -> bool | None:
    if interval is None or value is None:
        return None
    return interval[0] <= value <= interval[1]


def _adaptive_checks(levels: list[dict[str, Any]], threshold: int | None) -> list[dict[str, Any]]:
    checks = []
    for row in levels:
        adaptive = row.get("adaptive")
        if not isinstance(adaptive, dict) or _tput(adaptive) is None:
            continue
        twin = twin_of_adaptive(threshold, adaptive, int(row["concurrency"]))
        other = row.get(twin) if twin else None
        if not isinstance(other, dict) or _tput(other) is None:
            continue
        checks.append(
            {
                "concurrency": row["concurrency"],
                "twin": twin,
                "ratio": _tput(adaptive) / (_tput(other) or 1.0),  # type: ignore[operator]
                "contains_twin": _contains(adaptive.get("output_throughput_ci"), _tput(other)),
            }
        )
    return checks


def compare_summary(levels: list[dict[str, Any]], threshold: int | None) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    adaptive = [(row["ratios"].get("adaptive"), row["concurrency"]) for row in levels]
    measured = [(r, c) for r, c in adaptive if r is not None]
    if measured:
        worst, at = min(measured)
        summary["adaptive_min_ratio"] = worst
        summary["adaptive_min_ratio_at"] = at
        summary["adaptive_below_0_97_at"] = [c for r, c in measured if r < 0.97]
    checks = _adaptive_checks(levels, threshold)
    if checks:
        summary["adaptive_vs_twin"] = checks
        summary["adaptive_outside_twin_at"] = [
            c["concurrency"] for c in checks if c["contains_twin"] is False
        ]
    baseline_ahead: list[int] = []
    for row in levels:
        base = _tput(row.get("baseline"))
        best = row["envelope"]
        if base is not None and best is not None and base > best:
            baseline_ahead.append(row["concurrency"])
    if any(_tput(row.get("baseline")) is not None for row in levels):
        summary["baseline_ahead_at"] = baseline_ahead
        run_from = None
        for row in reversed(levels):
            if row["concurrency"] in baseline_ahead:
                run_from = row["concurrency"]
            else:
                break
        summary["baseline_ahead_from"] = run_from
    mismatches = [
        {"concurrency": row["concurrency"], "arm": name, "diff": arm["engine_stream_diff"]}
        for row in levels
        for name, arm in row.items()
        if isinstance(arm, dict) and arm.get("engine_stream_mismatch")
    ]
    summary["engine_stream_mismatch"] = mismatches
    return summary


def _spread_of(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"median": statistics.median(values), "max": max(values), "min": min(values)}


def settling(switches: list[dict[str, Any]]) -> dict[str, Any]:
    """Seconds from each set_live call: median and extremes over the run's switches."""
    summary: dict[str, Any] = {"switches": len(switches)}
    for key in ("set_s", "in_force_s", "first_token_s", "settle_s", "window_start_s"):
        summary[key] = _spread_of([float(s[key]) for s in switches if s.get(key) is not None])
    summary["in_force_not_seen"] = sum(1 for s in switches if s.get("in_force_s") is None)
    return summary
