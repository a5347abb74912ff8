"""The console's Overview shows an acceptance collapse with its words and its lever (issue 49).

The real app (Pilot) on the real agent, whose simulated drafter stops matching 200 modelled seconds
(50 s at speedup 4: a recent level first) into eight clients' traffic (``--sim-drafter-change
200:random``): the findings area must name the collapse and say to stop drafting, with the
threshold or the autopilot. Waits are for the screen.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from console_testkit import PROFILES, READY_TIMEOUT_S, RunningAgent, screen_text, until, until_async

from console.app import ConsoleApp
from console.link.local import LocalLink

pytestmark = pytest.mark.slow

HEALTH = """
[health]
accept_collapse_window_s = 10
accept_baseline_s = 120
"""


@pytest.fixture
async def drifting_agent() -> AsyncIterator[RunningAgent]:
    root = Path(tempfile.mkdtemp(prefix="k25c-"))
    profiles = root / "profiles"
    profiles.mkdir()
    for shipped in PROFILES.glob("*.toml"):
        shutil.copy(shipped, profiles / shipped.name)
    profile = profiles / "local-sim.toml"
    profile.write_text(profile.read_text() + HEALTH)
    extra = ["--sim-speedup", "4", "--sim-drafter-change", "200:random"]
    agent = RunningAgent(root=root, profile=profile, extra_args=extra)
    agent.launch()
    try:

        async def ready() -> bool:
            if agent.proc.poll() is not None:
                raise RuntimeError(f"agent exited {agent.proc.returncode}: {agent.log}")
            if not agent.socket.exists():
                return False
            status = await agent.status()
            return bool(status.get("engine_state") == "ready" and status.get("engine_url"))

        await until_async(ready, timeout_s=READY_TIMEOUT_S, what="the agent and its sim engine")
        yield agent
    finally:
        agent.stop()
        shutil.rmtree(root, ignore_errors=True)


async def clients(url: str, n: int) -> None:
    async def client(engine: httpx.AsyncClient, i: int) -> None:
        for k in range(1_000_000):
            body = {"text": f"client {i} request {k} " + "word " * 256,
                    "sampling_params": {"max_new_tokens": 256, "ignore_eos": True}}  # fmt: skip
            await engine.post(url + "/generate", json=body)

    async with httpx.AsyncClient(timeout=300) as engine:
        await asyncio.gather(*(client(engine, i) for i in range(n)))


async def test_the_overview_names_a_collapse_and_the_lever_to_stop_drafting(
    drifting_agent: RunningAgent,
) -> None:
    url = (await drifting_agent.status())["engine_url"]
    load = asyncio.create_task(clients(url, 8))
    app = ConsoleApp(LocalLink(drifting_agent.socket), operator="pilot")
    try:
        async with app.run_test(size=(160, 60)) as pilot:
            await until(
                lambda: "Acceptance collapsed" in screen_text(app), timeout_s=240, what="the collapse"
            )
            await pilot.pause()
            text = " ".join(screen_text(app).split())
    finally:
        load.cancel()
        await asyncio.gather(load, return_exceptions=True)
    assert "→ Stop drafting now: set the speculation threshold to 1" in text
    assert "turn the autopilot on" in text
