"""Plain-text tables of a sweep or a comparison, for the terminal (the console draws its own)."""

from __future__ import annotations

from typing import Any


def _num(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    return f"{float(value):.{digits}f}"


def _reached(level: dict[str, Any]) -> str:
    reached = level.get("concurrency_reached")
    peak = level.get("engine_max_running_reqs")
    if reached is None or peak is None:
        return "?"
    return f"{int(peak)}" + ("" if reached else "*")


def sweep_table(levels: list[dict[str, Any]]) -> str:
    head = (
        f"{'conc':>5} {'engine':>6} {'out tok/s':>10} {'req/s':>7} {'TTFT med/p99 ms':>17} "
        f"{'ITL med/p99 ms':>16} {'TPOT med':>8} {'e2e med ms':>10} {'accept':>6} {'fail':>4}"
    )
    rows = [head]
    for lv in levels:
        rows.append(
            f"{lv['max_concurrency']:>5} {_reached(lv):>6} {_num(lv['output_throughput']):>10} "
            f"{_num(lv['request_throughput'], 2):>7} "
            f"{_num(lv['median_ttft_ms']):>8}/{_num(lv['p99_ttft_ms']):<8} "
            f"{_num(lv['median_itl_ms']):>7}/{_num(lv['p99_itl_ms']):<8} {_num(lv['median_tpot_ms']):>8} "
            f"{_num(lv['median_e2e_latency_ms'], 0):>10} {_num(lv.get('accept_length'), 2):>6} {lv['failed']:>4}"
        )
    notes = [lv["concurrency_note"] for lv in levels if lv.get("concurrency_note")]
    if notes:
        rows.append("* the engine never reached the asked concurrency: " + "; ".join(notes))
    busy = [lv["max_concurrency"] for lv in levels if lv.get("client_cpu_fraction", 0) > 0.8]
    if busy:
        rows.append(
            f"the load generator used over 80% of a core at c={busy}: it may have been the bottleneck"
        )
    sources = {lv.get("accept_length_source") for lv in levels if lv.get("accept_length") is not None}
    if sources:
        rows.append("accept length from " + " / ".join(sorted(str(s) for s in sources)))
    return "\n".join(rows)


def compare_table(result: dict[str, Any]) -> str:
    arms = [a for a in ("on", "off", "adaptive", "baseline") if any(a in lv for lv in result["levels"])]
    head = (
        f"{'conc':>5} "
        + " ".join(f"{a + ' tok/s':>14}" for a in arms)
        + f" {'envelope':>9} "
        + " ".join(f"{a[:5] + '/env':>9}" for a in arms)
    )
    rows = [head]
    for lv in result["levels"]:
        cells = []
        for arm in arms:
            data = lv.get(arm) or {}
            if "unavailable" in data:
                cells.append(f"{'n/a':>14}")
            else:
                mark = "" if data.get("concurrency_reached") in (True, None) else "*"
                cells.append(f"{_num(data.get('output_throughput')) + mark:>14}")
        ratios = [f"{_num(lv['ratios'].get(a), 3):>9}" for a in arms]
        rows.append(
            f"{lv['concurrency']:>5} " + " ".join(cells) + f" {_num(lv['envelope']):>9} " + " ".join(ratios)
        )
    busy = sorted(
        {
            lv["concurrency"]
            for lv in result["levels"]
            for arm in arms
            if (lv.get(arm) or {}).get("client_cpu_fraction", 0) > 0.8
        }
    )
    if busy:
        rows.append(
            f"the load generator used over 80% of a core at c={busy}: it may have been the bottleneck"
        )
    live = result.get("live_control") or {}
    if not live.get("available"):
        rows.append(f"live arms unavailable: {live.get('reason')}")
    elif live.get("restored") is not None:
        rows.append(
            f"live threshold was {live.get('original_threshold')} before the run; restored: "
            f"{'yes' if live.get('restored') else 'NO: ' + str(live.get('restore_error'))}"
        )
    summary = result.get("summary") or {}
    if "adaptive_min_ratio" in summary:
        rows.append(
            f"adaptive: lowest ratio to the envelope {summary['adaptive_min_ratio']:.3f} at "
            f"c={summary['adaptive_min_ratio_at']}"
        )
    if "baseline_ahead_at" in summary:
        rows.append(
            f"baseline (no drafter) ahead of the envelope at c={summary['baseline_ahead_at']}"
            f" (from c={summary.get('baseline_ahead_from')} up)"
        )
    rec = result.get("recommendation") or {}
    if result.get("recommended_threshold") is not None:
        rows.append(
            f"recommended threshold: {result['recommended_threshold']}  (crossover c≈{_num(rec.get('crossover'))}, "
            f"measured between sweep points at c={rec.get('measured_crossover')}, confidence "
            f"{rec.get('confidence_label')} {_num(rec.get('confidence'), 2)}; {rec.get('reason')})"
        )
    elif rec:
        rows.append(f"no recommended threshold: {rec.get('reason')}")
    if result.get("off_note"):
        rows.append(result["off_note"])
    rows.append(
        f"took {result.get('duration_s', 0):.1f} s; * = the engine never reached the asked concurrency"
    )
    return "\n".join(rows)
