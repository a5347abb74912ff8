"""The console on what the real engine sent: a recording of the agent on the real patched SGLang 0.5.23
(one H200, tiny models, tests/fixtures/real-h200/README.md) played through the console's replay link.

The sim-made recordings behind the other console tests follow the real captures; this one is the real
thing: a live threshold of 0 ("no threshold"), thirty switches forced by a benchmark in two minutes, the
real engine's OFF reasons and counters.

The comparison was run with ``agent bench compare --url`` straight at the engine (bench/real/gpu.sh),
not through the agent's ``/v1/bench``, so the stream holds its switches but no ``bench.*`` events. The
band tests add the two events the agent sends for a run it holds, at the times of the run's own
result file (``compare-oracle-1.json``: ``started_at``, ``duration_s``), and nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from console_testkit import screen_text, until
from textual.pilot import Pilot

from console.app import ConsoleApp
from console.link.replay import ReplayLink
from console.widgets.chart import BAND_GLYPH, ChartData
from console.widgets.chart_panel import ChartPanel

RECORDING = Path(__file__).parents[1] / "fixtures" / "real-h200" / "oracle-compare.jsonl"
RESULT = Path(__file__).parents[2] / "bench" / "results" / "real-h200-2026-12-01" / "compare-oracle-1.json"
BENCH_ID = "compare-oracle-1"
SIZE = (100, 30)
REPRS = ("{'", "None", "True", "False", "[]")


def records(path: Path = RECORDING) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def replay_app(path: Path = RECORDING) -> ConsoleApp:
    return ConsoleApp(ReplayLink(path, speed=0), clock=lambda: 1000.0, operator="real")


async def played(pilot: Pilot[None]) -> ConsoleApp:
    app = pilot.app
    assert isinstance(app, ConsoleApp)
    await until(lambda: app.model.link.state == "ended", what="the whole recording")
    await pilot.pause()
    return app


def switch_events(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r["data"] for r in rows if r["kind"] == "event"
            and r["data"]["name"] in ("speculation.on", "speculation.off")]  # fmt: skip


def bench_span() -> tuple[float, float]:
    """The comparison's own start and end, from its result file (the bench's clock is the agent's host's)."""
    result = json.loads(RESULT.read_text(encoding="utf-8"))
    return float(result["started_at"]), float(result["started_at"]) + float(result["duration_s"])


def with_bench_events(tmp_path: Path, *, finished: bool = True) -> Path:
    """The recording with the ``bench.started`` (and ``bench.finished``) events an agent-run bench
    sends, in time order. Every seq is doubled so each added event gets an odd one of its own."""
    start, end = bench_span()
    added = [(start, "bench.started", "running")] + (
        [(end, "bench.finished", "finished")] if finished else []
    )
    out: list[dict[str, Any]] = []
    last_seq = 0
    for row in records():
        if row["kind"] != "response":
            while added and added[0][0] <= row["data"]["time"]:
                t, name, state = added.pop(0)
                data = {"seq": last_seq + 1, "time": t, "kind": "bench", "name": name,
                        "message": f"benchmark {BENCH_ID} (compare) {state}",
                        "data": {"bench_id": BENCH_ID, "mode": "compare", "state": state}}  # fmt: skip
                out.append({"seq": data["seq"], "kind": "event", "data": data})
            last_seq = 2 * row["seq"]
            row = {**row, "seq": last_seq, "data": {**row["data"], "seq": last_seq}}
        out.append(row)
    assert not added or not finished, "the run ends inside the recording"
    path = tmp_path / "with-bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")
    return path


def throughput_chart(app: ConsoleApp) -> ChartData:
    data = app.screen.query_one("#throughput-panel", ChartPanel).chart.data
    assert data is not None, "the chart has drawn"
    return data


async def test_without_bench_events_every_switch_marker_is_one_of_the_real_agents_events() -> None:
    """As recorded (no bench events): no band, and a marker for each of the agent's switch events."""
    rows = records()
    switches = switch_events(rows)
    assert len(switches) >= 10, "the comparison forced switches: the recording should hold them"
    newest = [r["data"]["time"] for r in rows if r["kind"] == "snapshot"][-1]
    async with replay_app().run_test(size=SIZE) as pilot:
        app = await played(pilot)
        assert [(s.time, s.on) for s in app.model.spec_switches] == [
            (e["time"], e["name"] == "speculation.on") for e in switches
        ]
        data = throughput_chart(app)
        assert data.bands == ()
        assert data.markers == tuple((e["time"] - newest, e["name"] == "speculation.on") for e in switches)


