"""The console as an operator runs it against a remote host: the real app, its SSH link, our sshd."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import httpx
from agent_harness import AgentProc
from rich.console import Console
from textual.app import App
from textual.widgets import Static

from agent.sglang import live_control
from console.app import ConsoleApp
from console.link.backoff import Backoff
from console.link.ssh import SshLink, SshTarget
from console.theme import rich_styles

from .sshd import HOST, Sshd

FAST_RECONNECT = Backoff(base_s=0.2, cap_s=1.0)
"""Tests reconnect quickly; the backoff's shape is the console's own unit tests' business."""


def ssh_target(sshd: Sshd, agent: AgentProc, *, known_hosts: Path | None = None) -> SshTarget:
    """What an operator would type: user@127.0.0.1 -p PORT -i KEY, checked against known_hosts."""
    return SshTarget(
        f"{sshd.user}@{HOST}",
        port=sshd.port,
        identity_file=str(sshd.client_key),
        known_hosts=str(known_hosts or sshd.known_hosts),
        config_file="",  # no ~/.ssh/config: nothing on the test machine leaks in
        remote_state_dir=str(agent.state_dir),
    )


def ssh_console(
    sshd: Sshd, agent: AgentProc, *, known_hosts: Path | None = None, **kwargs: Any
) -> ConsoleApp:
    link = SshLink(ssh_target(sshd, agent, known_hosts=known_hosts))
    return ConsoleApp(link, operator="e2e", backoff=FAST_RECONNECT, **kwargs)


def text_of(app: App[None], selector: str) -> str:
    """The plain text a Static on the current screen shows (str, Text or any Rich renderable)."""
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


async def engine_live_state(agent: AgentProc, api_key: str | None = None) -> dict[str, Any]:
    """The engine's own read-back of the live speculation state (the sim's /server_info), asked of the
    engine directly so that a test never takes the agent's word for what the engine does."""
    url = agent.status()["engine_url"]
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(timeout=10.0, headers=headers) as client:
        response = await client.get(f"{url}/server_info")
        response.raise_for_status()
        info = response.json()
    state: dict[str, Any] = info["internal_states"][0][live_control.READBACK_FIELD]
    zero_step = state.get("zero_step")
    if isinstance(zero_step, dict):  # its host figures (memory, the collector) are measurements: they move
        state["zero_step"] = {k: v for k, v in zero_step.items() if k != "host"}  # on their own, as the
    return state  # agent's own read-back equality leaves them out (agent.sglang.zero_step_view)
