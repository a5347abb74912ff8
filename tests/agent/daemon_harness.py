"""The daemon tests' helpers: their profiles, their view of the one agent harness, stream reading.

Agents start through ``tests/agent_harness.py`` (shared with the end-to-end and console tests): the
faults these tests need (an engine killed, an agent killed and started again, file modes, what
reaches the logs) exist only between real processes, so nothing here runs the app in-process.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
from agent_harness import PROFILES, REPO, AgentProc, pid_alive, wait_until

__all__ = [
    "ENGINE_KEY",
    "PROFILES",
    "REPO",
    "Agent",
    "new_root",
    "pid_alive",
    "read_stream",
    "wait_until",
    "write_profile",
]

ENGINE_KEY = "sk-k25test-" + "5f3c9a" * 4
"""The simulated engine's API key: must never show up in anything the agent writes or serves."""


def write_profile(
    root: Path, name: str, *, env: dict[str, str] | None = None, key_file: Path | None = None
) -> Path:
    """local-sim, renamed, with an API key file and optional engine environment."""
    text = (PROFILES / "local-sim.toml").read_text()
    text = text.replace('name = "local-sim"', f'name = "{name}"')
    server_extra = ""
    if key_file is not None:
        server_extra += f'api_key_file = "{key_file}"\n'
    text = text.replace("[server]\n", "[server]\n" + server_extra, 1)
    if env:
        text += "\n[server.env]\n" + "".join(f'{k} = "{v}"\n' for k, v in env.items())
    path = root / "profiles" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


class Agent(AgentProc):
    """The daemon tests' view of the one harness (``tests/agent_harness.AgentProc``): the agent's
    default profile library, a 5 s drain, an async ``client`` and ``start()`` that returns the agent."""

    def __init__(self, root: Path, profile: Path, extra: list[str] | None = None) -> None:
        super().__init__(
            root=root, profile=profile, extra_args=list(extra or []), drain_timeout_s=5, library=False
        )

    @property
    def token(self) -> str:  # type: ignore[override]
        return self.read_token()

    @property
    def log_path(self) -> Path:
        return self.out_log

    def start(self) -> Agent:  # type: ignore[override]
        super().start(wait_engine_ready=False)
        return self

    def client(self, token: str | None = "auto") -> httpx.AsyncClient:  # type: ignore[override]
        """With the agent's token (``"auto"``), another token, or none (``None``)."""
        return self.aclient("" if token is None else (None if token == "auto" else token), timeout_s=30)

    def wait_state(self, state: str, timeout_s: float = 60) -> dict[str, Any]:
        return self.wait_engine_state(state, timeout_s)

    def record(self) -> dict[str, Any] | None:
        return self.engine_record()

    def cleanup(self) -> None:
        self.stop()


def new_root() -> Path:
    # AF_UNIX paths are limited to 107 bytes; pytest's tmp_path can be longer.
    return Path(tempfile.mkdtemp(prefix="k25ag-", dir="/tmp"))


async def read_stream(
    client: httpx.AsyncClient,
    since: int,
    until: Callable[[list[tuple[str, dict[str, Any]]]], bool],
    timeout_s: float,
) -> list[tuple[str, dict[str, Any]]]:
    """Items (kind, data) from /v1/stream after ``since`` until ``until(items)`` holds."""
    items: list[tuple[str, dict[str, Any]]] = []

    async def consume() -> None:
        async with client.stream("GET", "/v1/stream", params={"since": since}, timeout=None) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            kind = None
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: ") and kind:
                    items.append((kind, json.loads(line.removeprefix("data: "))))
                    if until(items):
                        return

    import asyncio

    await asyncio.wait_for(consume(), timeout_s)
    return items


async def events_named(items: list[tuple[str, dict[str, Any]]], name: str) -> list[dict[str, Any]]:
    return [d for k, d in items if k == "event" and d["name"] == name]


AsyncItems = AsyncIterator[tuple[str, dict[str, Any]]]
