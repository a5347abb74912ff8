"""Issue 39 (items 5 and 9) and issue 38 (item 8): one name per concept, no raw sentinel, and errors
that say what is allowed, against the real app (Pilot) and the real agent on the simulated engine,
and the CLI where it is the CLI's. Every test here fails on the code before issue 40's catalogue.

The words come from the action catalogue (``agent.wire.actions``): the step count is "steps", a
pin is its number, no pin is "not pinned (SGLang's policy chooses)", the threshold's 0 is "none".
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

from console_testkit import REPO, RunningAgent, screen_text, text_of, until, until_async
from textual.pilot import Pilot
from textual.widgets import Input

from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.audit import AuditScreen
from console.screens.confirm import ConfirmPlan
from console.screens.confirm_dialog import ConfirmDialog
from console.screens.controls import ControlsScreen

RAW = ("-1", "unset", "speculation.num_steps", "pinned_steps", "None")
"""What an operator never reads for the step count (the pin dialog said ``speculation.num_steps 3 → 2``,
the release dialog ``pinned_steps 2 → unset``, the audit ``unset → -1``)."""
BUILT = "built steps: 1, 2, 3"


def make_app(agent: RunningAgent) -> ConsoleApp:
    return ConsoleApp(LocalLink(agent.socket), operator="pilot")


def agent_cli(agent: RunningAgent, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "agent.cli.main", *args, "--state-dir", str(agent.state_dir)]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=60, cwd=REPO, stdin=subprocess.DEVNULL
    )


async def controls(app: ConsoleApp, pilot: Pilot[None]) -> ControlsScreen:
    await until(lambda: app.model.link.state == "connected" and app.model.readings, what="readings")
    await pilot.press("c")
    screen = app.screen
    assert isinstance(screen, ControlsScreen)
    await until(lambda: BUILT in text_of(app, "#controls-now"), what="the live settings")
    return screen


async def type_into(pilot: Pilot[None], selector: str, text: str) -> None:
    """Type as an operator does: clear the field, then one key at a time (a field that drops a key
    or cuts a long number shows it)."""
    await pilot.click(selector)
    field = pilot.app.screen.query_one(selector, Input)
    field.value = ""
    for char in text:
        await pilot.press(char)


async def test_pin_and_release_read_as_steps_in_the_dialogs_controls_and_the_audit(
    agent: RunningAgent,
) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await controls(app, pilot)
        # built steps: one way of saying it, on Controls and in the plan's reason
        assert "built step states" not in text_of(app, "#controls-now")
        await type_into(pilot, "#in-steps", "2")
        await pilot.click("#apply-steps")
        dialog = await until(
            lambda: isinstance(app.screen, ConfirmPlan) and app.screen, what="the pin's plan"
        )
        shown = text_of(app, "#confirm-plan")
        assert "steps" in shown and "not pinned (SGLang's policy chooses) → 2" in shown, shown
        assert BUILT in shown and not [raw for raw in RAW if raw in shown], shown
        assert dialog.title_text.startswith("Pin speculation steps at 2")
        await pilot.press("y")
        await until(lambda: "pinned at 2" in text_of(app, "#live-steps"), what="the pin")
        await pilot.click("#release-steps")
        await until(lambda: isinstance(app.screen, ConfirmDialog), what="the release's plan")
        shown = text_of(app, "#confirm-plan")
        assert "steps" in shown and "2 → not pinned (SGLang's policy chooses)" in shown, shown
        assert not [raw for raw in RAW if raw in shown], shown
        await pilot.press("y")
        await until(lambda: "live not pinned" in text_of(app, "#live-steps"), what="released")
        # the audit: the pin, the release and the agent's start-up reconciliation in the same words
        app.set_focus(None)
        await pilot.press("a")
        assert isinstance(app.screen, AuditScreen)
        await until(lambda: len(app.screen.rows) >= 3, what="the audit rows")
        rows = {cells[2]: cells[4] for _, cells in app.screen.changes}
        assert rows["reconcile"].startswith("threshold "), rows
        assert "steps not pinned" in rows["reconcile"] and "→" not in rows["reconcile"], rows
        assert [cells[4] for _, cells in app.screen.changes if cells[2] == "steps"][:2] == [
            "steps 2 → not pinned",
            "steps not pinned → 2",
        ]
        shown = screen_text(app)
        assert not [raw for raw in RAW if raw in shown], shown


async def test_refusals_say_what_is_allowed_and_keep_what_was_typed_whole(agent: RunningAgent) -> None:
    app = make_app(agent)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await controls(app, pilot)
        # letters are said, not dropped
        await type_into(pilot, "#in-threshold", "12ab")
        assert screen.query_one("#in-threshold", Input).value == "12ab"
        await pilot.click("#apply-threshold")
        said = await until(lambda: "not a whole number" in text_of(app, "#control-result") and text_of(app, "#control-result"),
                           what="the refusal")  # fmt: skip
        assert (
            "threshold: “12ab” is not a whole number; threshold takes a running batch size from 1 to 4096"
            in said
        )
        # a long number stays whole (it became 9999 or 99999) and is refused naming what is allowed
        await type_into(pilot, "#in-threshold", "99999999999")
        assert screen.query_one("#in-threshold", Input).value == "99999999999"
        await pilot.click("#apply-threshold")
        said = await until(lambda: "Rejected" in text_of(app, "#control-result") and text_of(app, "#control-result"),
                           what="the threshold's refusal")  # fmt: skip
        assert "threshold: 99999999999 is outside what it takes; threshold takes a running batch size" in said
        # steps that were not built: the steps that were, never the schema's "less than or equal to 16"
        await type_into(pilot, "#in-steps", "99999")
        await pilot.click("#apply-steps")
        said = await until(lambda: "steps: 99999" in text_of(app, "#control-result") and text_of(app, "#control-result"),
                           what="the steps' refusal")  # fmt: skip
        assert f"steps: 99999 is not a step count this server built; {BUILT}" in said, said
        assert "16" not in said and "less than" not in said
        # recent actions say the refusal once, with its reason
        log = await until(lambda: "steps → 99999" in text_of(app, "#action-log") and text_of(app, "#action-log"),
                          what="the actions log")  # fmt: skip
        assert "steps → 99999: rejected — steps: 99999 is not a step count this server built" in log, log
        assert "rejected — rejected" not in log
        # an empty field: said, and the field shows the live value again (it is no edit)
        field = screen.query_one("#in-threshold", Input)
        field.value = ""
        await pilot.click("#apply-threshold")
        await until(lambda: "threshold needs a value" in text_of(app, "#control-result"), what="the refusal")
        await until(
            lambda: field.value != "" and "edited" not in text_of(app, "#live-threshold"), what="reset"
        )
        assert "threshold needs a value: a running batch size from 1 to 4096" in text_of(
            app, "#control-result"
        )


async def test_agent_control_says_what_each_setting_takes(agent: RunningAgent) -> None:
    """Issue 38 item 8 from the command line: 4.0, 1.5 as a threshold or steps are refused naming
    the setting and what it takes; a step count not built names the built ones."""
    decimal = await asyncio.to_thread(agent_cli, agent, "control", "threshold", "4.0", "--yes")
    assert decimal.returncode == 2
    assert "threshold: “4.0” is not a whole number; threshold takes a running batch size" in decimal.stderr
    fraction = await asyncio.to_thread(agent_cli, agent, "control", "steps", "1.5", "--yes")
    assert (
        fraction.returncode == 2
        and "steps: “1.5” is not a whole number; steps takes a step count" in fraction.stderr
    )
    unbuilt = await asyncio.to_thread(agent_cli, agent, "control", "steps", "99999", "--yes")
    assert unbuilt.returncode == 1 and f"{BUILT}" in unbuilt.stdout and "16" not in unbuilt.stdout
    async with agent.client() as client:
        answer = await client.post(
            "/v1/actions", json={"request_id": "vocab-0001", "kind": "steps", "value": []}
        )
    [error] = answer.json()["detail"]
    assert answer.status_code == 422 and error["loc"] == ["body", "value"]
    assert error["msg"].startswith("steps takes a whole number: a step count built at start-up")
    pinned = await asyncio.to_thread(agent_cli, agent, "control", "steps", "2", "--yes")
    assert pinned.returncode == 0 and "steps: not pinned (SGLang's policy chooses) → 2" in pinned.stdout
    await until_async(lambda: _pinned(agent, 2), what="the pin")


async def _pinned(agent: RunningAgent, steps: int) -> bool:
    return bool((await agent.live_state())["pinned_steps"] == steps)
