"""The action catalogue is the one list of operator actions (issue 40): every kind it lists has a rule
in the planner's table, a place on the console (a Controls field or toggle, or the Profiles screen's
load), the confirm's words and a choice of ``agent control``. A kind missing from any of them fails.

The console is the real app, fed the committed recording of the real agent (the snapshot tests'),
so the places are found on the screens an operator opens, not in a module's constants.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

import pytest
from console_testkit import until
from textual.app import App
from textual.css.query import NoMatches

from agent.cli.main import build_parser
from agent.control import planner
from agent.wire import ActionRequest, Plan, actions
from agent.wire.actions import CATALOGUE, ActionSpec
from console.app import ConsoleApp
from console.link.replay import ReplayLink
from console.screens.confirm import plan_title
from console.screens.controls import ControlsScreen
from console.screens.profiles import ProfilesScreen
from console.widgets.autopilot import AutopilotToggle

RECORDING = Path(__file__).parent / "data" / "local-sim.jsonl"
"""The snapshot tests' recording of the real agent on the sim."""
SAMPLE = {"count": 2, "switch": True, "name": "kimi-k25-eagle3", "nothing": None}
"""A value of each type, for the confirm's words."""


def control_choices() -> tuple[str, ...]:
    """The settings ``agent control`` offers, read off its own parser."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    control = commands.choices["control"]
    setting = next(a for a in control._actions if a.dest == "setting")
    return tuple(setting.choices or ())


def on_screen(app: App[None], spec: ActionSpec) -> bool:
    """Whether the screen in view offers ``spec``'s kind where the catalogue says it lives."""
    try:
        if spec.place == "button":
            app.screen.query_one(f"#apply-{spec.kind}")
        elif spec.place in ("input", "select"):
            app.screen.query_one(f"#in-{spec.kind}")
            app.screen.query_one(f"#apply-{spec.kind}")
        elif spec.place == "toggle":
            app.screen.query_one(AutopilotToggle)
        else:
            app.screen.query_one("#profile-load")
    except NoMatches:
        return False
    return True


def off_the_page(
    specs: Iterable[ActionSpec], controls: App[None] | None, profiles: App[None] | None
) -> dict[str, list[str]]:
    """For each kind, the places it is missing from (the console's, where its app is given)."""
    choices = control_choices()
    missing: dict[str, list[str]] = {}
    for spec in specs:
        gone = []
        if spec.kind not in planner.RULES:
            gone.append("planner")
        screen = profiles if spec.place == "profiles" else controls
        if screen is not None and not on_screen(screen, spec):
            gone.append("console")
        request = ActionRequest.model_construct(
            request_id="catalogue", kind=spec.kind, value=SAMPLE[spec.takes]
        )
        title = plan_title(Plan(action_id="act-x", request=request, mode="live", reason=""), "prod")
        if not title or title.startswith("Apply ") or spec.words(SAMPLE[spec.takes]) not in title:
            gone.append("confirm")
        if spec.name not in choices:
            gone.append("cli")
        if gone:
            missing[spec.kind] = gone
    return missing


async def test_every_kind_has_its_rule_its_place_its_words_and_its_cli_choice() -> None:
    app = ConsoleApp(ReplayLink(RECORDING, speed=0), clock=lambda: 1000.0, operator="catalogue")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.model.link.state == "ended", what="the whole recording")
        await pilot.press("c")
        await until(lambda: isinstance(app.screen, ControlsScreen), what="Controls")
        assert off_the_page(CATALOGUE.values(), app, None) == {}
        assert len(CATALOGUE) >= 6
        # the console offers what the catalogue lists, and nothing it does not
        fields = {str(w.id).removeprefix("in-") for w in app.screen.query("Input, Select") if w.id}
        assert fields == {s.kind for s in CATALOGUE.values() if s.place in ("input", "select")}
        await pilot.press("p")
        await until(lambda: isinstance(app.screen, ProfilesScreen), what="Profiles")
        profiles = [s for s in CATALOGUE.values() if s.place == "profiles"]
        assert profiles and off_the_page(profiles, None, app) == {}


async def test_a_kind_missing_from_any_place_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind added to the catalogue alone (no rule, no field, no CLI choice), and a rule taken away,
    are both found."""
    new = ActionSpec(kind="max_running", name="max-running", key="server.max_running_requests",  # type: ignore[arg-type]
                     takes="count", allowed="a whole number", label="max running → {value}",
                     confirm="Set max running requests to {value}{on}?", audit="max running", place="input",
                     hint="requests", low=1, high=4096)  # fmt: skip
    app = ConsoleApp(ReplayLink(RECORDING, speed=0), clock=lambda: 1000.0, operator="catalogue")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.model.link.state == "ended", what="the whole recording")
        await pilot.press("c")
        await until(lambda: isinstance(app.screen, ControlsScreen), what="Controls")
        monkeypatch.setitem(CATALOGUE, "max_running", new)  # type: ignore[index]
        monkeypatch.setitem(actions._BY_KIND, "max_running", new)
        assert off_the_page(CATALOGUE.values(), app, None) == {"max_running": ["planner", "console", "cli"]}
        monkeypatch.delitem(CATALOGUE, "max_running")  # type: ignore[arg-type]
        monkeypatch.delitem(planner.RULES, "topk")
        assert off_the_page(CATALOGUE.values(), app, None) == {"topk": ["planner"]}
