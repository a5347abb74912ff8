"""The acceptance findings from the real agent on the simulated engine, made to happen.

``agent serve --sim-drafter-change`` makes the simulated drafter stop matching (``random``) or the
traffic loop (``oracle``) while eight clients keep the engine busy: collapse and wasted drafts, and
the loop, must show in a snapshot, in ``agent status`` (with what to do) and on the agent's
Prometheus page. The demo's own traffic must raise none of them
(``tests/console/test_console_demo_acceptance.py``). Every wait is for a snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from daemon_harness import ENGINE_KEY, Agent

from agent.wire import Snapshot

pytestmark = pytest.mark.slow

ACCEPTANCE_CODES = {"accept_collapse", "accept_loop", "wasted_drafts"}
HEALTH = """
[health]
accept_collapse_window_s = 10
accept_baseline_s = 120
accept_loop_window_s = 10
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def snapshots(c: httpx.AsyncClient, since: int) -> AsyncIterator[Snapshot]:
    async with c.stream("GET", "/v1/stream", params={"since": since}, timeout=None) as response:
        kind = None
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: ") and kind == "snapshot":
                yield Snapshot.model_validate_json(line.removeprefix("data: "))


async def first_with(c: httpx.AsyncClient, codes: set[str], timeout_s: float) -> Snapshot:
    since = (await c.get("/v1/status")).json()["last_seq"]
    seen: list[str] = []

    async def find() -> Snapshot:
        async for snap in snapshots(c, since):
            spec = snap.speculation
            seen.append(f"{snap.time:.0f} steps {spec.steps} accept {spec.accept_length} "
                        f"rejected {spec.rejected_draft_share} {sorted(f.code for f in snap.findings)}")  # fmt: skip
            if codes <= {f.code for f in snap.findings}:
                return snap
        raise AssertionError("the stream ended")

    try:
        return await asyncio.wait_for(find(), timeout_s)
    except TimeoutError:
        raise AssertionError(
            f"no snapshot with {sorted(codes)} in {timeout_s:g} s: " + " | ".join(seen[-8:])
        ) from None


@contextlib.asynccontextmanager
async def clients(url: str, n: int) -> AsyncIterator[None]:
    """``n`` closed-loop clients, each sending its own prompts, until the block ends."""

    async def client(engine: httpx.AsyncClient, i: int) -> None:
        for k in range(1_000_000):
            body = {"text": f"client {i} request {k} " + "word " * 256,
                    "sampling_params": {"max_new_tokens": 256, "ignore_eos": True}}  # fmt: skip
            await engine.post(url + "/generate", json=body)

    headers = {"Authorization": f"Bearer {ENGINE_KEY}"}
    async with httpx.AsyncClient(timeout=300, headers=headers) as engine:
        tasks = [asyncio.create_task(client(engine, i)) for i in range(n)]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def with_health(agent: Agent) -> Agent:
    agent.profile.write_text(agent.profile.read_text() + HEALTH)
    return agent


def agent_status(agent: Agent) -> str:
    argv = [sys.executable, "-m", "agent.cli.main", "status", "--state-dir", str(agent.state_dir)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout


async def test_a_drafter_that_stops_matching_raises_collapse_and_wasted_drafts_everywhere(
    make_agent: Any,
) -> None:
    port = free_port()
    extra = [
        "--sim-speedup",
        "4",
        "--sim-drafter-change",
        "200:random",
        "--metrics-listen",
        f"127.0.0.1:{port}",
    ]
    agent = with_health(make_agent("sim-collapse", extra=extra)).start()
    url = agent.wait_state("ready")["engine_url"]
    async with clients(url, 8), agent.client() as c:
        snap = await first_with(c, {"accept_collapse", "wasted_drafts"}, 240)
        printed = agent_status(agent)
        async with httpx.AsyncClient() as http:
            page = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    by_code = {f.code: f for f in snap.findings}
    collapse, wasted = by_code["accept_collapse"], by_code["wasted_drafts"]
    assert collapse.value is not None and collapse.value < 1.3 and "threshold to 1" in collapse.action
    assert wasted.value is not None and wasted.value >= 80.0
    spec = snap.speculation
    assert spec.rejected_draft_share is not None and spec.rejected_draft_share >= 0.8
    assert spec.wasted_draft_s_per_min is not None and spec.wasted_draft_s_per_min > 0
    assert "Acceptance collapsed" in printed and "what to do: Stop drafting now" in printed
    assert 'k25_finding_active{code="accept_collapse",severity="warning"} 1.0' in page
    assert 'k25_finding_active{code="wasted_drafts",severity="warning"} 1.0' in page
    assert "k25_speculation_rejected_draft_ratio " in page
    assert "k25_speculation_wasted_draft_seconds_per_minute " in page


async def test_a_looping_client_raises_the_loop(make_agent: Any) -> None:
    extra = ["--sim-speedup", "4", "--sim-drafter-change", "40:oracle"]
    agent = with_health(make_agent("sim-loop", extra=extra)).start()
    url = agent.wait_state("ready")["engine_url"]
    async with clients(url, 8), agent.client() as c:
        snap = await first_with(c, {"accept_loop"}, 240)
        printed = agent_status(agent)
    loop = next(f for f in snap.findings if f.code == "accept_loop")
    assert loop.limit == (snap.speculation.steps or 0) + 1 and "repetitive output" in loop.explanation
    assert not {"accept_collapse", "wasted_drafts"} & {f.code for f in snap.findings}
    assert "Acceptance held at the maximum" in printed and "what to do:" in printed
