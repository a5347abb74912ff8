"""Plain-text tables of a sweep or a comparison, for the terminal (the console draws its own).

Each figure is shown with the half-width of its 95 % interval (``1234.5±1.2%``); a level where the
engine's count and our streams' differ by more than 2 % is marked ``!`` and listed under the table.
"""

from __future__ import annotations

from typing import Any

from agent.bench.counters import stream_mismatch_words
from agent.bench.verdict import resolution_words
from agent.wire.bench_env import describe, parse_environment

ARMS = ("on", "off", "adaptive", "baseline")


def _num(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    return f"{float(value):.{digits}f}"


def _pm(arm: dict[str, Any]) -> str:
    """``1234.5±1.2%`` (the figure and its interval's half-width), ``1234.5±?`` without an interval."""
    rel = arm.get("output_throughput_ci_rel")
    spread = "±?" if rel is None else f"±{rel * 100:.1f}%"
    mark = "" if arm.get("concurrency_reached") in (True, None) else "*"
    flag = "!" if arm.get("engine_stream_mismatch") else ""
    return f"{_num(arm.get('output_throughput'))}{spread}{mark}{flag}"


def _reached(level: dict[str, Any]) -> str:
    reached = level.get("concurrency_reached")
    held = level.get("concurrency")
    if reached is None or held is None:
        return "?"
    return f"{float(held):.0f}" + ("" if reached else "*")


def sweep_table(levels: list[dict[str, Any]]) -> str:
    head = (
        f"{'conc':>5} {'held':>5} {'out tok/s':>16} {'engine':>9} {'req/s':>7} {'TTFT med/p99 ms':>17} "
        f"{'ITL med/p99 ms':>16} {'e2e med ms':>10} {'accept':>6} {'window':>7} {'fail':>4}"
    )
    rows = [head]
    for lv in levels:
        rows.append(
            f"{lv['max_concurrency']:>5} {_reached(lv):>5} {_pm(lv):>16} "
            f"{_num(lv.get('engine_output_throughput')):>9} {_num(lv['request_throughput'], 2):>7} "
            f"{_num(lv['median_ttft_ms']):>8}/{_num(lv['p99_ttft_ms']):<8} "
            f"{_num(lv['median_itl_ms']):>7}/{_num(lv['p99_itl_ms']):<8} "
            f"{_num(lv['median_e2e_latency_ms'], 0):>10} {_num(lv.get('accept_length'), 2):>6} "
            f"{_num(lv.get('window_s')) + ' s':>7} {lv['failed']:>4}"
        )
    notes = [lv["concurrency_note"] for lv in levels if lv.get("concurrency_note")]
    if notes:
        rows.append("* the engine never reached the asked concurrency: " + "; ".join(notes))
    rows += _mismatch_lines([(lv["max_concurrency"], "sweep", lv) for lv in levels])
    busy = [lv["max_concurrency"] for lv in levels if lv.get("client_cpu_fraction", 0) > 0.8]
    if busy:
        rows.append(
            f"the load generator used over 80% of a core at c={', '.join(str(c) for c in busy)}: "
            "it may have been the bottleneck"
        )
    sources = {lv.get("accept_length_source") for lv in levels if lv.get("accept_length") is not None}
    if sources:
        rows.append("accept length from " + " / ".join(sorted(str(s) for s in sources)))
    if levels:
        rows.append(_legend(levels[0]))
    return "\n".join(rows)


def _legend(arm: dict[str, Any]) -> str:
    return (
        f"tok/s over steady-state windows (whole cycles at the asked concurrency), mean of "
        f"{arm.get('repeats', '?')} repeats ± half its 95 % interval; held = running requests in the window"
    )


def _mismatch_lines(arms: list[tuple[int, str, dict[str, Any]]]) -> list[str]:
    return [
        f"! c={c} {name}: "
        + stream_mismatch_words(
            float(arm["engine_stream_diff"]),
            f"{_num(arm.get('engine_output_throughput'))} vs {_num(arm.get('output_throughput'))} tok/s",
        )
        for c, name, arm in arms
        if arm.get("engine_stream_mismatch")
    ]


def _arms_of(result: dict[str, Any]) -> list[str]:
    return [a for a in ARMS if any(a in lv for lv in result["levels"])]


def compare_table(result: dict[str, Any]) -> str:
    arms = _arms_of(result)
    head = (
        f"{'conc':>5} "
        + " ".join(f"{a + ' tok/s':>18}" for a in arms)
        + f" {'envelope':>9} "
        + " ".join(f"{a[:5] + '/env':>9}" for a in arms)
    )
    rows = [head]
    measured: list[tuple[int, str, dict[str, Any]]] = []
    for lv in result["levels"]:
        cells = []
        for arm in arms:
            data = lv.get(arm) or {}
            if "unavailable" in data:
                cells.append(f"{'n/a':>18}")
            else:
                cells.append(f"{_pm(data):>18}")
                measured.append((lv["concurrency"], arm, data))
        ratios = [f"{_num(lv['ratios'].get(a), 3):>9}" for a in arms]
        rows.append(
            f"{lv['concurrency']:>5} " + " ".join(cells) + f" {_num(lv['envelope']):>9} " + " ".join(ratios)
        )
    rows += _mismatch_lines(measured)
    busy = sorted({c for c, _, data in measured if data.get("client_cpu_fraction", 0) > 0.8})
    if busy:
        rows.append(
            f"the load generator used over 80% of a core at c={', '.join(str(c) for c in busy)}: "
            "it may have been the bottleneck"
        )
    rows += _live_lines(result)
    rows += _recommendation_lines(result)
    if result.get("off_note"):
        rows.append(result["off_note"])
    if measured:
        rows.append(_legend(measured[0][2]))
    rows.append(
        f"took {result.get('duration_s', 0):.1f} s (expected {result.get('expected_duration_s', 0):.0f} s); "
        "* = the engine never reached the asked concurrency"
    )
    return "\n".join(rows)


def _live_lines(result: dict[str, Any]) -> list[str]:
    rows = []
    live = result.get("live_control") or {}
    if not live.get("available"):
        rows.append(f"live arms unavailable: {live.get('reason')}")
    elif live.get("restored") is not None:
        rows.append(
            f"live threshold was {live.get('original_threshold')} before the run; restored: "
            f"{'yes' if live.get('restored') else 'NO: ' + str(live.get('restore_error'))}"
        )
    settle = result.get("settling") or {}
    if settle.get("switches"):
        force, first = settle.get("in_force_s"), settle.get("set_s")
        seen = (
            f"in force after {force['median'] * 1000:.0f} ms median, {force['max'] * 1000:.0f} ms at most"
            if force
            else "never seen in force"
        )
        read = f"read back after {first['median'] * 1000:.0f} ms median" if first else "no read-back"
        missing = settle.get("in_force_not_seen") or 0
        rows.append(
            f"live switches: {settle['switches']}, {read}, {seen}"
            + (f" ({missing} never seen in force during their warm-up)" if missing else "")
        )
    summary = result.get("summary") or {}
    if "adaptive_min_ratio" in summary:
        rows.append(
            f"adaptive: lowest ratio to the envelope {summary['adaptive_min_ratio']:.3f} at "
            f"c={summary['adaptive_min_ratio_at']}"
        )
    outside = summary.get("adaptive_outside_twin_at")
    if outside:
        rows.append(
            f"adaptive's interval does not hold the arm it should equal at c={', '.join(str(c) for c in outside)}"
        )
    if "baseline_ahead_at" in summary:
        rows.append(
            "baseline (no drafter) ahead of the envelope at c="
            + (", ".join(str(c) for c in summary["baseline_ahead_at"]) or "no level")
            + (f" (from c={summary['baseline_ahead_from']} up)" if summary.get("baseline_ahead_from") else "")
        )
    return rows


def _recommendation_lines(result: dict[str, Any]) -> list[str]:
    rec = result.get("recommendation") or {}
    threshold = result.get("recommended_threshold")
    if threshold is None:
        return [f"no recommended threshold: {rec.get('reason')}"] if rec else []
    span = rec.get("threshold_range")
    between = ""
    if span:
        upper = "never" if span[1] is None else str(span[1])
        between = f", interval {span[0]}..{upper}"
    crossover = "" if rec.get("crossover") is None else f"crossover c≈{_num(rec.get('crossover'))}{between}, "
    lines = [
        f"recommended threshold: {threshold}  ({crossover}confidence {rec.get('confidence_label')} "
        f"{_num(rec.get('confidence'), 2)})",
        str(rec.get("reason", "")),
    ]
    resolved = resolution_words(rec.get("resolution") or [])
    return lines + ([resolved] if resolved else [])


def where_lines(result: dict[str, Any]) -> list[str]:
    """Where the run ran (``agent.wire.bench_env``): one line per fact, unknowns with their reason."""
    lines = describe(parse_environment(result))
    width = max(len(label) for label, _ in lines)
    return [f"{label:>{width}}: {words}" for label, words in lines]
