"""The agent's API over its UNIX socket, as the bench scripts use it: the operator's path for an action.

``bench/studies/autopilot_live.py`` (the autopilot on, then off) and ``bench/real/act.py`` (a live threshold or
step count on the GPU host) both plan an action and confirm it only when the plan is live, as the
console does, so that the agent's audit and events show the move as an operator's. The socket and
the token are where ``agent serve --state-dir DIR`` puts them. ``bench/studies/autopilot_ramp.py`` switches

its arms the same way and follows the agent's stream (``stream_items``) for the autopilot's events.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx


def agent_client(state_dir: Path, timeout_s: float) -> httpx.AsyncClient:
    """A client on ``DIR/run/agent.sock`` that sends the bearer token in ``DIR/token``; enter it with ``async with``."""
    sock, token = state_dir / "run" / "agent.sock", (state_dir / "token").read_text().strip()
    return httpx.AsyncClient(
        transport=httpx.AsyncHTTPTransport(uds=str(sock)),
        base_url="http://agent",
        headers={"Authorization": f"Bearer {token}"},
        timeout=timeout_s,
    )


async def plan_and_confirm(
    client: httpx.AsyncClient, kind: str, value: int | bool
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Plan ``kind`` -> ``value`` as the operator "bench" and confirm the plan when it is live.

    Returns (the plan, the confirm's answer); the answer is None when the agent planned anything but
    a live change (a refusal, a restart): nothing was confirmed, and the plan says why.
    """
    body = {
        "request_id": f"bench-{secrets.token_hex(6)}",
        "kind": kind,
        "value": value,
        "operator": "bench",
    }
    plan: dict[str, Any] = (await client.post("/v1/actions", json=body)).json()
    if plan.get("mode") != "live":
        return plan, None
    done: dict[str, Any] = (await client.post(f"/v1/actions/{plan['action_id']}/confirm")).json()
    return plan, done


async def plan_only(client: httpx.AsyncClient, kind: str, value: int | bool) -> dict[str, Any]:
    """Plan ``kind`` -> ``value`` as the operator "bench" and cancel the plan: what the agent would do,
    with nothing changed (the cancel is audited as one)."""
    body = {"request_id": f"bench-{secrets.token_hex(6)}", "kind": kind, "value": value, "operator": "bench"}
    plan: dict[str, Any] = (await client.post("/v1/actions", json=body)).json()
    if plan.get("mode") in ("live", "restart"):
        await client.post(f"/v1/actions/{plan['action_id']}/cancel", json={"operator": "bench"})
    return plan


async def stream_items(client: httpx.AsyncClient, since: int) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Each item of ``/v1/stream`` after ``since``, as (its kind: "snapshot", "event", ..., its JSON).

    The stream has no end: the caller stops reading (a timeout, a cancel) when it has what it needs."""
    async with client.stream("GET", "/v1/stream", params={"since": since}, timeout=None) as stream:
        kind = None
        async for line in stream.aiter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: ") and kind:
                yield kind, json.loads(line.removeprefix("data: "))
