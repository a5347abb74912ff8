"""Plain-text tables of a sweep or a comparison, for the terminal (the console draws its own).

Each figure is shown with the half-width of its 95 % interval (``1234.5±1.2%``); a level where the
engine's count and our streams' differ by more than 2 % is marked ``!`` and listed under the table, and
one whose windows trend (a slope beyond their noise, ``agent.bench.trend``) ``~``, said there too.
Everything is read from the typed result (``agent.wire.bench_result``).
"""

from __future__ import annotations

from agent.bench.counters import stream_mismatch_words
from agent.bench.verdict import resolution_words
from agent.wire.bench_env import describe, parse_environment
from agent.wire.bench_result import ARM_NAMES, BenchArm, BenchLevel, BenchResult, Figures

ARMS = ARM_NAMES


def _num(value: float | bool | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    return f"{float(value):.{digits}f}"


def _pm(arm: Figures) -> str:
    """``1234.5±1.2%`` (the figure and its interval's half-width), ``1234.5±?`` without an interval."""
    rel = arm.output_throughput_ci_rel
    spread = "±?" if rel is None else f"±{rel * 100:.1f}%"
    mark = "" if arm.concurrency_reached in (True, None) else "*"
    flag = "!" if arm.engine_stream_mismatch else ""
    drift = "~" if arm.trend is not None and arm.trend.trending else ""
    return f"{_num(arm.output_throughput)}{spread}{mark}{flag}{drift}"


def _trend_lines(arms: list[tuple[int, str, Figures]]) -> list[str]:
    """``~``: the arm's windows at that level trend (``agent.bench.trend``), said under the table."""
    out = []
    for c, name, arm in arms:
        t = arm.trend
        if t is None or not t.trending or t.change is None:
            continue
        way = "fell" if t.change < 0 else "rose"
        noise = "" if t.noise is None else f", beyond a window's noise ({t.noise * 100:.1f} %)"
        out.append(
            f"~ c={c} {name}: its {t.windows} windows trend: the figure {way} {abs(t.change) * 100:.0f} % from the "
            f"first to the last{noise}: the level drifted while it ran, which its interval only widens for"
        )
    return out


def _reached(level: BenchLevel) -> str:
    reached, held = level.concurrency_reached, level.concurrency
    if reached is None or held is None:
        return "?"
    return f"{float(held):.0f}" + ("" if reached else "*")


def _failed(level: BenchLevel) -> str:
    return "-" if level.failed is None else str(level.failed)


def sweep_table(levels: list[BenchLevel], rule_words: str | None = None) -> str:
    head = (
        f"{'conc':>5} {'held':>5} {'out tok/s':>16} {'engine':>9} {'req/s':>7} {'TTFT med/p99 ms':>17} "
        f"{'ITL med/p99 ms':>16} {'e2e med ms':>10} {'accept':>6} {'window':>7} {'fail':>4}"
    )
    rows = [head]
    for lv in levels:
        rows.append(
            f"{lv.max_concurrency:>5} {_reached(lv):>5} {_pm(lv):>16} "
            f"{_num(lv.engine_output_throughput):>9} {_num(lv.request_throughput, 2):>7} "
            f"{_num(lv.median_ttft_ms):>8}/{_num(lv.p99_ttft_ms):<8} "
            f"{_num(lv.median_itl_ms):>7}/{_num(lv.p99_itl_ms):<8} "
            f"{_num(lv.median_e2e_latency_ms, 0):>10} {_num(lv.accept_length, 2):>6} "
            f"{_num(lv.window_s) + ' s':>7} {_failed(lv):>4}"
        )
    notes = [lv.concurrency_note for lv in levels if lv.concurrency_note]
    if notes:
        rows.append("* the engine never reached the asked concurrency: " + "; ".join(notes))
    rows += _mismatch_lines([(lv.max_concurrency or 0, "sweep", lv) for lv in levels])
    rows += _trend_lines([(lv.max_concurrency or 0, "sweep", lv) for lv in levels])
    busy = [lv.max_concurrency for lv in levels if (lv.client_cpu_fraction or 0) > 0.8]
    if busy:
        rows.append(
            f"the load generator used over 80% of a core at c={', '.join(str(c) for c in busy)}: "
            "it may have been the bottleneck"
        )
    sources = {lv.accept_length_source for lv in levels if lv.accept_length is not None}
    if sources:
        rows.append("accept length from " + " / ".join(sorted(str(s) for s in sources)))
    rows += stopping_lines(levels, rule_words)
    if levels:
        rows.append(_legend(levels[0]))
    return "\n".join(rows)


def stopping_lines(levels: list[BenchLevel], rule_words: str | None = None) -> list[str]:
    """Per level, what ended its windows, when a stopping rule ran (``agent.bench.stopping``)."""
    stops = [(lv.max_concurrency or lv.asked, lv.stopping) for lv in levels if lv.stopping is not None]
    if not stops or all(stop.outcome == "fixed" for _, stop in stops):
        return []
    head = f"stopping: windows were added at a level {rule_words}" if rule_words else "stopping, per level:"
    return [head] + [f"  c={c}: {stop.words or stop.outcome}" for c, stop in stops]


def _legend(arm: Figures) -> str:
    repeats = "?" if arm.repeats is None else arm.repeats
    return (
        f"tok/s over steady-state windows (whole cycles at the asked concurrency), mean of "
        f"{repeats} repeats ± half its 95 % interval; held = running requests in the window"
    )


def _mismatch_lines(arms: list[tuple[int, str, Figures]]) -> list[str]:
    return [
        f"! c={c} {name}: "
        + stream_mismatch_words(
            float(arm.engine_stream_diff or 0.0),
            f"{_num(arm.engine_output_throughput)} vs {_num(arm.output_throughput)} tok/s",
        )
        for c, name, arm in arms
        if arm.engine_stream_mismatch
    ]


def _arms_of(result: BenchResult) -> list[str]:
    return [a for a in ARMS if any(a in lv.arms() for lv in result.levels)]


def compare_table(result: BenchResult) -> str:
    arms = _arms_of(result)
    head = (
        f"{'conc':>5} "
        + " ".join(f"{a + ' tok/s':>18}" for a in arms)
        + f" {'envelope':>9} "
        + " ".join(f"{a[:5] + '/env':>9}" for a in arms)
    )
    rows = [head]
    measured: list[tuple[int, str, BenchArm]] = []
    for lv in result.levels:
        cells = []
        present = lv.arms()
        for name in arms:
            data = present.get(name) or BenchArm()
            if data.unavailable is not None:
                cells.append(f"{'n/a':>18}")
            else:
                cells.append(f"{_pm(data):>18}")
                measured.append((lv.asked, name, data))
        ratios = [f"{_num(lv.ratios.get(a), 3):>9}" for a in arms]
        rows.append(f"{lv.asked:>5} " + " ".join(cells) + f" {_num(lv.envelope):>9} " + " ".join(ratios))
    rows += _mismatch_lines(list(measured))
    rows += _trend_lines(list(measured))
    busy = sorted({c for c, _, data in measured if (data.client_cpu_fraction or 0) > 0.8})
    if busy:
        rows.append(
            f"the load generator used over 80% of a core at c={', '.join(str(c) for c in busy)}: "
            "it may have been the bottleneck"
        )
    rows += _live_lines(result)
    rule = result.stopping.rule if result.stopping is not None else None
    rows += stopping_lines(result.levels, rule.words if rule is not None else None)
    rows += _recommendation_lines(result)
    if result.off_note:
        rows.append(result.off_note)
    if measured:
        rows.append(_legend(measured[0][2]))
    rows.append(
        f"took {result.duration_s or 0:.1f} s (expected {result.expected_duration_s or 0:.0f} s); "
        "* = the engine never reached the asked concurrency; ~ = its windows trend"
    )
    return "\n".join(rows)


def _live_lines(result: BenchResult) -> list[str]:
    rows = []
    live = result.live_control
    if live is None or not live.available:
        rows.append(f"live arms unavailable: {live.reason if live is not None else None}")
    elif live.restored is not None:
        rows.append(
            f"live threshold was {live.original_threshold} before the run; restored: "
            f"{'yes' if live.restored else 'NO: ' + str(live.restore_error)}"
        )
    settle = result.settling
    if settle is not None and settle.switches:
        force, first = settle.in_force_s, settle.set_s
        longest = f"{force.max * 1000:.0f} ms" if force is not None and force.max is not None else "?"
        seen = (
            f"in force after {force.median * 1000:.0f} ms median, {longest} at most"
            if force
            else "never seen in force"
        )
        read = f"read back after {first.median * 1000:.0f} ms median" if first else "no read-back"
        missing = settle.in_force_not_seen or 0
        rows.append(
            f"live switches: {settle.switches}, {read}, {seen}"
            + (f" ({missing} never seen in force during their warm-up)" if missing else "")
        )
    summary = result.compare_summary
    if summary is None:
        return rows
    if summary.adaptive_min_ratio is not None:
        rows.append(
            f"adaptive: lowest ratio to the envelope {summary.adaptive_min_ratio:.3f} at "
            f"c={summary.adaptive_min_ratio_at}"
        )
    outside = summary.adaptive_outside_twin_at
    if outside:
        rows.append(
            f"adaptive's interval does not hold the arm it should equal at c={', '.join(str(c) for c in outside)}"
        )
    if summary.baseline_ahead_at is not None:
        rows.append(
            "baseline (no drafter) ahead of the envelope at c="
            + (", ".join(str(c) for c in summary.baseline_ahead_at) or "no level")
            + (f" (from c={summary.baseline_ahead_from} up)" if summary.baseline_ahead_from else "")
        )
    return rows


def _recommendation_lines(result: BenchResult) -> list[str]:
    rec = result.recommendation
    threshold = result.recommended_threshold
    if threshold is None:
        return [f"no recommended threshold: {rec.reason}"] if rec is not None else []
    if rec is None:
        return [f"recommended threshold: {threshold}"]
    span = rec.threshold_range
    between = ""
    if span:
        upper = "never" if span[1] is None else str(span[1])
        between = f", interval {span[0]}..{upper}"
    crossover = "" if rec.crossover is None else f"crossover c≈{_num(rec.crossover)}{between}, "
    lines = [
        f"recommended threshold: {threshold}  ({crossover}confidence {rec.confidence_label} "
        f"{_num(rec.confidence, 2)})",
        rec.reason,
    ]
    resolved = resolution_words([row.model_dump() for row in rec.resolution])
    return lines + ([resolved] if resolved else [])


def where_lines(result: BenchResult) -> list[str]:
    """Where the run ran (``agent.wire.bench_env``): one line per fact, unknowns with their reason."""
    env = result.environment if result.environment is not None else parse_environment(result.stored())
    lines = describe(env)
    width = max(len(label) for label, _ in lines)
    return [f"{label:>{width}}: {words}" for label, words in lines]
