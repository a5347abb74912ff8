"""bench/studies/bench_repeat.py sizes a repeatable run from the noise the runs saw, window by window.

The quiet real-engine session (bench/results/real-h200-2026-12-02-quiet) showed that two runs of a
few windows each cannot agree within 5 %; the report says how many windows would, and the next
session plans on that figure, so the arithmetic is checked here against hand-made windows.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path
from typing import Any

from agent.bench.interval import run_estimates
from bench.studies import bench_repeat

ROOT = Path(__file__).resolve().parents[2]


def _result(on: list[float], off: list[float], seconds: float) -> dict[str, Any]:
    def arm(figures: list[float]) -> dict[str, Any]:
        return {"runs": [{"output_throughput": f, "duration": seconds} for f in figures]}

    return {"levels": [{"concurrency": 16, "on": arm(on), "off": arm(off), "adaptive": {"unavailable": "x"}}]}


def test_the_spread_pools_every_window_of_every_run_and_sizes_the_run() -> None:
    results = [_result([900, 1100], [500, 500], 3.0), _result([1000, 1000], [500, 510], 3.0)]
    rows = {arm: (n, s, spread) for _, arm, n, s, spread in bench_repeat.window_noise(results)}
    assert set(rows) == {"on", "off"}  # an unavailable arm has no windows
    n, seconds, spread = rows["on"]
    assert (n, seconds) == (4, 3.0)
    assert math.isclose(spread, statistics.stdev([900, 1100, 1000, 1000]) / 1000)
    # 2 (1.96 * 0.0816 / 0.05)^2 = 20.5: 21 windows a run for two runs to agree within 5 % at 95 %
    assert bench_repeat.windows_needed(spread, 0.05) == 21
    # the bound halves, the windows needed quadruple; a quiet arm needs one
    assert bench_repeat.windows_needed(spread, 0.025) == 82
    assert bench_repeat.windows_needed(rows["off"][2], 0.05) == 1


def test_the_report_prints_what_a_run_that_agrees_would_measure(capsys: Any) -> None:
    results = [_result([900, 1100], [500, 500], 3.0), _result([1000, 1000], [500, 510], 3.0)]
    bench_repeat.print_noise(results, 0.05)
    out = capsys.readouterr().out
    # on: 21 windows of 3 s (63 s); off: 1 window (3 s); the first run measured 4 windows of 3 s
    assert "about 66 s (1 min) in its windows, against 12 s in the first run's" in out
    assert "   16        on        4" in out


def test_cross_cover_counts_where_one_runs_interval_holds_the_others_figure() -> None:

    def result(figure: float, ci: tuple[float, float]) -> dict[str, Any]:
        arm = {"output_throughput": figure, "output_throughput_ci": list(ci)}
        return {"levels": [{"concurrency": 1, "on": arm, "off": {"unavailable": "x"}}]}

    # run 1's interval [90, 110] holds run 2's 105; run 2's [104, 106] does not hold run 1's 100
    cover = bench_repeat.cross_cover([result(100, (90, 110)), result(105, (104, 106))])
    assert cover == {(0, "on"): (1, 2)} and bench_repeat.cover_fraction(cover) == (1, 2)
    assert bench_repeat.cover_fraction(
        bench_repeat.cross_cover([result(100, (90, 110)), result(101, (95, 107))])
    ) == (
        2,
        2,
    )


def test_recomputed_intervals_come_from_the_stored_slices_with_this_versions_method() -> None:
    """A stored result's intervals are recomputed from its repeats' slices (how the real pair,
    measured with the older bootstrap, is judged with the current method)."""
    windows = [[[100.0, 1.0], [104.0, 1.0]], [[110.0, 1.0], [108.0, 1.0]]]
    arm = {"output_throughput": 105.5, "runs": [{"slices": w, "duration": 2.0} for w in windows]}
    result = {"levels": [{"concurrency": 1, "on": arm}]}
    want, _ = run_estimates({(0, "on"): [[(t, s) for t, s in w] for w in windows]})
    assert bench_repeat.recomputed_intervals(result) == {(0, "on"): want[(0, "on")].interval}


def test_runs_at_different_levels_are_paired_by_concurrency_not_by_position() -> None:
    """The afternoon's run measured c = 1, 4, 16; a later one 1.0 and 16.0 (a float in its JSON):
    c = 16 must meet c = 16, and c = 4 is said to be left out."""

    def result(levels: list[tuple[float, float]]) -> dict[str, Any]:
        return {"levels": [{"concurrency": c, "on": {"output_throughput": t}} for c, t in levels]}

    cut, dropped = bench_repeat.common_levels(
        [result([(1, 10), (4, 40), (16, 160)]), result([(1.0, 11), (16.0, 161)])]
    )
    assert [[row["on"]["output_throughput"] for row in r["levels"]] for r in cut] == [[10, 160], [11, 161]]
    assert dropped == ["run 1: c=4"]
    same, none = bench_repeat.common_levels([result([(1, 10)]), result([(1, 12)])])
    assert none == [] and [r["levels"][0]["on"]["output_throughput"] for r in same] == [10, 12]


def test_the_recommended_thresholds_intervals_overlap_or_not() -> None:

    def result(threshold: int | None, span: list[int] | None) -> dict[str, Any]:
        return {"recommended_threshold": threshold, "recommendation": {"threshold_range": span}}

    assert bench_repeat.thresholds_overlap([result(50, [28, 87]), result(43, [28, 78])]) == (
        True,
        "run 1: 50 (28..87); run 2: 43 (28..78)",
    )
    assert bench_repeat.thresholds_overlap([result(20, [10, 30]), result(64, [40, 80])])[0] is False
    assert bench_repeat.thresholds_overlap([result(50, [28, 87]), result(None, None)])[0] is False


RESULTS_1206 = ROOT / "bench" / "results" / "real-h200-2026-12-06"


def test_a_threshold_interval_without_an_upper_end_is_never_and_overlaps_what_reaches_its_low_end() -> None:
    """The real triton runs of 2026-12-06: the second recommended 0 with an interval 18..never (off
    never clearly ahead), which crashed the report with a TypeError comparing None with an int."""

    def result(threshold: int | None, span: list[int | None] | None) -> dict[str, Any]:
        return {"recommended_threshold": threshold, "recommendation": {"threshold_range": span}}

    assert bench_repeat.thresholds_overlap([result(62, [18, 108]), result(0, [18, None])]) == (
        True,
        "run 1: 62 (18..108); run 2: 0 (18..never)",
    )
    assert bench_repeat.thresholds_overlap([result(20, [10, 30]), result(0, [40, None])])[0] is False
    assert bench_repeat.thresholds_overlap([result(0, [40, None]), result(0, [50, None])]) == (
        True,
        "run 1: 0 (40..never); run 2: 0 (50..never)",
    )


def test_the_report_on_the_real_runs_of_2026_12_06_ends_with_the_thresholds_line() -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "bench.studies.bench_repeat", "--from",
         str(RESULTS_1206 / "compare-triton-1-16-64-128.json"),
         str(RESULTS_1206 / "compare-triton-16-64-4x6s.json"), "--max-diff", "0.05"],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1  # the runs differ by more than 5 %: a bound failed, said in the table
    assert (
        "recommended thresholds' intervals overlap: run 1: 62 (18..108); run 2: 0 (18..never)" in done.stdout
    )
