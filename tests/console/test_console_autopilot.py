"""The autopilot in the console: its lines on Overview say what the agent's state says, in words (never
a Python repr), and its toggle on Controls plans, confirms and applies against a real agent."""

from __future__ import annotations

import re

from console_testkit import RunningAgent, text_of, until
from textual.widgets import Button

from agent.wire import AutopilotMove, AutopilotState
from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.confirm import ConfirmPlan
from console.screens.controls import ControlsScreen
from console.widgets.autopilot import autopilot_text

REPR = re.compile(r"\{'|\bNone\b|\bTrue\b|\bFalse\b|\[\]")


def test_off_says_what_runs_instead() -> None:
    # who decides the steps is the engine's read-back (the badge's): -1, SGLang's policy chooses
    shown = autopilot_text(AutopilotState(operator_threshold=125, operator_steps=-1), -1).plain
    assert "AUTOPILOT OFF" in shown and "threshold 125" in shown and "steps not pinned" in shown
    pinned = autopilot_text(AutopilotState(operator_threshold=125, operator_steps=3), 2).plain
    assert "steps 2" in pinned and "steps 3" not in pinned  # the read-back, not the agent's last note
    assert autopilot_text(None).plain == ""  # an older agent: nothing, not a guess


def test_on_it_shows_the_crossover_with_its_uncertainty_and_the_last_move_with_why() -> None:
    move = AutopilotMove(time=3600.0, kind="move", threshold_from=125, threshold_to=48, steps_from=-1,
                         steps_to=2, why="drafting loses from a batch of 48 at ~1k-token contexts")  # fmt: skip
    state = AutopilotState(enabled=True, mode="tracking", threshold=48, steps=2, operator_threshold=125,
                           operator_steps=-1, crossover=47.6, crossover_low=40, crossover_high=57,
                           expected_gain=0.062, last_move=move)  # fmt: skip
    shown = autopilot_text(state).plain
    assert "AUTOPILOT TRACKING" in shown and "threshold 48 · steps 2" in shown
    assert "≈ 48 (40–57)" in shown and "+6.2 % over the operator's 125" in shown
    assert "01:00:00 moved: threshold 125 → 48, steps not pinned → 2" in shown
    assert "drafting loses from a batch of 48" in shown
    assert not REPR.search(shown)


def test_outside_what_was_measured_and_holding_it_says_so_in_words() -> None:
    above = AutopilotState(enabled=True, mode="tracking", threshold=0, steps=3,
                           crossover_note="drafting wins at every batch measured (measured up to a batch of 82)")  # fmt: skip
    shown = autopilot_text(above).plain
    assert "threshold none" in shown and "drafting wins at every batch measured" in shown
    holding = AutopilotState(
        enabled=True, mode="holding", detail="back on the operator's setting: the engine restarted"
    )
    assert (
        "AUTOPILOT HOLDING" in autopilot_text(holding).plain
        and "engine restarted" in autopilot_text(holding).plain
    )
    assert not REPR.search(shown + autopilot_text(holding).plain)


def make_app(agent: RunningAgent, **kwargs: object) -> ConsoleApp:
    return ConsoleApp(LocalLink(agent.socket), operator="pilot", **kwargs)  # type: ignore[arg-type]


async def test_the_toggle_turns_it_on_and_off_through_a_confirmed_plan(agent: RunningAgent) -> None:
    operator = (await agent.live_state())["threshold"]
    app = make_app(agent)
    async with app.run_test(size=(110, 34)) as pilot:
        await until(lambda: "AUTOPILOT OFF" in text_of(app, "#autopilot"), what="the autopilot's line")
        assert f"threshold {operator}" in text_of(app, "#autopilot")
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, ControlsScreen)
        button = screen.query_one("#apply-autopilot", Button)
        await until(lambda: str(button.label) == "Turn on", what="the toggle")
        await pilot.click("#apply-autopilot")
        dialog = await until(lambda: isinstance(app.screen, ConfirmPlan) and app.screen, what="the plan",
                             explain=lambda: text_of(app, "#control-result"))  # fmt: skip
        assert dialog.plan.mode == "live" and dialog.plan.request.kind == "autopilot"
        assert [(c.key, c.new) for c in dialog.plan.changes] == [("speculation.autopilot.enabled", True)]
        assert f"returns to threshold {operator} in one step" in dialog.plan.reason
        await pilot.press("y")
        await until(lambda: "applied" in text_of(app, "#control-result"), what="the applied result")
        await until(lambda: str(button.label) == "Turn off", what="the toggle to follow the agent")
        assert "on (" in text_of(app, "#autopilot-now")
        await pilot.click("#apply-autopilot")
        await until(lambda: isinstance(app.screen, ConfirmPlan), what="the plan to turn it off")
        await pilot.press("y")
        await until(lambda: str(button.label) == "Turn on", what="the toggle back off")
        await pilot.press("o")
        await until(lambda: "AUTOPILOT OFF" in text_of(app, "#autopilot"), what="Overview says off")
    assert (await agent.live_state())["threshold"] == operator


async def test_read_only_greys_the_toggle(agent: RunningAgent) -> None:
    app = make_app(agent, readonly=True)
    async with app.run_test(size=(110, 34)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("c")
        assert app.screen.query_one("#apply-autopilot", Button).disabled
