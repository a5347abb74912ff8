"""A benchmark's recommended threshold is applied from the Bench screen as a normal action:
the agent plans it, the operator confirms old → new, the engine changes."""

from __future__ import annotations

import time

from console_testkit import RunningAgent, text_of, until
from textual.widgets import Button

from agent.bench.store import BenchStore, new_bench_id
from agent.wire.bench_result import BenchResult
from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.bench import BenchScreen
from console.screens.confirm import ConfirmPlan

RECOMMENDED = 48


def _store_finished_run(agent: RunningAgent) -> str:
    """A comparison this host finished earlier, as the agent's own store keeps it."""
    bench_id = new_bench_id()
    level = {"output_throughput": 100.0}
    BenchStore(agent.state_dir).save(
        BenchResult.model_validate(
            {
                "bench_id": bench_id,
                "mode": "compare",
                "state": "finished",
                "created_at": time.time() - 60,
                "finished_at": time.time(),
                "levels": [
                    {"concurrency": c, "on": level, "off": level, "adaptive": level, "envelope": 100.0}
                    for c in (1, 32, 64)
                ],
                "recommended_threshold": RECOMMENDED,
                "recommendation": {"reason": "off beats on from 48 running"},
            }
        )
    )
    return bench_id


async def test_the_recommended_threshold_is_planned_confirmed_and_reaches_the_engine(
    agent: RunningAgent,
) -> None:
    _store_finished_run(agent)
    before = await agent.live_state()
    assert before["threshold"] != RECOMMENDED
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        await until(lambda: screen.recommended == RECOMMENDED, what="the stored run's recommendation")
        assert "Recommended threshold" in text_of(app, "#bench-status")
        assert not screen.query_one("#bench-apply", Button).disabled
        await pilot.click("#bench-apply")
        dialog = await until(
            lambda: isinstance(app.screen, ConfirmPlan) and app.screen, what="the confirm dialog"
        )
        assert dialog.plan.mode == "live"
        assert any(
            c.key == "speculation.threshold" and c.old == before["threshold"] and c.new == RECOMMENDED
            for c in dialog.plan.changes
        )
        await pilot.press("y")
        await until(lambda: "applied" in text_of(app, "#bench-apply-result"), what="the applied result")
    assert (await agent.live_state())["threshold"] == RECOMMENDED


async def test_readonly_cannot_apply_a_recommendation(agent: RunningAgent) -> None:
    _store_finished_run(agent)
    before = await agent.live_state()
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot", readonly=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        await until(lambda: screen.recommended == RECOMMENDED, what="the stored run's recommendation")
        assert screen.query_one("#bench-apply", Button).disabled
        screen.apply_recommended()
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmPlan)
    assert (await agent.live_state())["threshold"] == before["threshold"]
