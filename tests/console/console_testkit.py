"""The console tests' kit: a real ``agent serve --engine sim`` (the one harness, ``tests/agent_harness.py``)
on a socket in a temp directory, and waits.

The console is tested against the real agent and the simulated engine over real sockets; the only
double is the simulated engine itself (it stands in for SGLang). Waiting is on conditions with a
timeout, never a blind sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import time
from collections.abc import Awaitable, Callable
from io import StringIO
from pathlib import Path
from typing import Any, TypeVar

import httpx
from agent_harness import PROFILES, REPO, AgentProc
from rich.console import Console
from textual.app import App
from textual.widgets import Static

from agent.profile import load_profile
from console.theme import rich_styles

__all__ = [
    "READY_TIMEOUT_S", "REPO", "SIM_THRESHOLD", "RunningAgent", "_start_agent", "_stop_agent", "screen_text",
    "sim_profile_variant", "text_of", "until", "until_async",
]  # fmt: skip

SIM_THRESHOLD = load_profile(PROFILES / "local-sim.toml").speculation.threshold
"""The shipped demo profile's threshold (the tests must not hard-code it: the demo story sets it)."""
READY_TIMEOUT_S = 40.0

T = TypeVar("T")


async def until(
    condition: Callable[[], T],
    *,
    timeout_s: float = 20.0,
    what: str,
    explain: Callable[[], str] | None = None,
) -> T:
    """Poll a condition that has no event to await (another process's state, a painted widget)."""
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except Exception as exc:  # the thing polled may still be starting
            last = exc
        if time.monotonic() > deadline:
            detail = f"; {explain()}" if explain is not None else ""
            raise TimeoutError(
                f"timed out after {timeout_s} s waiting for {what} (last error: {last!r}){detail}"
            )
        await asyncio.sleep(0.05)


async def until_async(condition: Callable[[], Awaitable[T]], *, timeout_s: float = 20.0, what: str) -> T:
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while True:
        try:
            value = await condition()
            if value:
                return value
        except Exception as exc:
            last = exc
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s} s waiting for {what} (last error: {last!r})")
        await asyncio.sleep(0.05)


class RunningAgent(AgentProc):
    """The console tests' view of the one harness (``tests/agent_harness.AgentProc``): async calls."""

    @property
    def log(self) -> str:
        with contextlib.suppress(OSError):
            return self.out_log.read_text(errors="replace")[-4000:]
        return ""

    def client(self) -> httpx.AsyncClient:  # type: ignore[override]
        return self.aclient()

    async def status(self) -> dict[str, Any]:  # type: ignore[override]
        async with self.client() as client:
            response = await client.get("/v1/status")
            response.raise_for_status()
            result: dict[str, Any] = response.json()
            return result

    @property
    def engine_log(self) -> Path:
        return self.state_dir / "logs" / "engine.log"

    async def act(self, kind: str, value: object, operator: str = "other-console") -> dict[str, Any]:
        """Plan and confirm an action through the API, as another operator's console would."""
        async with self.client() as client:
            body = {"request_id": os.urandom(8).hex(), "kind": kind, "value": value, "operator": operator}
            plan = (await client.post("/v1/actions", json=body)).json()
            assert plan["mode"] in ("live", "restart"), plan
            result: dict[str, Any] = (await client.post(f"/v1/actions/{plan['action_id']}/confirm")).json()
            return result

    async def bench_runs(self) -> list[dict[str, Any]]:
        async with self.client() as client:
            runs: list[dict[str, Any]] = (await client.get("/v1/bench")).json()["runs"]
            return runs

    async def live_state(self) -> dict[str, Any]:
        """The engine's own read-back of the live speculation state, from its /server_info."""
        url = (await self.status())["engine_url"]
        async with httpx.AsyncClient(timeout=10.0) as client:
            info = (await client.get(f"{url}/server_info")).json()
        state: dict[str, Any] = info["internal_states"][0]["adaptive_spec_live"]
        return state


def sim_profile_variant(
    profiles: Path, name: str, *, production: bool = False, threshold: int | None = None, live_steps: str = ""
) -> Path:
    """A copy of the shipped local-sim profile under another name (production, another threshold)."""
    text = (PROFILES / "local-sim.toml").read_text()
    text = text.replace('name = "local-sim"', f'name = "{name}"')
    if production:
        text = text.replace("production = false", "production = true")
    if threshold is not None:
        text = re.sub(r"(?m)^threshold = \d+$", f"threshold = {threshold}", text)
    if live_steps:
        text = text.replace("live_steps = [1, 2, 3]", f"live_steps = {live_steps}")
    path = profiles / f"{name}.toml"
    path.write_text(text)
    return path


def _start_agent(
    root: Path, profile: str = "local-sim", *, production: bool = False, extra_args: list[str] | None = None
) -> RunningAgent:
    """Launched, not waited for (the fixture waits for the engine with the event loop turning);
    ``extra_args`` go to ``agent serve`` (``--gpus sim``: the demo's simulated GPUs)."""
    profiles = root / "profiles"
    profiles.mkdir(parents=True)
    for shipped in PROFILES.glob("*.toml"):
        shutil.copy(shipped, profiles / shipped.name)
    if profile != "local-sim":
        sim_profile_variant(profiles, profile, production=production)
    agent = RunningAgent(root=root, profile=profiles / f"{profile}.toml", extra_args=list(extra_args or []))
    agent.launch()
    return agent


def _stop_agent(agent: RunningAgent) -> None:
    agent.stop()


def screen_text(app: App[None]) -> str:
    """Everything the terminal shows now, as plain text (what an SVG snapshot draws, without styles)."""
    width, height = app.size
    console = Console(width=width, height=height, file=StringIO(), record=True, color_system=None,
                      legacy_windows=False, safe_box=False)  # fmt: skip
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


def text_of(app: App[None], selector: str) -> str:
    """The plain text a Static in the current screen shows (Text, str or any Rich renderable)."""
    content = app.screen.query_one(selector, Static).content
    if isinstance(content, str):
        return content
    plain = getattr(content, "plain", None)
    if isinstance(plain, str):
        return plain
    buffer = StringIO()
    # In the app's named styles (console.theme), as the app's own console draws it.
    Console(file=buffer, width=200, color_system=None, theme=rich_styles(app.theme_variables)).print(content)
    return buffer.getvalue()
