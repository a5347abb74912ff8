"""Chart ticks an operator reads: round values in the label's unit, time before now, log2 levels."""

from __future__ import annotations

import itertools
import math

import pytest

from console.model.window import CHART_WINDOWS_S, DEFAULT_WINDOW_S, next_window, window_label
from console.widgets.chart import PLOT_FRAME_ROWS, labelled_ticks, y_tick_count
from console.widgets.ticks import (
    fmt_count,
    fmt_ms,
    fmt_pct,
    log2_ticks,
    nice_step,
    nice_ticks,
    time_ticks,
)


@pytest.mark.parametrize(
    ("low", "high", "count", "expected"),
    [
        (0, 4367.8, 4, [0, 2000, 4000, 6000]),
        (0, 784.1, 4, [0, 200, 400, 600, 800]),
        (0, 900, 4, [0, 250, 500, 750, 1000]),
        (0, 17.6, 4, [0, 5, 10, 15, 20]),
        (0, 1.0, 4, [0, 0.25, 0.5, 0.75, 1.0]),
        (0, 99, 2, [0, 50, 100]),
    ],
)
def test_ticks_are_round_and_cover_the_data(
    low: float, high: float, count: int, expected: list[float]
) -> None:
    ticks = nice_ticks(low, high, count)
    assert ticks == expected
    assert ticks[0] <= low and ticks[-1] >= high


def test_a_step_is_one_two_two_and_a_half_or_five_times_a_power_of_ten() -> None:
    for span in (0.37, 3.7, 37, 370, 3700, 123456):
        step = nice_step(span, 4)
        mantissa = step / 10 ** math.floor(math.log10(step))
        assert round(mantissa, 6) in (1.0, 2.0, 2.5, 5.0)
        assert span / step <= 4 + 1e-9


def test_labels_carry_their_unit() -> None:
    assert [fmt_count(v) for v in (0, 250, 1000, 1500, 12000)] == ["0", "250", "1k", "1.5k", "12k"]
    assert [fmt_ms(v) for v in (0, 50, 1500)] == ["0 ms", "50 ms", "1.5 s"]
    assert fmt_pct(90) == "90%"


def test_time_ticks_are_round_times_before_now() -> None:
    assert time_ticks(300) == [
        (-300, "−5m"),
        (-240, "−4m"),
        (-180, "−3m"),
        (-120, "−2m"),
        (-60, "−1m"),
        (0, "now"),
    ]
    assert [label for _, label in time_ticks(60)] == ["−1m", "−45s", "−30s", "−15s", "now"]
    assert [label for _, label in time_ticks(3600)][-2:] == ["−15m", "now"]
    assert all(-900 <= x <= 0 for x, _ in time_ticks(900))


def test_bench_levels_sit_on_a_log2_axis() -> None:
    ticks = log2_ticks([1, 2, 4, 8, 16, 32, 64, 128, 250])
    assert [label for _, label in ticks] == ["1", "2", "4", "8", "16", "32", "64", "128", "250"]
    xs = [x for x, _ in ticks]
    assert xs[:5] == [0, 1, 2, 3, 4]  # 1..16 evenly spaced, not squashed against 250


def test_the_y_axis_has_as_many_ticks_as_rows_allow() -> None:
    assert y_tick_count(6) == 2 and y_tick_count(12) == 3 and y_tick_count(40) == 4


def test_a_one_row_chart_labels_only_its_top_tick() -> None:
    """80x24's Bench chart has one canvas row: two labels on it read "1k" or "0" from run to run."""
    ticks, labels = [0.0, 1000.0], ["0", "1k"]
    assert labelled_ticks(ticks, labels, PLOT_FRAME_ROWS + 1) == ([1000.0], ["1k"])
    assert labelled_ticks(ticks, labels, PLOT_FRAME_ROWS + 2) == (ticks, labels)


def test_the_window_cycles_through_the_presets_and_says_so() -> None:
    assert DEFAULT_WINDOW_S == 300.0
    seen = [DEFAULT_WINDOW_S]
    for _ in CHART_WINDOWS_S:
        seen.append(next_window(seen[-1]))
    assert seen == [300.0, 900.0, 3600.0, 60.0, 300.0]
    assert [window_label(w) for w in CHART_WINDOWS_S] == ["1 m", "5 m", "15 m", "1 h"]


@pytest.mark.parametrize("rows", range(4, 40))
@pytest.mark.parametrize("top", [3.0, 97.0, 4_367.8, 61_000.0])
def test_ticks_fall_on_evenly_spaced_rows(rows: int, top: float) -> None:
    """Issue 27: History's 0 → 2.5k was twice 2.5k → 5k apart. With the axis top even_ticks gives,
    plotext's linear row mapping puts every tick the same number of rows from the next."""
    from console.widgets.ticks import even_ticks

    ticks, y_top = even_ticks(0.0, top, rows, 4, 1.0)
    assert ticks[-1] >= top and y_top >= ticks[-1]
    positions = [round((t - ticks[0]) / (y_top - ticks[0]) * (rows - 1)) for t in ticks]
    gaps = {b - a for a, b in itertools.pairwise(positions)}
    assert len(gaps) == 1 and min(gaps) >= 1, (ticks, y_top, positions)


def test_an_axis_has_one_unit() -> None:
    from console.widgets.ticks import axis_labels, even_ticks, fmt_count, fmt_ms

    assert axis_labels(fmt_ms, [0.0, 500.0, 1000.0, 1500.0]) == ["0 s", "0.5 s", "1 s", "1.5 s"]
    assert axis_labels(fmt_ms, [0.0, 50.0, 100.0]) == ["0 ms", "50 ms", "100 ms"]
    assert axis_labels(fmt_count, [0.0, 2500.0, 5000.0]) == ["0", "2.5k", "5k"]
    empty, _ = even_ticks(0.0, 0.1, 10, 4, 1.0)  # no traffic yet: 0 / 1, never 0 / 0 / 0
    assert len(set(axis_labels(fmt_count, empty))) == len(empty)
