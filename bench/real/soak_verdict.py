"""``soak.py``'s table and its verdict on issue 46's "done when": one row per window, then whether "off"
held its first minute's speed to its last and kept the GPU as busy as the baseline did, and what grew.

The verdict's bounds are the issue's: the last minute's tok/s within 3 % of the first minute's, GPU busy
within 5 points of the baseline's. What grew is each figure's first and last reading over the off
windows (the runtime's state sizes, the scheduler's memory, the collector's time per window).
"""

from __future__ import annotations

import statistics
from typing import Any

MINUTE_S = 60.0
HOLD_BOUND = 0.03
BUSY_BOUND_POINTS = 5.0


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _mib(kib: Any) -> str:
    return f"{kib / 1024:.0f}" if isinstance(kib, int | float) else "-"


def _num(value: Any, digits: int = 0) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "-"


def _host_parts(window: dict[str, Any], top: int = 3) -> str:
    """The round timer's host ms per round, in total and its largest parts."""
    timer = window.get("timer") or {}
    if not timer:
        return "-"
    kind = max(timer, key=lambda k: timer[k].get("rounds") or 0)
    entry = timer[kind]
    parts = sorted((entry.get("host_ms") or {}).items(), key=lambda kv: -kv[1])[:top]
    inner = " ".join(f"{name} {ms:.2f}" for name, ms in parts)
    gpu = entry.get("gpu_ms_round")
    return f"{entry.get('host_ms_round', 0):.2f} ({inner})" + (f"; GPU {gpu:.2f}" if gpu is not None else "")


HEADER = (
    "| # | server | at s | tok/s | running | GPU busy % | SM MHz | host ms/round (largest parts) "
    "| missed | ring held | sched. RSS MiB | engine RSS MiB | GC ms |"
)


def row(w: dict[str, Any]) -> str:
    state = w.get("state") or {}
    return (
        f"| {w['index']} | {w['server']} | {w['at_s']:.0f} | {_num(w.get('client_tps'))} "
        f"| {_num(w.get('engine_running'), 1)} | {_num(w.get('gpu_busy'), 1)} | {_num(w.get('sm_mhz'))} "
        f"| {_host_parts(w)} | {_num(state.get('missed_slots'))} | {_num(state.get('ring_held'))} "
        f"| {_mib(w.get('scheduler_rss_kib'))} | {_mib(w.get('engine_rss_kib'))} "
        f"| {_num(w.get('gc_ms'), 1)} |"
    )


def table_lines(windows: list[dict[str, Any]]) -> list[str]:
    rule = "|" + " ---: |" * (HEADER.count("|") - 1)
    return [HEADER, rule, *(row(w) for w in windows)]


def _first_last(off: list[dict[str, Any]], key: str) -> tuple[Any, Any]:
    values = [w.get(key) for w in off if isinstance(w.get(key), int | float)]
    return (values[0], values[-1]) if values else (None, None)


def summary(windows: list[dict[str, Any]]) -> dict[str, Any]:
    """The verdict over the windows so far (written with every window, so a cut run keeps one)."""
    off = [w for w in windows if w["server"] == "off"]
    base = [w for w in windows if w["server"] == "baseline"]
    out: dict[str, Any] = {"off_windows": len(off), "baseline_windows": len(base)}
    if off:
        start, end = off[0]["off_s_start"], off[-1]["off_s_end"]
        first = [w["client_tps"] for w in off if w["off_s_end"] <= start + MINUTE_S]
        last = [w["client_tps"] for w in off if w["off_s_start"] >= end - MINUTE_S]
        out["off_seconds"] = round(end - start, 1)
        out["first_minute_tps"] = _mean(first)
        out["last_minute_tps"] = _mean(last)
        if first and last and end - start >= 2 * MINUTE_S:
            ratio = statistics.fmean(last) / statistics.fmean(first)
            out["last_over_first"] = round(ratio, 4)
            out["holds"] = abs(ratio - 1) <= HOLD_BOUND
        else:
            out["last_over_first"] = None
            out["holds"] = None
            out["holds_unknown"] = "fewer than two minutes of off windows"
    busy_off = [w["gpu_busy"] for w in off if w.get("gpu_busy") is not None]
    busy_base = [w["gpu_busy"] for w in base if w.get("gpu_busy") is not None]
    out["gpu_busy_off"] = _mean(busy_off)
    out["gpu_busy_baseline"] = _mean(busy_base)
    if busy_off and busy_base:
        gap = statistics.fmean(busy_base) - statistics.fmean(busy_off)
        out["gpu_busy_gap_points"] = round(gap, 1)
        out["gpu_busy_within_bound"] = gap <= BUSY_BOUND_POINTS
    tps_base = [w["client_tps"] for w in base]
    if off and tps_base:
        out["off_over_baseline"] = round(
            statistics.fmean(w["client_tps"] for w in off) / statistics.fmean(tps_base), 4
        )
    grew: dict[str, Any] = {}
    for key in ("scheduler_rss_kib", "engine_rss_kib"):
        grew[key] = _first_last(off, key)
    states = [w.get("state") or {} for w in off]
    for key in sorted({k for s in states for k in s}):
        values = [s[key] for s in states if isinstance(s.get(key), int | float)]
        grew[key] = (values[0], values[-1]) if values else (None, None)
    out["first_and_last"] = {k: list(v) for k, v in grew.items()}
    gc_ms = [w["gc_ms"] for w in off if isinstance(w.get("gc_ms"), int | float)]
    out["gc_ms_per_window"] = {"mean": _mean(gc_ms), "max": max(gc_ms) if gc_ms else None}
    return out


def verdict_lines(s: dict[str, Any]) -> list[str]:
    lines = [
        f"off: {s['off_windows']} windows over {s.get('off_seconds', 0)} s; baseline: {s['baseline_windows']}"
    ]
    if s.get("last_over_first") is not None:
        lines.append(
            f"last minute / first minute: {s['last_over_first']:.3f} "
            f"({_num(s['last_minute_tps'])} / {_num(s['first_minute_tps'])} tok/s): "
            + ("holds (within 3 %)" if s["holds"] else "does NOT hold (beyond 3 %)")
        )
    elif s.get("holds_unknown"):
        lines.append(f"last minute / first minute: not judged ({s['holds_unknown']})")
    if s.get("gpu_busy_gap_points") is not None:
        lines.append(
            f"GPU busy: off {s['gpu_busy_off']:.1f} %, baseline {s['gpu_busy_baseline']:.1f} %: "
            f"{s['gpu_busy_gap_points']:+.1f} points "
            + ("(within 5)" if s["gpu_busy_within_bound"] else "(beyond 5 points)")
        )
    elif s.get("gpu_busy_off") is None:
        lines.append("GPU busy: not measured")
    if s.get("off_over_baseline") is not None:
        lines.append(f"off / baseline tok/s: {s['off_over_baseline']:.3f}")
    grew = s.get("first_and_last") or {}
    moved = [f"{k} {a} -> {b}" for k, (a, b) in grew.items() if a is not None and b is not None and a != b]
    lines.append("first -> last over the off windows: " + ("; ".join(moved) if moved else "nothing moved"))
    gc = s.get("gc_ms_per_window") or {}
    if gc.get("mean") is not None:
        lines.append(f"collector: {gc['mean']:.1f} ms a window on average, {gc['max']:.1f} ms at most")
    return lines
