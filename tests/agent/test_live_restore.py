"""``agent serve --engine sim``: live values never pass for build facts.

The operator moves the live threshold (0 = speculate at every batch size, 1 = never) and pins steps;
the server keeps the states it was launched with, so every further threshold stays live, a crashed
engine comes back with its 0-step state and the live values in force, and a reattached agent
knows both.
"""

from __future__ import annotations

import os
import re
import signal
import time
from typing import Any

import httpx
import pytest
from daemon_harness import ENGINE_KEY, PROFILES, Agent, read_stream

from agent.profile import load_profile
from agent.sglang import live_control

pytestmark = pytest.mark.slow

_LAUNCHED = load_profile(PROFILES / "local-sim.toml").speculation.threshold
assert _LAUNCHED is not None
LAUNCH_THRESHOLD: int = _LAUNCHED
"""profiles/local-sim.toml's threshold, the one every agent of this file launches with."""


def _live(agent: Agent) -> dict[str, Any]:
    url = agent.status()["engine_url"]
    response = httpx.get(url + "/server_info", headers={"Authorization": f"Bearer {ENGINE_KEY}"}, timeout=10)
    response.raise_for_status()
    live: dict[str, Any] = response.json()["internal_states"][0][live_control.READBACK_FIELD]
    return live


async def _act(c: httpx.AsyncClient, kind: str, value: int) -> dict[str, Any]:
    body = {"request_id": f"{kind}-{value}-{time.time_ns()}", "kind": kind, "value": value}
    plan = (await c.post("/v1/actions", json=body)).json()
    assert plan["mode"] == "live", f"{kind} {value}: {plan['reason']}"
    done: dict[str, Any] = (await c.post(f"/v1/actions/{plan['action_id']}/confirm")).json()
    assert done["status"] == "applied", done
    return done


async def test_threshold_round_trip_stays_live(make_agent: Any) -> None:
    agent: Agent = make_agent("sim-round-trip").start()
    agent.wait_state("ready")
    assert _live(agent)["threshold"] == LAUNCH_THRESHOLD
    async with agent.client() as c:
        for value in (0, LAUNCH_THRESHOLD, 1, 48, 0):
            await _act(c, "threshold", value)
            assert _live(agent)["threshold"] == value
            running = (await c.get("/v1/profile")).json()["profile"]["speculation"]
            assert running.get("threshold") == (value or None)  # what the operator sees: the live value
        # A restart-only key still plans a restart, and nothing changes until it is confirmed.
        body = {"request_id": f"topk-{time.time_ns()}", "kind": "topk", "value": 4}
        assert (await c.post("/v1/actions", json=body)).json()["mode"] == "restart"
    assert 0 in _live(agent)["prebuilt_steps"]


async def test_crash_restart_and_reattach_keep_the_states_and_the_live_values(make_agent: Any) -> None:
    agent: Agent = make_agent("sim-live-crash", extra=["--restart-backoff", "0.2"]).start()
    old_pid = agent.wait_state("ready")["engine_pid"]
    async with agent.client() as c:
        await _act(c, "threshold", 0)
        await _act(c, "steps", 2)
        since = (await c.get("/v1/status")).json()["last_seq"]
        os.kill(old_pid, signal.SIGKILL)
        items = await read_stream(
            c,
            since,
            lambda it: any(k == "event" and d["name"] == "engine.ready" for k, d in it),
            timeout_s=60,
        )
        names = [d["name"] for k, d in items if k == "event"]
        assert (
            names.index("engine.crashed") < names.index("engine.live_restored") < names.index("engine.ready")
        )
        assert agent.status()["engine_pid"] != old_pid
        live = _live(agent)
        assert 0 in live["prebuilt_steps"]  # relaunched with the launch threshold: the 0-step state is there
        assert (live["threshold"], live["pinned_steps"]) == (live_control.NO_THRESHOLD, 2)
        record = agent.record()
        assert record is not None
        assert re.search(rf"(?m)^threshold = {LAUNCH_THRESHOLD}$", record["profile_toml"])
        assert not re.search(r"(?m)^threshold = ", record["live_profile_toml"])
        await _act(c, "threshold", 1)
    # The agent dies and comes back: it reattaches, knows what the engine was built with, and keeps
    # the live values the operator set.
    agent.kill()
    agent.start()
    after = agent.wait_state("ready")
    assert after["engine_pid"] == agent.record()["pid"]  # type: ignore[index]
    async with agent.client() as c:
        names = [e["name"] for e in (await c.get("/v1/events")).json()["events"]]
        assert "engine.reattached" in names and "engine.profile_differs" not in names
        running = (await c.get("/v1/profile")).json()["profile"]["speculation"]
        assert (running["threshold"], running["num_steps"]) == (1, 2)
        await _act(c, "threshold", 32)
    assert _live(agent)["threshold"] == 32