async def test_a_bench_is_one_band_and_only_the_switches_outside_it_are_marked(tmp_path: Path) -> None:
    """The same stream with the run's bench events: its 21 forced switches become one band."""
    rows = records()
    switches = switch_events(rows)
    start, end = bench_span()
    newest = [r["data"]["time"] for r in rows if r["kind"] == "snapshot"][-1]
    outside = [(e["time"] - newest, e["name"] == "speculation.on") for e in switches
               if not start <= e["time"] <= end]  # fmt: skip
    async with replay_app(with_bench_events(tmp_path)).run_test(size=SIZE) as pilot:
        app = await played(pilot)
        assert len(app.model.spec_switches) == len(switches), "the model keeps every switch"
        for selector in ("#throughput-panel", "#load-panel"):
            data = app.screen.query_one(selector, ChartPanel).chart.data
            assert data is not None
            assert [(b.start, b.end, b.label) for b in data.bands] == [
                (start - newest, end - newest, "bench")
            ]
            assert list(data.markers) == outside, "outside the bench: the agent's events, as without one"
        assert len(throughput_chart(app).markers) <= len(switches) // 10, "far fewer markers than switches"
        text = screen_text(app)
        assert "bench: its own switches unmarked" in text, "the legend says what the band is"
        assert " bench " in text and BAND_GLYPH * 10 in text, "the band is drawn, labelled"


async def test_a_bench_still_running_reaches_now(tmp_path: Path) -> None:
    start, _ = bench_span()
    newest = [r["data"]["time"] for r in records() if r["kind"] == "snapshot"][-1]
    async with replay_app(with_bench_events(tmp_path, finished=False)).run_test(size=SIZE) as pilot:
        app = await played(pilot)
        data = throughput_chart(app)
        assert [(b.start, b.end) for b in data.bands] == [(start - newest, 0.0)]
        assert data.markers == ()
        assert f"Benchmark {BENCH_ID} is running" in screen_text(app)


async def test_the_badge_reads_the_real_engines_live_threshold() -> None:
    """The recording ends with the live threshold at 0: the real engine's read-back of "none"."""
    last = [r["data"] for r in records() if r["kind"] == "snapshot"][-1]["speculation"]
    assert last["threshold"] == 0 and last["threshold_available"] is True
    async with replay_app().run_test(size=SIZE) as pilot:
        app = await played(pilot)
        text = screen_text(app)
        assert "no threshold" in text
        assert ("SPEC ON" if last["on"] else "SPEC OFF") in text


async def test_an_off_moment_shows_the_threshold_and_the_reason(tmp_path: Path) -> None:
    """Cut where the real engine was off above a threshold of 1 (the bench's "off" arm)."""
    lines = RECORDING.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    off = [r for r in rows if r["kind"] == "snapshot"
           and r["data"]["speculation"]["off_reason"] == "above_threshold"]  # fmt: skip
    assert off, "the recording has an OFF above the threshold"
    cut = off[-1]["seq"]
    kept = [line for line, r in zip(lines, rows, strict=True) if r["kind"] == "response" or r["seq"] <= cut]
    path = tmp_path / "off.jsonl"
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    async with replay_app(path).run_test(size=SIZE) as pilot:
        app = await played(pilot)
        text = screen_text(app)
        assert "SPEC OFF" in text and "threshold 1" in text
        assert "running batch at or above the threshold" in text


@pytest.mark.parametrize("key", ["o", "h", "k", "g", "c", "p", "l"])
async def test_no_python_reprs_with_the_real_engines_data(key: str) -> None:
    async with replay_app().run_test(size=SIZE) as pilot:
        app = await played(pilot)
        await pilot.press(key)
        await pilot.pause()
        app.paint_now()
        await pilot.pause()
        text = screen_text(app)
    leaks = [r for r in REPRS if r in text]
    assert not leaks, f"{leaks} on screen {key!r}:\n{text}"
