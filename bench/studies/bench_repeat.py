"""Is ``agent bench compare`` repeatable, honest about adaptive, and fast enough? Measured on the sim.

Starts ``agent sim --profile P --speedup S`` on a free port, runs ``agent bench compare`` with the
default options (plus any ``--bench-args``) ``--runs`` times back to back, and prints:

* each run's wall time (the issue's bound: 240 s on the 2-core development machine);
* per level and arm: each run's figure with its 95 % interval, and the largest difference between
  runs relative to their mean (the bound: 3 %);
* at every level below the live threshold (adaptive speculates there, as "on" does): whether
  adaptive's interval holds "on"'s figure, in every run;
* the host's load average before and after, and how often the simulator reported falling behind the
  wall clock (a busy host shows as lateness, and lateness as noise);
* how often one run's interval holds another run's figure (honest 95 % intervals of equal runs:
  about 83 %);
* the noise the runs saw, window by window, and what it would take: per level and arm, the spread
  of one window's figure over every window of every run, and how many such windows each run needs
  for two runs' means to agree within the bound at 95 % (2 (1.96 spread / bound)^2, windows taken
  as independent), with the measured seconds that makes per run.

    .venv/bin/python -m bench.studies.bench_repeat [--runs 2] [--speedup 20] [--keep DIR] [--bench-args "--repeats 3"]
    .venv/bin/python -m bench.studies.bench_repeat --from A.json B.json [--max-diff 0.05]

With ``--from`` it runs nothing and reports on results already made (the real engine's runs, say):
"adaptive should equal on" is then judged where the result says adaptive speculates like on (its
``summary.adaptive_vs_twin``: below the threshold, and at every level for threshold 0).

Exit status 0 when every bound held, 1 when one did not (the figures say which).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from agent.bench.interval import METHOD, Estimate, run_estimates
from agent.bench.verdict import resolution, resolution_words
from bench import REPO
from bench.kit.sim_process import AGENT, running_sim

ARMS = ("on", "off", "adaptive")
MEASURED_ARMS = (*ARMS, "baseline")
"""Every arm a result may hold windows for (the baseline arm only with --baseline-url)."""
Z95 = 1.96


def arm_windows(level: dict[str, Any], arm: str) -> list[dict[str, Any]]:
    """The steady-state windows (repeats) one level measured for one arm; none if the arm is absent."""
    return list((level.get(arm) or {}).get("runs") or [])


def windows_needed(spread: float, bound: float) -> int:
    """Windows per run for two runs' means to differ by less than ``bound`` (relative) at 95 %.

    Each run's mean has a relative standard error of spread/sqrt(n), their difference sqrt(2) times
    that; it must be within bound/1.96."""
    return max(1, math.ceil(2 * (Z95 * spread / bound) ** 2))


def window_noise(results: list[dict[str, Any]]) -> list[tuple[int, str, int, float, float]]:
    """(concurrency, arm, windows, mean window seconds, spread) over every window of every run.

    The spread is the windows' standard deviation over their mean: what one window's figure moves by."""
    out = []
    for li, row in enumerate(results[0]["levels"]):
        for arm in MEASURED_ARMS:
            windows = [w for r in results for w in arm_windows(r["levels"][li], arm)]
            if len(windows) < 2:
                continue
            figures = [float(w["output_throughput"]) for w in windows]
            seconds = statistics.fmean(float(w["duration"]) for w in windows)
            out.append(
                (
                    int(row["concurrency"]),
                    arm,
                    len(windows),
                    seconds,
                    statistics.stdev(figures) / statistics.fmean(figures),
                )
            )
    return out


Intervals = dict[tuple[int, str], tuple[float, float]]
"""(level index, arm) -> a run's 95 % interval of that arm's figure."""


def recorded_intervals(result: dict[str, Any]) -> Intervals:
    """The intervals as the run recorded them (with the method of the version that ran it)."""
    out: Intervals = {}
    for li, row in enumerate(result["levels"]):
        for arm in MEASURED_ARMS:
            ci = (row.get(arm) or {}).get("output_throughput_ci")
            if ci:
                out[(li, arm)] = (float(ci[0]), float(ci[1]))
    return out


def recomputed_intervals(result: dict[str, Any]) -> Intervals:
    """This version's intervals (``interval.run_estimates``), from the slices every repeat recorded."""
    figures = recomputed_estimates(result)
    return {cell: est.interval for cell, est in figures.items() if est.interval is not None}


def recomputed_estimates(result: dict[str, Any]) -> dict[tuple[int, str], Estimate]:
    """This version's estimates, from the slices every repeat recorded (every arm-level of the run)."""
    cells = {
        (li, arm): [[(float(t), float(s)) for t, s in w["slices"]] for w in arm_windows(row, arm)]
        for li, row in enumerate(result["levels"])
        for arm in MEASURED_ARMS
        if arm_windows(row, arm) and all(w.get("slices") for w in arm_windows(row, arm))
    }
    return run_estimates(cells)[0]


