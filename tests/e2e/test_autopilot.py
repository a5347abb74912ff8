"""The speculation autopilot in a real ``agent serve --engine sim``: on (an operator action), it moves
the live threshold as its estimate says, off (an operator action) restores the operator's threshold in
one step; every move is an event on the stream and an audit line with its estimate.

The simulated drafter is the random head (``--sim-draft-acceptance random``: no draft is ever kept),
so the estimate has one answer: drafting cannot pay at any batch, and the threshold goes to 1. Waiting
is on the stream's events and snapshots, never a sleep.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from agent_harness import REPO, AgentProc, running_agent

from agent.profile import load_profile

from .sshd import free_port

_PROFILED = load_profile(REPO / "profiles" / "local-sim.toml").speculation.threshold
assert _PROFILED is not None
OPERATOR_THRESHOLD: int = _PROFILED
"""local-sim's threshold: what the autopilot starts from and returns to."""
STREAMS = 8
WAIT_S = 120.0


@pytest.fixture
def random_head_agent() -> Any:
    port = free_port()
    args = ["--sim-draft-acceptance", "random", "--sim-speedup", "4", "--metrics-listen", f"127.0.0.1:{port}"]
    with running_agent(extra_args=args) as agent:
        yield agent, port


@asynccontextmanager
async def load(engine_url: str, streams: int) -> AsyncIterator[None]:
    body = {"text": "write a long story", "stream": True,
            "sampling_params": {"max_new_tokens": 50_000, "ignore_eos": True}}  # fmt: skip

    async def one(client: httpx.AsyncClient) -> None:
        async with client.stream("POST", f"{engine_url}/generate", json=body) as r:
            async for _ in r.aiter_raw():
                pass

    async with httpx.AsyncClient(timeout=None) as client:
        tasks = [asyncio.create_task(one(client)) for _ in range(streams)]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def act(c: httpx.AsyncClient, kind: str, value: Any) -> dict[str, Any]:
    plan = await c.post(
        "/v1/actions", json={"request_id": f"ap-{kind}-{time.time_ns()}", "kind": kind, "value": value}
    )
    plan.raise_for_status()
    assert plan.json()["mode"] == "live", plan.json()
    done = await c.post(f"/v1/actions/{plan.json()['action_id']}/confirm")
    done.raise_for_status()
    result: dict[str, Any] = done.json()
    assert result["status"] == "applied", result
    return result


async def follow(
    c: httpx.AsyncClient, since: int, until: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    """Items of /v1/stream after ``since`` (each with its ``item`` kind) until ``until`` holds."""
    items: list[dict[str, Any]] = []

    async def consume() -> None:
        async with c.stream("GET", "/v1/stream", params={"since": since}, timeout=None) as stream:
            kind = None
            async for line in stream.aiter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: ") and kind:
                    items.append({"item": kind, **json.loads(line.removeprefix("data: "))})
                    if until(items):
                        return

    await asyncio.wait_for(consume(), WAIT_S)
    return items


def named(items: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [i for i in items if i["item"] == "event" and i["name"] == name]


def snapshots(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [i for i in items if i["item"] == "snapshot"]


async def test_on_it_moves_the_threshold_off_restores_the_operators_in_one_step(
    random_head_agent: tuple[AgentProc, int],
) -> None:
    agent, metrics_port = random_head_agent
    engine_url = agent.status()["engine_url"]
    async with agent.aclient() as c, load(engine_url, STREAMS):
        since = (await c.get("/v1/status")).json()["last_seq"]
        on = await act(c, "autopilot", True)
        assert "autopilot on" in on["message"]

        def moved(items: list[dict[str, Any]]) -> bool:
            shots = snapshots(items)
            return bool(named(items, "autopilot.move")) and any(
                s["speculation"]["threshold"] == 1 and s["autopilot"]["mode"] == "tracking" for s in shots
            )

        items = await follow(c, since, moved)
        assert named(items, "autopilot.enabled")
        move = named(items, "autopilot.move")[0]
        assert move["data"]["before"]["threshold"] == OPERATOR_THRESHOLD
        assert move["data"]["after"]["threshold"] == 1
        assert "drafting cannot pay" in move["message"]
        assert move["data"]["readback"]["threshold"] == 1  # the engine said so, not the autopilot
        shown = snapshots(items)[-1]["autopilot"]
        assert shown["enabled"] is True and shown["operator_threshold"] == OPERATOR_THRESHOLD
        assert shown["last_move"]["threshold_to"] == 1 and shown["moves_total"] >= 1

        since = items[-1]["seq"]
        off = await act(c, "autopilot", False)
        assert f"threshold {OPERATOR_THRESHOLD}" in off["message"]
        items = await follow(
            c,
            since,
            lambda got: (
                bool(named(got, "autopilot.disabled"))
                and any(
                    not s["autopilot"]["enabled"] and s["speculation"]["threshold"] == OPERATOR_THRESHOLD
                    for s in snapshots(got)
                )
            ),
        )
        (disabled,) = named(items, "autopilot.disabled")
        assert disabled["data"]["after"] == {"threshold": OPERATOR_THRESHOLD, "steps": -1}
        # One step: no threshold but the autopilot's and then the operator's is ever read back.
        seen = [s["speculation"]["threshold"] for s in snapshots(items)]
        assert set(seen) <= {1, OPERATOR_THRESHOLD}, seen
        assert not named(items, "autopilot.move") and not named(items, "autopilot.probe")

    lines = agent.audit_lines()
    kinds = [line["action"]["kind"] for line in lines]
    assert kinds.count("autopilot") == 2  # the operator's on and off, audited as any action
    move_line = next(line for line in lines if line["action"]["kind"] == "autopilot.move")
    assert move_line["operator"] == "autopilot"
    assert move_line["before"]["threshold"] == OPERATOR_THRESHOLD and move_line["after"]["threshold"] == 1
    assert move_line["result"]["estimate"] and "drafting cannot pay" in move_line["result"]["why"]
    restore = next(line for line in lines if line["action"]["kind"] == "autopilot.restore")
    assert restore["after"] == {"threshold": OPERATOR_THRESHOLD, "steps": -1}
    assert restore["action"]["args"] == {
        "adaptive_spec_threshold": OPERATOR_THRESHOLD,
        "adaptive_spec_steps": -1,
    }

    # The agent's Prometheus page carries the autopilot's own series (registered where the daemon is wired).
    page = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text
    assert "k25_autopilot_enabled 0.0" in page
    assert 'k25_autopilot_commands_total{kind="restore"} 1.0' in page
    assert (
        'k25_autopilot_commands_total{kind="move"}' in page and 'k25_autopilot_mode{mode="off"} 1.0' in page
    )
