"""The real app (Pilot) against a real agent on the simulated engine, over its real UNIX socket."""

from __future__ import annotations

from console_testkit import RunningAgent, text_of, until
from textual.widgets import DataTable, Input, RichLog

from agent.wire import WIRE_VERSION
from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.bench import BenchScreen
from console.screens.confirm import ConfirmPlan
from console.screens.controls import ControlsScreen
from console.screens.gpus import GpusScreen
from console.screens.kv import KvScreen
from console.screens.logs import LogsScreen
from console.screens.overview import OverviewScreen
from console.screens.profiles import ProfilesScreen
from console.widgets.stacked_bar import StackedBar


def make_app(agent: RunningAgent, **kwargs: object) -> ConsoleApp:
    return ConsoleApp(LocalLink(agent.socket), operator="pilot", **kwargs)  # type: ignore[arg-type]


async def test_every_screen_renders_what_the_agent_sends(agent: RunningAgent) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.model.link.state == "connected", what="the link")
        await until(lambda: len(app.model.snapshots) >= 2, what="two snapshots")
        assert app.model.latest is not None and app.model.latest.wire_version == WIRE_VERSION

        assert isinstance(app.screen, OverviewScreen)
        await until(lambda: "SPEC" in text_of(app, "#badge"), what="the speculation badge")
        assert "Throughput" in text_of(app, "#figures")

        await pilot.press("k")
        assert isinstance(app.screen, KvScreen)
        bar = app.screen.query_one(StackedBar)
        await until(lambda: sum(s.value for s in bar.segments) > 0, what="the KV pool bar")
        await pilot.click("#whatif-ask")
        await until(lambda: "requests that fit" in text_of(app, "#whatif-result"), what="the what-if answer")

        await pilot.press("g")
        assert isinstance(app.screen, GpusScreen)
        await until(lambda: "GPU telemetry" in text_of(app, "#gpu-source") or "source" in text_of(app, "#gpu-source"),
                    what="the GPU source line")  # fmt: skip

        await pilot.press("c")
        assert isinstance(app.screen, ControlsScreen)
        await until(lambda: "built step states" in text_of(app, "#controls-now"), what="the live controls")

        await pilot.press("b")
        assert isinstance(app.screen, BenchScreen)
        await until(lambda: app.screen.available is not None, what="the bench availability check")  # type: ignore[attr-defined]

        await pilot.press("p")
        assert isinstance(app.screen, ProfilesScreen)
        table = app.screen.query_one("#profile-list", DataTable)
        await until(lambda: "local-sim" in [str(k.value) for k in table.rows], what="the profile list")
        assert "running" in str(table.get_cell("local-sim", "running"))

        await pilot.press("l")
        assert isinstance(app.screen, LogsScreen)
        events = app.screen.query_one("#event-log", RichLog)
        await until(lambda: len(events.lines) > 0, what="events in the log screen")


async def test_threshold_from_controls_reaches_the_engine(agent: RunningAgent) -> None:
    before = (await agent.live_state())["threshold"]
    new = 17 if before != 17 else 18
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("c")
        app.screen.query_one("#in-threshold", Input).value = str(new)
        await pilot.click("#apply-threshold")
        dialog = await until(
            lambda: isinstance(app.screen, ConfirmPlan) and app.screen, what="the confirm dialog"
        )
        assert dialog.plan.mode == "live"
        assert any(c.key == "speculation.threshold" and c.new == new for c in dialog.plan.changes)
        await pilot.press("y")
        await until(lambda: isinstance(app.screen, ControlsScreen), what="the dialog to close")
        await until(lambda: "applied" in text_of(app, "#control-result"), what="the applied result")
    state = await agent.live_state()
    assert state["threshold"] == new


async def test_a_rejected_threshold_shows_why_and_changes_nothing(agent: RunningAgent) -> None:
    before = await agent.live_state()
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("c")
        app.screen.query_one("#in-threshold", Input).value = "-3"
        await pilot.click("#apply-threshold")
        shown = await until(lambda: "Rejected" in text_of(app, "#control-result") and text_of(app, "#control-result"),
                            what="the rejection")  # fmt: skip
        assert "speculation.threshold" in shown and "-3" in shown
        assert "Nothing was changed" in shown
        assert not isinstance(app.screen, ConfirmPlan)
    assert (await agent.live_state())["threshold"] == before["threshold"]


async def test_cancel_in_the_confirm_dialog_changes_nothing(agent: RunningAgent) -> None:
    before = await agent.live_state()
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("c")
        app.screen.query_one("#in-threshold", Input).value = str((before["threshold"] or 4) + 5)
        await pilot.click("#apply-threshold")
        await until(lambda: isinstance(app.screen, ConfirmPlan), what="the confirm dialog")
        await pilot.press("n")
        await until(lambda: "Cancelled" in text_of(app, "#control-result"), what="the cancel message")
    assert (await agent.live_state())["threshold"] == before["threshold"]


async def test_readonly_greys_controls_and_refuses_the_palette_action(agent: RunningAgent) -> None:
    before = await agent.live_state()
    app = make_app(agent, readonly=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("c")
        assert app.screen.query_one("#apply-threshold").disabled
        assert app.screen.query_one("#in-threshold").disabled
        assert app.check_action("apply", ("threshold",)) is None
        await app.run_action("apply('threshold')")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmPlan)
    assert (await agent.live_state())["threshold"] == before["threshold"]
