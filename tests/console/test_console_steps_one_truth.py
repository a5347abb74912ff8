"""Issue 39, item 3: one source of truth for who decides the steps, on every screen. Against the real
agent on the simulated engine and the real app; fails on the code before issue 39, where after a pin
was released the Overview's autopilot line said "the operator's setting runs: threshold 143, steps 3"
(the profile's step count, which cannot say whether it is pinned) while the badge, Controls and
``agent status`` said SGLang's policy chooses."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from console_testkit import REPO, SIM_THRESHOLD, RunningAgent, text_of, until

from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.controls import ControlsScreen
from console.screens.overview import OverviewScreen


def agent_status(agent: RunningAgent) -> str:
    argv = [sys.executable, "-m", "agent.cli.main", "status", "--state-dir", str(agent.state_dir)]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, cwd=REPO, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_after_a_pin_is_released_every_screen_says_sglangs_policy_chooses(agent: RunningAgent) -> None:
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.model.link.state == "connected" and app.model.readings, what="readings")
        overview = app.screen
        assert isinstance(overview, OverviewScreen)
        await agent.act("steps", 2, operator="pilot")
        await until(lambda: "pinned" in text_of(app, "#badge") and "steps 2" in text_of(app, "#autopilot"),
                    what="the pin on the badge and the autopilot line")  # fmt: skip
        await agent.act("steps", -1, operator="pilot")  # release the pin
        await until(lambda: "SGLang's policy" in text_of(app, "#badge"), what="the release on the badge")
        app.paint_now()
        await pilot.pause()
        line = text_of(app, "#autopilot")
        assert f"threshold {SIM_THRESHOLD}, steps not pinned" in line, line
        # the agent's own view of the operator's setting says the same (it is what "off" restores)
        latest = app.model.latest
        assert latest is not None and latest.autopilot is not None
        assert latest.autopilot.operator_steps == -1, latest.autopilot
        await pilot.press("c")
        controls = app.screen
        assert isinstance(controls, ControlsScreen)
        await until(lambda: "not pinned" in text_of(app, "#live-steps"), what="Controls' steps hint")
    said = await asyncio.to_thread(agent_status, agent)
    assert "not pinned" in said, said
    assert "pinned at" not in said, said
