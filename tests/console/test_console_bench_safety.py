"""Bench safety (real app, real agent on the sim): a start is confirmed, on production by typing the
profile's name; a refused start shows the agent's reason and starts nothing; the run history
refreshes when a run ends; while a run goes, Overview says why its tok/s differs from the bench's."""

from __future__ import annotations

from console_testkit import RunningAgent, text_of, until
from textual.widgets import Button, DataTable, Input

from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.bench import BenchScreen
from console.screens.confirm_dialog import ConfirmDialog


def make_app(agent: RunningAgent) -> ConsoleApp:
    return ConsoleApp(LocalLink(agent.socket), operator="pilot")


async def open_bench(app: ConsoleApp, pilot: object, levels: str = "1,2", requests: str = "4") -> BenchScreen:
    await until(lambda: app.model.latest is not None, what="a snapshot")
    await app.run_action("show('bench')")
    screen = app.screen
    assert isinstance(screen, BenchScreen)
    await until(lambda: screen.available, what="the agent's bench runner")
    screen.query_one("#bench-levels", Input).value = levels
    screen.query_one("#bench-requests", Input).value = requests
    screen.query_one("#bench-output", Input).value = "16"
    screen.query_one("#bench-input", Input).value = "32"
    return screen


async def test_a_production_bench_start_asks_for_the_profile_name_typed(
    production_agent: RunningAgent,
) -> None:
    app = make_app(production_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_bench(app, pilot)
        assert app.model.latest is not None and app.model.latest.production
        await pilot.click("#bench-start")
        dialog = await until(lambda: isinstance(app.screen, ConfirmDialog) and app.screen, what="the confirm")
        assert dialog.challenge == "prod-sim"
        assert dialog.title_text == "Start a benchmark on prod-sim?"
        assert "PRODUCTION" in text_of(app, "#confirm-challenge-label")
        confirm = dialog.query_one("#confirm-yes", Button)
        assert confirm.disabled
        # A reflexive y does nothing; a wrong name does not unlock it.
        await pilot.press("y")
        assert app.screen is dialog and screen.bench_id is None
        dialog.query_one("#confirm-challenge", Input).value = "prod-si"
        await pilot.pause()
        assert confirm.disabled
        dialog.query_one("#confirm-challenge", Input).value = "prod-sim"
        await until(lambda: not confirm.disabled, what="the typed name to unlock the confirm")
        await pilot.click("#confirm-yes")
        await until(lambda: screen.bench_id is not None, what="the run to start")
    assert [r["bench_id"] for r in await production_agent.bench_runs()] == [screen.bench_id]


async def test_cancelling_the_bench_confirm_starts_nothing(production_agent: RunningAgent) -> None:
    app = make_app(production_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_bench(app, pilot)
        await pilot.click("#bench-start")
        await until(lambda: isinstance(app.screen, ConfirmDialog), what="the confirm")
        await pilot.press("escape")
        await until(lambda: "no benchmark started" in text_of(app, "#bench-status"), what="the cancel")
        assert screen.bench_id is None
    assert await production_agent.bench_runs() == []


async def test_a_refused_start_shows_the_agents_reason_and_starts_nothing(agent: RunningAgent) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_bench(app, pilot, levels="1,5000")
        await pilot.click("#bench-start")  # the agent's own request refuses it before anything is sent
        shown = await until(lambda: "4096" in text_of(app, "#bench-status") and text_of(app, "#bench-status"),
                            what="the refusal")  # fmt: skip
        assert "concurrency levels: a list of 1 to 64 different whole numbers from 1 to 4096" in shown
        assert not isinstance(app.screen, ConfirmDialog)
        assert screen.bench_id is None
    assert await agent.bench_runs() == []


async def test_the_run_history_refreshes_and_overview_explains_the_token_count(agent: RunningAgent) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_bench(app, pilot, levels="1,2,4", requests="12")
        assert "No benchmark has run" in text_of(app, "#bench-availability")
        await pilot.click("#bench-start")
        await until(lambda: isinstance(app.screen, ConfirmDialog), what="the confirm")
        await pilot.press("y")
        await until(lambda: screen.bench_id is not None, what="the run to start")
        bench_id = screen.bench_id
        assert f"Run {bench_id} is running" in text_of(app, "#bench-table")
        # While it runs, Overview says what its own tok/s counts and what the bench counts.
        await pilot.press("o")
        note = await until(lambda: app.screen.query_one("#tokens-note").display and text_of(app, "#tokens-note"),
                           what="the note while the bench runs")  # fmt: skip
        assert f"Benchmark {bench_id} is running" in note and "prompt tokens" in note
        await pilot.press("b")
        runs = screen.query_one("#bench-runs", DataTable)
        await until(lambda: f"Run {bench_id} finished" in text_of(app, "#bench-progress-text"), timeout_s=120,
                    what="the run to finish", explain=lambda: text_of(app, "#bench-progress-text"))  # fmt: skip
        await until(lambda: "1 run on this host" in text_of(app, "#bench-availability"), what="the history")
        await until(lambda: bench_id in [str(k.value) for k in runs.rows], what="the run in the list")
        await until(lambda: f"Run {bench_id}" in text_of(app, "#bench-table") and "asked" in text_of(app, "#bench-table"),
                    what="the result, labelled with its run")  # fmt: skip
        await pilot.press("o")
        await until(
            lambda: not app.screen.query_one("#tokens-note").display, what="the note gone after the run"
        )
