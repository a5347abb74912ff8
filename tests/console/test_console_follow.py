"""Controls and Profiles follow the server (real app, real agent on the sim): fields show the live
values, refresh after every plan unless the operator is editing, and a restart stays "applying"
until the agent says the action ended."""

from __future__ import annotations

from console_testkit import SIM_THRESHOLD, RunningAgent, sim_profile_variant, text_of, until
from textual.widgets import DataTable, Input, Select

from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.confirm import ConfirmPlan
from console.screens.controls import ControlsScreen
from console.screens.profiles import ProfilesScreen


def make_app(agent: RunningAgent) -> ConsoleApp:
    return ConsoleApp(LocalLink(agent.socket), operator="pilot")


def field(app: ConsoleApp, kind: str) -> str:
    return app.screen.query_one(f"#in-{kind}", Input).value


def live_threshold(app: ConsoleApp) -> int | None:
    latest = app.model.latest
    return latest.speculation.threshold if latest is not None else None


async def test_controls_show_live_values_after_a_plan_and_follow_other_operators(agent: RunningAgent) -> None:
    start = (await agent.live_state())["threshold"]
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, ControlsScreen)
        await until(lambda: field(app, "threshold") == str(start), what="the live threshold in its field")
        assert field(app, "topk") == "1" and app.screen.query_one("#in-adaptive", Select).value is True

        # This console applies 17: afterwards the field shows the live 17, not an edit waiting to be sent.
        screen.query_one("#in-threshold", Input).value = "17"
        await pilot.click("#apply-threshold")
        await until(lambda: isinstance(app.screen, ConfirmPlan), what="the confirm dialog")
        await pilot.press("y")
        await until(lambda: "applied" in text_of(app, "#control-result"), what="the applied result")
        await until(lambda: live_threshold(app) == 17, what="a snapshot with the new threshold")
        await until(lambda: not screen.editing("threshold") and field(app, "threshold") == "17",
                    what="the field back on the live value")  # fmt: skip

        # Another operator moves it to 23: the untouched field follows.
        await agent.act("threshold", 23)
        await until(lambda: field(app, "threshold") == "23", what="the field following the server")
        assert "live 23" in text_of(app, "#live-threshold")

        # While this operator types, a change elsewhere does not overwrite the typing; the hint shows both.
        screen.query_one("#in-threshold", Input).value = "99"
        await agent.act("threshold", 31)
        await until(lambda: live_threshold(app) == 31, what="the other operator's change in the stream")
        await until(lambda: "edited · live 31" in text_of(app, "#live-threshold"), what="the edited hint")
        assert field(app, "threshold") == "99"

        # Cancelling the plan for the typed value puts the live value back: a reflexive Apply sends nothing old.
        await pilot.click("#apply-threshold")
        await until(lambda: isinstance(app.screen, ConfirmPlan), what="the confirm dialog")
        await pilot.press("escape")
        await until(lambda: "Cancelled" in text_of(app, "#control-result"), what="the cancel")
        await until(lambda: field(app, "threshold") == "31", what="the live value after the cancel")
    assert (await agent.live_state())["threshold"] == 31


async def test_a_restart_is_applying_until_the_agent_says_it_ended_and_adaptive_shows_off(
    agent: RunningAgent,
) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, ControlsScreen)
        select = screen.query_one("#in-adaptive", Select)
        await until(lambda: select.value is True, what="adaptive shown on, as it runs")
        select.value = False
        await pilot.click("#apply-adaptive")
        dialog = await until(lambda: isinstance(app.screen, ConfirmPlan) and app.screen, what="the plan")
        assert dialog.plan.mode == "restart"
        assert dialog.title_text == "Turn adaptive speculation off on local-sim?"
        await pilot.press("y")
        await until(lambda: screen.pending is not None, what="the restart to be applying")
        assert "applying" in text_of(app, "#control-result")
        action_id = screen.pending.action_id  # type: ignore[union-attr]
        shown = await until(lambda: "applied at" in text_of(app, "#control-result") and text_of(app, "#control-result"),
                            timeout_s=60, what="the end the agent reported")  # fmt: skip
        state = app.model.actions.get(action_id)
        assert state is not None and state.phase == "applied" and "adaptive → off: applied" in shown
        assert screen.pending is None
        # The dropdown shows what runs now (off), and no threshold exists without adaptive mode.
        await until(lambda: "live off" in text_of(app, "#live-adaptive"), what="adaptive live off")
        assert select.value is False and not screen.editing("adaptive")
        assert field(app, "threshold") == ""
        assert "adaptive → off: applied" in text_of(app, "#action-log")


async def test_loading_a_profile_ends_when_the_agent_says_and_the_list_marks_the_new_one(
    agent: RunningAgent,
) -> None:
    # A new threshold and another set of live steps: the steps need a restart.
    sim_profile_variant(agent.root / "profiles", "local-sim-b", threshold=64, live_steps="[1, 3]")
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("p")
        screen = app.screen
        assert isinstance(screen, ProfilesScreen)
        table = screen.query_one("#profile-list", DataTable)
        await until(
            lambda: "local-sim-b" in [str(k.value) for k in table.rows], what="the new profile listed"
        )
        screen.show_profile("local-sim-b")
        await until(lambda: screen.selected == "local-sim-b", what="the selection")
        await pilot.click("#profile-load")
        dialog = await until(lambda: isinstance(app.screen, ConfirmPlan) and app.screen, what="the plan")
        assert dialog.title_text == "Load profile local-sim-b in place of local-sim?"
        shown = text_of(app, "#confirm-plan")
        assert "RESTART" in shown and f"{SIM_THRESHOLD} → 64" in shown and "1, 2, 3 → 1, 3" in shown
        await pilot.press("y")
        await until(lambda: "applied at" in text_of(app, "#profile-result"), timeout_s=60,
                    what="the load's end", explain=lambda: text_of(app, "#profile-result"))  # fmt: skip
        await until(lambda: "running" in str(table.get_cell("local-sim-b", "name")),
                    what="the running mark on the loaded profile")  # fmt: skip
        assert "running" not in str(table.get_cell("local-sim", "name"))
