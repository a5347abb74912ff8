"""Where ``autopilot_ramp.py`` ran, for its result: the GPUs from the agent's telemetry, the engine's
environment as the bench records it (``agent.bench.provenance``), and ``nvidia-smi``'s clocks
around the ramp (a figure beside the clocks it ran at)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shutil
from pathlib import Path
from typing import Any

import httpx

from agent.bench.provenance import RunContext, agent_context, environment, gpu_facts, simulated_gpus
from agent.profile import load_profile
from agent.sglang.info_view import ServerInfo
from agent.wire import Gpus

CLOCKS_QUERY = ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem", "--format=csv"]
CLOCKS_TIMEOUT_S = 10.0


async def sample_clocks(label: str, at_s: float) -> dict[str, Any] | None:
    """One ``nvidia-smi`` clock reading (None where nvidia-smi is absent), bounded."""
    if shutil.which(CLOCKS_QUERY[0]) is None:
        return None
    try:
        proc = await asyncio.create_subprocess_exec(
            *CLOCKS_QUERY, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        async with asyncio.timeout(CLOCKS_TIMEOUT_S):
            out, _ = await proc.communicate()
    except (OSError, TimeoutError) as exc:
        with contextlib.suppress(Exception):
            proc.kill()
        return {"label": label, "at_s": at_s, "error": f"{type(exc).__name__}: {exc}"}
    lines = [line.strip() for line in out.decode(errors="replace").splitlines() if line.strip()]
    return {"label": label, "at_s": at_s, "rc": proc.returncode, "lines": lines}


async def agent_gpus(agent: httpx.AsyncClient, last_seq: int) -> tuple[Gpus | None, str | None]:
    """The GPUs of the agent's newest snapshot (its telemetry: NVML, or the demo's simulated host),
    or why there are none."""
    for back in (50, 5000):
        try:
            answer = await agent.get("/v1/snapshots", params={"since": max(0, last_seq - back)})
            snapshots = answer.json().get("snapshots") or []
        except (httpx.HTTPError, ValueError) as exc:
            return None, f"the agent's snapshots could not be read: {exc}"
        if snapshots:
            try:
                return Gpus.model_validate(snapshots[-1].get("gpus") or {}), None
            except ValueError as exc:
                return None, f"the agent's snapshot holds no readable GPUs: {exc}"
    return None, "the agent had published no snapshot yet"


async def where_it_ran(
    agent: httpx.AsyncClient,
    status: dict[str, Any],
    info: ServerInfo,
    http: httpx.AsyncClient,
    url: str,
    headers: dict[str, str],
) -> dict[str, Any]:
    """The result's ``environment``, as the bench records it (``agent.bench.provenance``): the GPUs
    and driver from the agent's telemetry (or the host the simulator models), the attention backend
    and model from the engine's ``/server_info``, the profile and the stack's manifest."""
    gpus, why = await agent_gpus(agent, int(status.get("last_seq") or 0))
    path = Path(status["profile_path"]) if status.get("profile_path") else None
    try:
        profile = None if path is None else load_profile(path)
    except Exception as exc:  # a profile edited since the launch: the rest is still worth recording
        profile, unreadable = None, f"{path}: {exc}"
    else:
        unreadable = "the agent named no profile file"
    if profile is not None:
        context = agent_context(profile, path, gpus, str(status.get("engine_kind") or "sglang"))
        if gpus is None:
            context = dataclasses.replace(context, gpus_unknown=why)
    else:
        facts, unknown = (None, why) if gpus is None else gpu_facts(gpus, "the agent's telemetry")
        context = RunContext(facts, unknown, None, unreadable, None, unreadable)
    return environment(info, context, simulated=await simulated_gpus(http, url, headers))