def print_resolution(results: list[dict[str, Any]]) -> None:
    """What a run of this length tells apart, from each run's own intervals (this version's)."""
    for i, result in enumerate(results):
        figures = recomputed_estimates(result)
        levels = []
        for li, row in enumerate(result["levels"]):
            pair = {}
            for arm in ("on", "off"):
                est = figures.get((li, arm))
                if est is None or est.interval is None:
                    break
                pair[arm] = {
                    "output_throughput": est.mean,
                    "output_throughput_ci": list(est.interval),
                    "ci_df": est.df,
                }
            else:
                levels.append({"concurrency": row["concurrency"], **pair})
        words = resolution_words(resolution(levels, int(result["options"].get("repeats", 2))))
        if words:
            seconds = sum(
                float(w["duration"])
                for row in result["levels"]
                for a in MEASURED_ARMS
                for w in arm_windows(row, a)
            )
            print(
                f"run {i + 1} ({seconds:.0f} s of windows, {float(result['duration_s']):.0f} s in all): {words}"
            )


def cross_cover(
    results: list[dict[str, Any]], intervals: list[Intervals] | None = None
) -> dict[tuple[int, str], tuple[int, int]]:
    """(level index, arm) -> (held, checked): how often one run's 95 % interval holds another run's
    figure, every ordered pair of runs.

    Two runs of the same setting with honest 95 % intervals hold each other's figure about 83 % of
    the time (the other figure carries its own noise: P(|Z| < 1.96 / sqrt 2)); far fewer says the
    intervals are narrower than the noise between runs."""
    intervals = intervals if intervals is not None else [recorded_intervals(r) for r in results]
    out: dict[tuple[int, str], tuple[int, int]] = {}
    for i, mine in enumerate(intervals):
        for cell, (low, high) in mine.items():
            li, arm = cell
            for j, other in enumerate(results):
                figure = (other["levels"][li].get(arm) or {}).get("output_throughput")
                if i == j or figure is None:
                    continue
                held, checked = out.get(cell, (0, 0))
                out[cell] = (held + (low <= figure <= high), checked + 1)
    return out


def cover_fraction(cover: dict[tuple[int, str], tuple[int, int]]) -> tuple[int, int]:
    return sum(h for h, _ in cover.values()), sum(c for _, c in cover.values())


def print_cross_cover(results: list[dict[str, Any]], min_cover: float) -> bool:
    """The coverage line(s); False when this version's intervals hold under ``min_cover``."""
    recorded = cover_fraction(cross_cover(results))
    current = cross_cover(results, [recomputed_intervals(r) for r in results])
    held, checked = cover_fraction(current)
    if not checked:
        return True
    methods = {str((lv.get(a) or {}).get("ci_method")) for r in results for lv in r["levels"] for a in ARMS}
    if methods != {METHOD} and recorded[1]:
        print(
            f"as recorded, one run's interval holds another's figure at {recorded[0]} of {recorded[1]} "
            f"level-arm checks ({recorded[0] / recorded[1] * 100:.0f} %; the runs' own interval method)"
        )
    fraction = held / checked
    mark = "" if fraction >= min_cover else f"  UNDER {min_cover * 100:.0f} %"
    print(
        f"one run's interval holds another's figure at {held} of {checked} level-arm checks "
        f"({fraction * 100:.0f} %; honest 95 % intervals of equal runs: about 83 %; this version's "
        f"intervals from the runs' slices){mark}"
    )
    if len(results) > 2:
        cells = "; ".join(
            f"c={results[0]['levels'][li]['concurrency']} {arm} {h}/{c}"
            for (li, arm), (h, c) in sorted(current.items())
        )
        print(f"  per level and arm: {cells}")
    return fraction >= min_cover


def print_noise(results: list[dict[str, Any]], bound: float) -> None:
    rows = window_noise(results)
    if not rows:
        return
    print(
        f"\nnoise, window by window (every window of every run), and what two runs need to agree within "
        f"{bound * 100:.0f}% at 95 %:"
    )
    print(
        f"{'conc':>5} {'arm':>9} {'windows':>8} {'window s':>9} {'spread':>7} {'windows/run':>12} {'s/run':>7}"
    )
    total = 0.0
    for c, arm, n, seconds, spread in rows:
        need = windows_needed(spread, bound)
        total += need * seconds
        print(
            f"{c:>5} {arm:>9} {n:>8} {seconds:>9.1f} {spread * 100:>6.1f}% {need:>12} {need * seconds:>7.0f}"
        )
    now = sum(
        float(w["duration"])
        for row in results[0]["levels"]
        for arm in MEASURED_ARMS
        for w in arm_windows(row, arm)
    )
    fewest = min(n for _, _, n, _, _ in rows)
    print(
        f"a run that holds that measures about {total:.0f} s ({total / 60:.0f} min) in its windows, "
        f"against {now:.0f} s in the first run's; each spread comes from as few as {fewest} windows, "
        f"so it is itself uncertain by about {100 / math.sqrt(2 * max(1, fewest - 1)):.0f} % of its value"
    )


