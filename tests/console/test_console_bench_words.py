"""Issue 39, item 6: dialogs and commands name what they do, and the Bench screen after a cancel says
once what happened and offers only what exists. Against the real agent on the simulated engine and
the real app (Pilot); fails on the code before issue 39, where the cancel dialog's buttons read
"Confirm (y)" and "Cancel (esc)" ("Cancel" kept the run going), the screen said the cancel three
times, pointed to "an earlier result … in the list below" that did not exist, offered "Apply
recommended threshold" with no recommendation, left its progress bar part-filled, and the palette
said "Start bench sweep" while the mode was compare."""

from __future__ import annotations

from typing import Any

from console_testkit import RunningAgent, screen_text, until
from textual.command import CommandPalette
from textual.widgets import Select

from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.bench import BenchScreen
from console.screens.confirm_dialog import ConfirmDialog

LONG_BENCH = {"mode": "compare", "concurrency": [1, 2, 4, 8, 16, 32], "repeats": 3, "min_window_s": 3,
              "input_len": 32, "output_len": 64}  # fmt: skip


async def palette_text(app: ConsoleApp, pilot: Any, typed: str) -> str:
    await pilot.press("ctrl+p")
    await until(lambda: isinstance(app.screen, CommandPalette), what="the palette")
    await pilot.press(*typed)
    await pilot.pause(0.5)
    text = screen_text(app)
    await pilot.press("escape")
    await until(lambda: not isinstance(app.screen, CommandPalette), what="the palette to close")
    return text


async def test_the_palette_names_the_start_by_the_benchs_mode(agent: RunningAgent) -> None:
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.model.link.state == "connected", what="the link")
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        shown = await palette_text(app, pilot, "start bench")
        assert "Start bench compare" in shown and "Start bench sweep" not in shown, shown
        screen.query_one("#bench-mode", Select).value = "sweep"
        await pilot.pause()
        shown = await palette_text(app, pilot, "start bench")
        assert "Start bench sweep" in shown and "Start bench compare" not in shown, shown
        await until(lambda: screen.available, what="the bench runner")
        await pilot.press("ctrl+p", *"start bench", "enter")
        await until(lambda: isinstance(app.screen, ConfirmDialog), what="the start's dialog")
        dialog = screen_text(app)
        assert "Start run (y)" in dialog and "Don't start (esc)" in dialog, dialog
        await pilot.press("escape")
        await until(
            lambda: "Not confirmed: no benchmark started." in screen_text(app), what="the refusal said"
        )
        assert await agent.bench_runs() == []


async def test_after_a_cancel_the_bench_screen_says_once_what_happened_and_offers_only_what_exists(
    agent: RunningAgent,
) -> None:
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.model.link.state == "connected", what="the link")
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        await until(lambda: screen.available, what="the bench runner")
        assert "Apply recommended threshold" not in screen_text(app)  # no run, no recommendation
        async with agent.client() as client:
            bench_id = (await client.post("/v1/bench", json=LONG_BENCH)).json()["bench_id"]
        await until(lambda: app.model.bench.running is not None, what="the run on the stream")
        await pilot.press("ctrl+k")
        await until(lambda: isinstance(app.screen, ConfirmDialog), what="the cancel's dialog")
        dialog = screen_text(app)
        assert "Stop run (y)" in dialog and "Keep running (esc)" in dialog, dialog
        assert "Confirm (y)" not in dialog and "Cancel (esc)" not in dialog
        await pilot.press("y")
        await until(lambda: app.model.bench.runs[bench_id].state == "cancelled", what="the cancel")
        await until(lambda: f"Run {bench_id} cancelled" in screen_text(app), what="the screen to say so")
        await pilot.pause(0.5)
        app.paint_now()
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert text.count(f"Run {bench_id} cancelled") == 1, text
        assert "list below" not in text, text  # no finished run is listed: nothing to point to
        assert "Apply recommended threshold" not in text, text
        # a run that ended without a result leaves no part-filled bar behind
        assert not screen.query_one("#bench-progress-row").display
