"""The Bench screen shows each figure as measured: ± its 95 % interval in the table, a bar through
each arm's point on the chart, and an older run (no intervals) as figures alone."""

from __future__ import annotations

import time
from typing import Any

from console_testkit import RunningAgent, text_of, until

from agent.bench.store import BenchStore, new_bench_id
from agent.wire.bench_result import BenchResult
from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.bench import BenchScreen
from console.widgets.chart_panel import ChartPanel


def arm(tok_s: float, rel: float | None, repeats: int = 2, mismatch: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {"output_throughput": tok_s, "engine_mean_running_reqs": 3.0}
    if rel is not None:
        data |= {
            "output_throughput_ci": [tok_s * (1 - rel), tok_s * (1 + rel)],
            "repeats": repeats,
            "window_s": 4.2,
            "concurrency": 31.6,
            "engine_stream_mismatch": mismatch,
        }
    return data


def store(agent: RunningAgent, rel: float | None, started: float) -> str:
    bench_id = new_bench_id(started)
    levels = [
        {"concurrency": 1, "on": arm(300.0, rel), "off": arm(200.0, rel), "adaptive": arm(299.0, rel)},
        {
            "concurrency": 32,
            "on": arm(900.0, rel),
            "off": arm(1000.0, rel, mismatch=True),
            "adaptive": arm(995.0, rel),
        },
    ]
    BenchStore(agent.state_dir).save(
        BenchResult.model_validate(
            {
                "bench_id": bench_id,
                "mode": "compare",
                "state": "finished",
                "created_at": started,
                "finished_at": started + 60,
                "levels": levels,
                "recommended_threshold": 0,
                "recommendation": {"reason": "The arms were indistinguishable at c=32."},
            }
        )
    )
    return bench_id


async def test_each_figure_carries_its_interval_in_the_table_and_the_chart(agent: RunningAgent) -> None:
    store(agent, None, time.time() - 600)  # an older run, listed second
    newest = store(agent, 0.036, time.time() - 60)
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(lambda: app.model.latest is not None, what="a snapshot")
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        await until(lambda: screen.shown_result == newest, what="the newest run shown")
        table = await until(lambda: "±" in text_of(app, "#bench-table") and text_of(app, "#bench-table"),
                            what="the table with intervals")  # fmt: skip
        assert table.count("±3.6%") == 6, table
        assert "1,000 ±3.6% !" in table
        words = " ".join(table.split())  # the caption wraps
        assert "mean of 2 steady-state windows ± half its 95 % interval" in words
        assert "!: the engine counted 2 % more or less than we received" in words
        panel = screen.query_one("#bench-chart", ChartPanel)
        data = await until(lambda: panel.chart.data, what="the chart")
        for series in data.series:
            assert len(series.intervals) == 2 and all(span is not None for span in series.intervals)
        on = next(s for s in data.series if s.label == "on")
        assert on.intervals[1] == (900.0 * (1 - 0.036), 900.0 * (1 + 0.036))
        assert "95 % interval" in str(panel.query_one(".chart-legend").content)
        older = [r.bench_id for r in screen.runs][1]
        screen.show_result(older)
        await until(lambda: screen.shown_result == older and "±" not in text_of(app, "#bench-table"),
                    what="the older run, figures alone")  # fmt: skip
        assert "ran: the engine's mean running requests" in " ".join(text_of(app, "#bench-table").split())
        data = await until(lambda: panel.chart.data if panel.chart.data and not panel.chart.data.series[0].intervals else None,
                           what="the older chart without bars")  # fmt: skip
        assert all(s.intervals == () for s in data.series)
