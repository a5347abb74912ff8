"""What ``autopilot_ramp.py`` prints and keeps: the per-window table, the totals, the ratios, the events.

``summarize(result)`` computes from the result's windows (``ramp_figures``) what ``print_report``
prints; both go into the JSON, so the printed figures and the stored ones are the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.studies.ramp_figures import ARMS, ramp_total, ratio, verdict, window_noise

GOALS = {("autopilot", "best"): 0.98, ("autopilot", "profile"): 1.05}
"""Issue 24's done-when: the autopilot at least 0.98 of the best fixed threshold, 1.05 of the profile's."""
FIGURES = {"client_tps": "our streams' tokens", "engine_tps": "the engine's counters"}
PAIRS = (("autopilot", "best"), ("autopilot", "profile"), ("best", "profile"))


def _where(windows: Sequence[Mapping[str, Any]], at_s: float, restore_s: float | None) -> str:
    if restore_s is not None and at_s >= restore_s:
        return "the restore at the end"
    for w in windows:
        if w["counted_from_s"] <= at_s <= w["counted_to_s"]:
            return f"in the {w['arm']} window at c={w['concurrency']}"
    for w in windows:
        if w["switched_at_s"] <= at_s < w["counted_from_s"]:
            return f"settling for the {w['arm']} window at c={w['concurrency']}"
    return "between windows"


def autopilot_events(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    started, windows, restore_s = result["started_at"], result["windows"], result.get("restore_started_s")
    out = []
    for event in result["events"]:
        name = str(event.get("name", ""))
        if not name.startswith("autopilot."):
            continue
        at_s = round(float(event.get("time", started)) - started, 3)
        out.append(
            {
                "at_s": at_s,
                "name": name,
                "message": event.get("message"),
                "where": _where(windows, at_s, restore_s),
            }
        )
    return out


def summarize(result: Mapping[str, Any]) -> dict[str, Any]:
    windows = result["windows"]
    levels = len(result["plan"]["levels"])
    measured = {arm: sorted({w["level_index"] for w in windows if w["arm"] == arm}) for arm in ARMS}
    out: dict[str, Any] = {
        "levels": levels,
        "levels_measured_per_arm": {arm: len(v) for arm, v in measured.items()},
        "every_arm_at_every_level": all(len(v) == levels for v in measured.values()),
        "autopilot_events": autopilot_events(result),
        "engine_stream_diff_max": max(
            (abs(w["engine_stream_diff"]) for w in windows if w.get("engine_stream_diff") is not None),
            default=None,
        ),
    }
    for key in FIGURES:
        noise = window_noise(windows, key)
        ratios = {}
        for a, b in PAIRS:
            found = ratio(windows, a, b, key, noise)
            goal = GOALS.get((a, b))
            ratios[f"{a}/{b}"] = None if found is None else {**found, "goal": goal,
                                                              "verdict": verdict(found, goal) if goal else None}  # fmt: skip
        out[key] = {
            "noise": noise.as_dict(),
            "totals": {arm: ramp_total(windows, arm, key, levels) for arm in ARMS},
            "ratios": ratios,
        }
    return out


def _tps(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _thr(value: int | None) -> str:
    return "?" if value is None else ("none" if value == 0 else str(value))


def _interval(found: Mapping[str, Any]) -> str:
    if found.get("low") is None:
        return "no interval"
    return f"95 % {found['low']:.3f}-{found['high']:.3f}"


def print_report(result: Mapping[str, Any]) -> None:
    summary, windows = result["summary"], result["windows"]
    print()
    print("counted: per window, the time between two reads of the engine's /metrics after the arm's settle;")
    print(
        "  client = our streams' tokens delivered in it / its seconds; engine = the generation counter's rise"
    )
    print("  plus the change in what the requests in flight had (agent.bench.counters) / the same seconds")
    print()
    head = f"{'lvl':>3} {'c':>4} {'arm':<9} {'thr':>11} {'client tok/s':>13} {'engine tok/s':>13} {'diff':>6} {'slice cv':>8} {'running':>7} {'done':>5} {'fail':>4}"
    print(head)
    for w in windows:
        diff = "-" if w.get("engine_stream_diff") is None else f"{w['engine_stream_diff'] * 100:+.1f}%"
        cv = "-" if w.get("slice_cv") is None else f"{w['slice_cv'] * 100:.1f}%"
        running = "-" if w.get("engine_running") is None else f"{w['engine_running']:.0f}"
        thr = f"{_thr(w['threshold_start'])}->{_thr(w['threshold_end'])}"
        print(
            f"{w['level_index'] + 1:>3} {w['concurrency']:>4} {w['arm']:<9} {thr:>11} {_tps(w['client_tps']):>13} "
            f"{_tps(w['engine_tps']):>13} {diff:>6} {cv:>8} {running:>7} {w['completed']:>5} {w['failed']:>4}"
        )
    print()
    every = "yes" if summary["every_arm_at_every_level"] else "NO"
    per_arm = ", ".join(f"{arm} {n}" for arm, n in summary["levels_measured_per_arm"].items())
    print(f"every arm measured at every level: {every} ({per_arm} of {summary['levels']} levels)")
    if summary["engine_stream_diff_max"] is not None:
        print(f"engine vs client, largest gap in a window: {summary['engine_stream_diff_max'] * 100:.1f} %")
    for key, words in FIGURES.items():
        part = summary[key]
        totals = ", ".join(f"{arm} {_tps(v)}" for arm, v in part["totals"].items())
        print(f"\nfrom {words}: ramp totals (mean tok/s over the levels): {totals}")
        noise = part["noise"]
        if noise["sigma"] is not None:
            print(f"  one window's noise: ±{noise['sigma'] * 100:.1f} % (1 sd; {noise['source']})")
        else:
            print(f"  one window's noise: unknown ({noise['source']})")
        for name, found in part["ratios"].items():
            if found is None:
                print(f"  {name}: not measured")
                continue
            tail = f"; goal ≥ {found['goal']:g}: {found['verdict']}" if found.get("goal") else ""
            over = f"{found['levels']} level{'s' if found['levels'] != 1 else ''}"
            print(f"  {name} = {found['ratio']:.3f} ({_interval(found)}, over {over}){tail}")
    client = summary["client_tps"]["ratios"]
    if client.get("autopilot/best") and client.get("autopilot/profile"):
        print("\nper level (client figures): autopilot/best, autopilot/profile")
        for a, b in zip(
            client["autopilot/best"]["per_level"], client["autopilot/profile"]["per_level"], strict=True
        ):
            print(f"  level {a['level_index'] + 1:>2} c={a['concurrency']:<4} {_ratio(a)}  {_ratio(b)}")
    events = summary["autopilot_events"]
    print(f"\nautopilot events during the run ({len(events)}):")
    for e in events:
        print(f"  {e['at_s']:7.1f} s  {e['name']} ({e['where']}): {e['message']}")
    if result.get("stream_note"):
        print(f"  ({result['stream_note']})")
    print_clocks(result)
    restored = result["restore"]
    if result.get("interrupted"):
        print(f"\ninterrupted by {result['interrupted']}: the ramp stopped after {len(windows)} windows")
    if result.get("failure"):
        print(f"\nthe ramp did not finish: {result['failure']}")
    state = f"threshold {_thr(restored['threshold'])}, autopilot {'on' if restored['autopilot'] else 'off'}"
    ids = ", ".join(
        str(a.get("action_id")) for a in restored.get("actions", []) if a.get("status") == "applied"
    )
    if restored["ok"]:
        print(f"restored the operator's setting: {state} (agent actions, audited: {ids or 'none needed'})")
    else:
        seen = (
            f"the agent reads threshold {_thr(restored.get('agent_threshold'))}, autopilot "
            f"{restored.get('agent_autopilot')}; the engine threshold {_thr(restored.get('engine_threshold'))}"
        )
        print(f"NOT restored: wanted {state}; {seen}; {restored.get('error') or ''}")


def _ratio(level: Mapping[str, Any]) -> str:
    if level.get("ratio") is None:
        return "-"
    if level.get("low") is None:
        return f"{level['ratio']:.3f}"
    return f"{level['ratio']:.3f} ({level['low']:.2f}-{level['high']:.2f})"


def print_clocks(result: Mapping[str, Any]) -> None:
    clocks = result.get("clocks")
    if not clocks:
        print(f"\nclocks: {result.get('clocks_note') or 'none'}")
        return
    print("\nclocks (nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv):")
    for sample in clocks:
        lines = sample.get("lines") or [sample.get("error", "")]
        shown = "; ".join(line for line in lines if not line.startswith("clocks."))
        print(f"  {sample['at_s']:7.1f} s  {sample['label']}: {shown}")