def run_compare(url: str, out: Path, extra: list[str]) -> float:
    started = time.monotonic()
    done = subprocess.run(
        [*AGENT, "bench", "compare", "--url", url, "--json", str(out), *extra], cwd=REPO, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"agent bench compare exited with {done.returncode}")
    return time.monotonic() - started


def figure(arm: dict[str, Any]) -> str:
    ci = arm.get("output_throughput_ci")
    rel = arm.get("output_throughput_ci_rel")
    span = f"[{ci[0]:.0f}, {ci[1]:.0f}]" if ci else "[-]"
    return f"{arm['output_throughput']:9.1f} ±{(rel or 0) * 100:4.1f}% {span:>16}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--profile", default=str(REPO / "profiles" / "kimi-k25-eagle3.toml"))
    parser.add_argument("--speedup", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="keep the result JSONs in this directory")
    parser.add_argument("--bench-args", default="", help="extra arguments for agent bench compare")
    parser.add_argument("--max-s", type=float, default=240.0)
    parser.add_argument("--max-diff", type=float, default=0.03)
    parser.add_argument(
        "--min-cover",
        type=float,
        default=0.80,
        help="least share of one run's intervals holding another's figure",
    )
    parser.add_argument(
        "--from", dest="sources", nargs="+", type=Path, default=None, help="report on these results"
    )
    args = parser.parse_args()
    if args.sources:
        results = [json.loads(path.read_text()) for path in args.sources]
        walls = [float(r["duration_s"]) for r in results]
        return report(results, walls, args, None, None, args.sources[0].parent)

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="bench-repeat-"))
    workdir.mkdir(parents=True, exist_ok=True)
    sim_log = workdir / "sim.log"
    load_before = os.getloadavg()
    with running_sim(args.profile, args.speedup, sim_log) as url:
        results, walls = [], []
        for i in range(args.runs):
            out = workdir / f"compare-{i + 1}.json"
            walls.append(run_compare(url, out, shlex.split(args.bench_args)))
            results.append(json.loads(out.read_text()))
    load_after = os.getloadavg()
    lag_warnings = sim_log.read_text(errors="replace").count("fell behind the wall clock")
    return report(results, walls, args, (load_before, load_after), lag_warnings, workdir)


def adaptive_checks(results: list[dict[str, Any]], li: int) -> tuple[list[str], list[str]]:
    """(where adaptive should equal on at this level, where its interval misses on's figure)."""
    checked, outside = [], []
    for ri, r in enumerate(results):
        row = r["levels"][li]
        adaptive, on = row["adaptive"], row["on"]
        if "unavailable" in adaptive or "unavailable" in on:
            continue
        c = row["concurrency"]
        threshold = r["live_control"].get("original_threshold")
        twins = {t["concurrency"]: t["twin"] for t in (r.get("summary") or {}).get("adaptive_vs_twin", [])}
        literal = threshold is not None and (threshold == 0 or c < threshold)
        if not literal and twins.get(c) != "on":
            continue
        checked.append(f"c={c:g}" if literal else f"c={c:g} (the server holds fewer than the threshold)")
        ci = adaptive.get("output_throughput_ci")
        if ci is None or not ci[0] <= on["output_throughput"] <= ci[1]:
            outside.append(f"c={c:g} run {ri + 1}")
    return checked, outside


