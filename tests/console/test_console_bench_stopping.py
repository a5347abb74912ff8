"""The Bench screen offers the stopping rule and the arms (real app, real agent on the sim): what the
operator types reaches the confirm in words and the agent's plan; a result shows, per level, the
interval reached by each arm (the ± of every cell) and what stopped the level."""

from __future__ import annotations

import time
from typing import Any

from console_testkit import RunningAgent, text_of, until
from textual.widgets import Input, Select

from agent.bench.store import BenchStore, new_bench_id
from agent.wire.bench import StopRule
from agent.wire.bench_result import BenchResult
from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.bench import BenchScreen, stop_fields
from console.screens.confirm_dialog import ConfirmDialog

RULE = "until every arm's 95 % interval is within ±4 % or the run's budget of 20 min 00 s runs out (4 to 12 windows of every arm at a level)"


def _arm(tok_s: float, rel: float, windows: int) -> dict[str, Any]:
    return {"output_throughput": tok_s, "output_throughput_ci": [tok_s * (1 - rel), tok_s * (1 + rel)],
            "repeats": windows, "window_s": 8.0 * windows, "concurrency": 15.0}  # fmt: skip


def _store(agent: RunningAgent) -> str:
    bench_id = new_bench_id(time.time())
    quiet = {"outcome": "bound", "windows": 5, "bound": 0.04, "reached": {"off": 0.031, "baseline": 0.022},
             "words": "within ±4 % after 5 windows; widest off ±3.1 %"}  # fmt: skip
    capped = {"outcome": "max_windows", "windows": 12, "bound": 0.04, "reached": {"off": 0.051, "baseline": 0.03},
              "words": "stopped at the cap of 12 windows (bound ±4 % not reached); widest off ±5.1 %"}  # fmt: skip
    record = {
        "bench_id": bench_id, "mode": "compare", "state": "finished", "created_at": time.time(),
        "finished_at": time.time(), "arms": ["off", "baseline"],
        "levels": [
            {"concurrency": 16, "off": _arm(2100.0, 0.031, 5), "baseline": _arm(2250.0, 0.022, 5), "stopping": quiet},
            {"concurrency": 64, "off": _arm(5800.0, 0.051, 12), "baseline": _arm(6700.0, 0.03, 12), "stopping": capped},
        ],
        "stopping": {"rule": {"until": 0.04, "budget_s": 1200.0, "min_windows": 4, "max_windows": 12, "words": RULE},
                     "levels": []},
        "recommended_threshold": None,
        "recommendation": {"reason": "the run measured only off, baseline (--arms)"},
    }  # fmt: skip
    BenchStore(agent.state_dir).save(BenchResult.model_validate(record))
    return bench_id


async def test_a_ruled_result_shows_what_stopped_each_level_and_the_interval_each_arm_reached(
    agent: RunningAgent,
) -> None:
    bench_id = _store(agent)
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(160, 45)) as pilot:
        await until(lambda: app.model.latest is not None, what="a snapshot")
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        await until(lambda: screen.shown_result == bench_id, what="the ruled run shown")
        table = await until(lambda: "stopped" in text_of(app, "#bench-table") and text_of(app, "#bench-table"),
                            what="the stopped column")  # fmt: skip
    cells = [
        [c.strip() for c in line.split("│")[1:-1]] for line in table.splitlines() if line.startswith("│")
    ]
    rows = {row[0]: " ".join(row) for row in cells}
    assert "±3.1%" in rows["16"] and "±2.2%" in rows["16"] and "within, 5" in rows["16"]
    assert "±5.1%" in rows["64"] and "cap, 12" in rows["64"]
    words = " ".join(table.split())
    assert f"windows were added at a level {RULE}" in words
    assert "c=64: stopped at the cap of 12 windows (bound ±4 % not reached); widest off ±5.1 %" in words, (
        words
    )
    assert "mean of the level's steady-state windows ± half its 95 % interval" in words
    assert "adaptive" not in words


def test_the_rule_is_read_as_an_operator_types_it() -> None:
    assert stop_fields("", "") is None
    assert stop_fields("4%", "20m") == StopRule(until=0.04, budget_s=1200.0)
    assert stop_fields("0.05", "1h") == StopRule(until=0.05, budget_s=3600.0)
    assert stop_fields(" ", "90") == StopRule(budget_s=90.0)
    assert stop_fields("lots", "") == "until: lots is not a share; type a percentage such as 4%"
    assert isinstance(stop_fields("", "soon"), str)


async def test_the_form_sends_the_rule_and_the_arms_and_the_confirm_says_them(agent: RunningAgent) -> None:
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(lambda: app.model.latest is not None, what="a snapshot")
        await app.run_action("show('bench')")
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        await until(lambda: screen.available, what="the agent's bench runner")
        screen.query_one("#bench-levels", Input).value = "1,16"
        screen.query_one("#bench-until", Input).value = "lots"
        screen.action_bench_start()  # as the binding and the Start button do
        await until(lambda: "not a share" in text_of(app, "#bench-status"), what="the bad bound said")
        assert not isinstance(app.screen, ConfirmDialog)
        # A range the agent refuses is said before anything is sent, in the agent's own words
        # (the screen builds the agent's BenchRequest).
        screen.query_one("#bench-until", Input).value = ""
        screen.query_one("#bench-budget", Input).value = "5"
        screen.action_bench_start()
        await until(lambda: "the run's time budget: a number of seconds from 10 to 86400 (24 h)"
                    in text_of(app, "#bench-status"), what="the budget's range said")  # fmt: skip
        assert not isinstance(app.screen, ConfirmDialog)
        screen.query_one("#bench-until", Input).value = "4%"
        screen.query_one("#bench-budget", Input).value = "20m"
        screen.query_one("#bench-arms", Input).value = "off, adaptive"
        screen.action_bench_start()
        await until(lambda: isinstance(app.screen, ConfirmDialog), what="the confirm", timeout_s=60,
                    explain=lambda: text_of(app, "#bench-status"))  # fmt: skip
        body = " ".join(
            (await until(lambda: text_of(app, "#confirm-plan"), what="the confirm's words")).split()
        )
        await pilot.press("escape")
        await until(lambda: "no benchmark started" in text_of(app, "#bench-status"), what="the cancel")
        screen.query_one("#bench-mode", Select).value = "sweep"
        screen.action_bench_start()
        await until(lambda: "arms are a compare's" in text_of(app, "#bench-status"), what="arms on a sweep")
    assert f"then more at a level {RULE}" in body, "the confirm says the rule as the result will"
    assert "arms off, adaptive only" in body
    assert "for the first windows" in body and "at most" in body, "the agent's plan with the rule"
    assert await agent.bench_runs() == []
