"""The 3 a.m. page (issue 48, items 1-3) on the real agent and its simulated engine, in the real app:
drafting at every batch size with load above the crossover the host's own bench measured. The
Overview names the problem and the action on its first screen (beside the live threshold), `d` plans
it, undo puts the last change back, and the autopilot, turned on from the palette, starts from the
same bench and says so."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator

import httpx
from console_testkit import RunningAgent, screen_text, text_of, until, until_async
from textual.command import CommandPalette

from agent.bench.provenance import profile_facts
from agent.bench.store import BenchStore, new_bench_id
from agent.profile.store import load_profile
from agent.wire.bench_result import BenchResult
from console.app import ConsoleApp
from console.demo.traffic import _one_request, make_prompt, served_model
from console.link.local import LocalLink
from console.screens.confirm_dialog import ConfirmDialog
from console.screens.overview import OverviewScreen

CLIENTS = 24
"""Requests kept running: the batch the bench speaks for."""
RECOMMENDED = 12
"""The bench's threshold: off measured ahead at c=24, on at c=4."""


def store_bench(agent: RunningAgent) -> str:
    """A compare this host finished, as its store keeps it, with this engine's provenance."""
    bench_id = new_bench_id()
    sha = profile_facts(load_profile(agent.profile), None).sha256
    BenchStore(agent.state_dir).save(
        BenchResult.model_validate(
            {
                "bench_id": bench_id, "mode": "compare", "state": "finished", "profile": "local-sim",
                "created_at": time.time() - 600, "finished_at": time.time() - 60,
                "levels": [
                    {"concurrency": 4, "on": {"output_throughput": 900.0}, "off": {"output_throughput": 600.0}},
                    {"concurrency": CLIENTS, "on": {"output_throughput": 1953.0},
                     "off": {"output_throughput": 2827.0}},
                ],
                "recommended_threshold": RECOMMENDED,
                "recommendation": {"threshold": RECOMMENDED, "crossover": 11.4, "threshold_range": [9, 16],
                                   "reason": "off beats on from 12 running"},
                "environment": {"profile": {"name": "local-sim", "sha256": sha}},
            }
        )
    )  # fmt: skip
    return bench_id


@contextlib.asynccontextmanager
async def load(agent: RunningAgent) -> AsyncIterator[None]:
    """``CLIENTS`` streams against the engine, each starting again as it ends (the demo's requests)."""
    url = (await agent.status())["engine_url"]
    rng = random.Random(48)
    async with httpx.AsyncClient(timeout=httpx.Timeout(120.0)) as client:
        model = await served_model(client, url)

        async def worker() -> None:
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    await _one_request(client, url, make_prompt(rng), model)

        tasks = [asyncio.create_task(worker()) for _ in range(CLIENTS)]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def threshold_is(agent: RunningAgent, value: int) -> bool:
    return (await agent.live_state()).get("threshold") == value


async def confirm(app: ConsoleApp, pilot: object) -> str:
    await until(lambda: isinstance(app.screen, ConfirmDialog), what="the confirm")
    shown = screen_text(app)
    await pilot.press("y")  # type: ignore[attr-defined]
    await until(lambda: not isinstance(app.screen, ConfirmDialog), what="the confirm to close")
    return shown


async def palette(app: ConsoleApp, pilot: object, command: str) -> None:
    await pilot.press("ctrl+p")  # type: ignore[attr-defined]
    await until(lambda: isinstance(app.screen, CommandPalette), what="the palette")
    await pilot.press(*command.lower())  # type: ignore[attr-defined]
    await until(lambda: command in screen_text(app), what=f"the palette's {command}")
    await pilot.press("enter")  # type: ignore[attr-defined]


async def test_the_3am_page_names_the_problem_and_the_action_undo_puts_it_back_and_the_autopilot_starts_from_the_bench(
    agent: RunningAgent,
) -> None:
    await agent.act("threshold", 0, operator="night-shift")  # none: draft at every batch size
    await until_async(lambda: threshold_is(agent, 0), what="no threshold")
    bench_id = store_bench(agent)
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with load(agent), app.run_test(size=(80, 24)) as pilot:
        await until(lambda: isinstance(app.screen, OverviewScreen) and app.model.readings, what="Overview")

        # 1. The first screen names the problem (the finding) and the action (beside the threshold).
        todo = await until(lambda: "threshold → 12" in (t := text_of(app, "#todo")) and t, timeout_s=60,
                           what="the what-to-do line")  # fmt: skip
        assert "[d] plan it" in todo and bench_id in todo
        shown = screen_text(app)
        assert "no threshold" in shown  # the live threshold, beside it
        assert "Drafting at" in text_of(app, "#findings")
        assert "healthy" not in shown.splitlines()[0]
        await pilot.press("d")
        words = await confirm(app, pilot)
        assert "Set the speculation threshold to 12" in words
        await until_async(lambda: threshold_is(agent, RECOMMENDED), what="threshold 12 on the engine")

        # 3. Undo, from the palette: the change before it comes back (none), planned and confirmed.
        await palette(app, pilot, "Undo the last change")
        words = await confirm(app, pilot)
        assert "Undo the last change" in words
        await until_async(lambda: threshold_is(agent, 0), what="the threshold put back to none")

        # 2. The autopilot, turned on from the palette, starts from the bench and says so.
        await palette(app, pilot, "Turn the autopilot on")
        await confirm(app, pilot)
        state = await until(lambda: (s := app.model.latest) is not None and s.autopilot is not None
                            and s.autopilot.enabled and s.autopilot.prior and s.autopilot, what="its prior")  # fmt: skip
        assert bench_id in str(state.prior) and "recommended threshold 12 (9–16)" in str(state.prior)
        await until_async(lambda: threshold_is(agent, RECOMMENDED), timeout_s=60, what="it starts from 12")
        move = await until(lambda: (s := app.model.latest) is not None and s.autopilot is not None
                           and (m := s.autopilot.last_move) is not None and m.kind == "move" and m, what="its move")  # fmt: skip
        assert f"starts from bench run {bench_id}" in move.why
        await pilot.press("o")
        await until(
            lambda: f"starts from bench run {bench_id}" in text_of(app, "#autopilot"), what="the Overview"
        )
