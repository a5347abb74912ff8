"""Undo (issue 48, item 3): the change back to the value before the last applied change, planned,
confirmed and audited like any other, from ``agent control undo``, Controls' button and the palette;
and the palette's autopilot on/off. The real agent on the simulated engine, the real app (Pilot)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

from console_testkit import REPO, RunningAgent, screen_text, text_of, until, until_async
from textual.command import CommandPalette

from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.confirm_dialog import ConfirmDialog
from console.screens.controls import ControlsScreen


def agent_cli(agent: RunningAgent, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "agent.cli.main", *args, "--state-dir", str(agent.state_dir)]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=60, cwd=REPO, stdin=subprocess.DEVNULL
    )


def applied(agent: RunningAgent) -> list[dict[str, Any]]:
    """The audit's applied operator changes, oldest first."""
    done = agent_cli(agent, "audit", "--json", "--limit", "1000")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return [r for r in lines if r["phase"] != "intent" and r["result"]["status"] == "applied"
            and not str(r["action"].get("kind", "")).startswith(("autopilot.", "reconcile"))]  # fmt: skip


async def threshold_is(agent: RunningAgent, value: int) -> bool:
    return (await agent.live_state()).get("threshold") == value


async def test_agent_control_undo_puts_the_last_change_back_and_an_undo_of_it_applies_it_again(
    agent: RunningAgent,
) -> None:
    nothing = await asyncio.to_thread(agent_cli, agent, "control", "undo", "--yes")
    assert nothing.returncode == 1
    assert "the audit holds no applied change to undo" in nothing.stdout
    was = (await agent.live_state())["threshold"]
    assert was != 64
    await agent.act("threshold", 64, operator="night-shift")
    await until_async(lambda: threshold_is(agent, 64), what="threshold 64")

    undo = await asyncio.to_thread(agent_cli, agent, "control", "undo", "--yes")
    assert undo.returncode == 0, undo.stderr
    # The plan names the change it reverses, who made it, and what it puts back, before → after.
    assert "undo of act-" in undo.stdout and "threshold" in undo.stdout and "by night-shift" in undo.stdout
    assert f"threshold: 64 → {was}" in undo.stdout or (was == 0 and "threshold: 64 → none" in undo.stdout)
    assert "applied" in undo.stdout
    await until_async(lambda: threshold_is(agent, was), what="the threshold put back")
    line = applied(agent)[-1]
    assert line["action"]["kind"] == "undo" and line["action"]["undoes"]["kind"] == "threshold"
    assert line["before"] == {"speculation.threshold": 64} and line["operator"]
    undone = next(r for r in applied(agent) if r["action"]["kind"] == "threshold")
    assert line["action"]["undoes"]["action_id"] == undone["action"]["action_id"]

    again = await asyncio.to_thread(agent_cli, agent, "control", "undo", "--yes")
    assert again.returncode == 0, again.stderr
    await until_async(lambda: threshold_is(agent, 64), what="the undone change applied again")

    wrong = await asyncio.to_thread(agent_cli, agent, "control", "undo", "3", "--yes")
    assert wrong.returncode == 2 and "undo takes no value" in wrong.stderr
    help_text = await asyncio.to_thread(agent_cli, agent, "control", "--help")
    assert "undo" in help_text.stdout and "before the last applied change" in help_text.stdout


async def test_a_profile_load_is_not_undone_and_the_refusal_says_what_to_do(agent: RunningAgent) -> None:
    await agent.act("threshold", 64)
    await agent.act("apply_profile", "local-sim")  # loaded again from its file: the 64 goes
    refused = await asyncio.to_thread(agent_cli, agent, "control", "undo", "--yes")
    assert refused.returncode == 1
    assert "loaded a whole profile" in refused.stdout and "agent control profile NAME" in refused.stdout


async def test_controls_undo_button_and_the_palette_plan_confirm_and_apply_it(agent: RunningAgent) -> None:
    was = (await agent.live_state())["threshold"]
    await agent.act("threshold", 48, operator="night-shift")
    await until_async(lambda: threshold_is(agent, 48), what="threshold 48")
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.model.link.state == "connected" and app.model.readings, what="readings")
        await pilot.press("c")
        await until(lambda: isinstance(app.screen, ControlsScreen), what="Controls")
        await pilot.click("#apply-undo")
        await until(lambda: isinstance(app.screen, ConfirmDialog), what="the undo's confirm")
        shown = screen_text(app)
        assert "Undo the last change" in shown and "48" in shown
        await pilot.press("y")
        await until(lambda: not isinstance(app.screen, ConfirmDialog), what="the confirm to close")
        await until_async(lambda: threshold_is(agent, was), what="the threshold put back")
        await until(lambda: "applied" in text_of(app, "#control-result"), what="the result line")

        # The palette: undo again (48 comes back), and the autopilot, which it lacked.
        await pilot.press("ctrl+p")
        await until(lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press(*"autopilot")
        await until(lambda: "Turn the autopilot on" in screen_text(app), what="the autopilot's command")
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, CommandPalette), what="the palette to close")
        await pilot.press("ctrl+p")
        await until(lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press(*"undo the last")
        await until(lambda: "Undo the last change" in screen_text(app), what="the undo command")
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, ConfirmDialog), what="the undo's confirm")
        await pilot.press("y")
        await until_async(lambda: threshold_is(agent, 48), what="the undo undone")