def common_levels(results: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The runs cut to the concurrencies every run measured, in the first run's order.

    Every check below pairs the runs level by level; runs at different levels (the afternoon's
    six against a later session's four) must be paired by concurrency, not by position.
    Returns the cut copies and, per run, what was left out.
    """
    shared = set.intersection(*({row["concurrency"] for row in r["levels"]} for r in results))
    order = [row["concurrency"] for row in results[0]["levels"] if row["concurrency"] in shared]
    cut, dropped = [], []
    for i, r in enumerate(results):
        by_c = {row["concurrency"]: row for row in r["levels"]}
        left = [c for c in by_c if c not in shared]
        if left:
            dropped.append(f"run {i + 1}: c=" + ", c=".join(f"{c:g}" for c in left))
        cut.append({**r, "levels": [by_c[c] for c in order]})
    return cut, dropped


def thresholds_overlap(results: list[dict[str, Any]]) -> tuple[bool, str]:
    """Whether the runs' recommended thresholds' intervals overlap, and the intervals in words.

    An interval without an upper end (``threshold_range`` [low, None]: off may never be ahead, as
    ``recommend`` says) reaches every level from its low end up: "never" in words, infinite here."""
    ranges: list[tuple[int, int, float]] = []
    for r in results:
        rec = r.get("recommendation") or {}
        span = rec.get("threshold_range")
        if r.get("recommended_threshold") is None or not span:
            return False, "not every run recommended a threshold with an interval"
        upper = math.inf if span[1] is None else float(span[1])
        ranges.append((r["recommended_threshold"], span[0], upper))
    low, high = max(s[1] for s in ranges), min(s[2] for s in ranges)
    words = "; ".join(
        f"run {i + 1}: {t} ({a}..{'never' if b == math.inf else f'{b:g}'})"
        for i, (t, a, b) in enumerate(ranges)
    )
    return low <= high, words


def report(
    results: list[dict[str, Any]],
    walls: list[float],
    args: argparse.Namespace,
    loads: tuple[tuple[float, float, float], tuple[float, float, float]] | None,
    lag_warnings: int | None,
    workdir: Path,
) -> int:
    ok = True
    results, dropped = common_levels(results)
    if not results[0]["levels"]:
        print("the runs share no concurrency level: nothing to compare")
        return 1
    if dropped:
        print("levels not measured by every run, left out of every check: " + "; ".join(dropped))
    if loads is not None:
        print(
            f"host: {os.cpu_count()} cores, load average {loads[0][0]:.2f} before, {loads[1][0]:.2f} after (1 min)"
        )
        print(f"simulator at speedup {args.speedup:g}: {lag_warnings} fell-behind warnings over the runs")
    for i, wall in enumerate(walls):
        flag = "" if wall <= args.max_s else f"  OVER {args.max_s:.0f} s"
        ok &= wall <= args.max_s
        print(
            f"run {i + 1}: {wall:.1f} s wall (the run's own duration_s {results[i]['duration_s']:.1f} s){flag}"
        )
    threshold = results[0]["live_control"].get("original_threshold")
    shown = "none (the server does not speculate)" if threshold is None else threshold
    print(f"\nlive threshold {shown}; figures are output tok/s, ± half the 95 % interval, [interval]")
    header = "  ".join(f"{'run ' + str(i + 1):>34}" for i in range(len(results)))
    print(f"{'conc':>5} {'arm':>9}  {header}  max diff")
    worst = 0.0
    checked: list[str] = []
    outside: list[str] = []
    for li, row in enumerate(results[0]["levels"]):
        c = row["concurrency"]
        for arm in ARMS:
            cells = [r["levels"][li].get(arm) or {"unavailable": "absent"} for r in results]
            if any("unavailable" in cell for cell in cells):
                continue
            values = [cell["output_throughput"] for cell in cells]
            mean = sum(values) / len(values)
            diff = (max(values) - min(values)) / mean
            worst = max(worst, diff)
            mark = "" if diff <= args.max_diff else "  > bound"
            ok &= diff <= args.max_diff
            print(
                f"{c:>5} {arm:>9}  "
                + "  ".join(f"{figure(cell):>34}" for cell in cells)
                + f"  {diff * 100:5.1f}%{mark}"
            )
        seen, missed = adaptive_checks(results, li)
        checked += seen
        outside += missed
    print(f"\nlargest difference between runs: {worst * 100:.1f}% (bound {args.max_diff * 100:.0f}%)")
    where = ", ".join(dict.fromkeys(checked)) or "no level"
    if outside:
        ok = False
        print(f"adaptive's interval does not hold on's figure at: {', '.join(outside)} (checked: {where})")
    else:
        print(
            f"adaptive's interval holds on's figure wherever adaptive speculates like on ({where}), every run"
        )
    ok &= print_cross_cover(results, args.min_cover)
    print_resolution(results)
    print_noise(results, args.max_diff)
    for i, r in enumerate(results):
        rec = r.get("recommendation") or {}
        settle = r.get("settling") or {}
        force = settle.get("in_force_s") or {}
        recommended = r.get("recommended_threshold")
        verdict = (
            "no recommended threshold"
            if recommended is None
            else f"recommended threshold {recommended} ({rec.get('confidence_label') or 'confidence not given'})"
        )
        print(
            f"run {i + 1}: {verdict}; switches {settle.get('switches') or 0}, in force after "
            f"{force.get('median', 0) * 1000:.0f} ms median, {force.get('max', 0) * 1000:.0f} ms at most"
        )
    overlap, words = thresholds_overlap(results)
    print(f"recommended thresholds' intervals {'overlap' if overlap else 'do not overlap'}: {words}")
    print(f"result JSONs: {workdir}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
