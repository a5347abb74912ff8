"""CPU of the whole ``agent serve`` process per telemetry tick, as it runs: the daemon, not one part.

bench/costs/agent_tick.py measures the Collector's tick alone; this runs the real daemon (uvicorn, the
engine supervisor's liveness polling, the telemetry loop, the ring buffer, one SSE listener) on the
simulated engine at 4 Hz, reads the agent's user+system time from /proc/<pid>/stat over a window,
and divides by the snapshots it made. GPUs come from the loaded 2-GPU H200 NVML capture.

    .venv/bin/python -m bench.costs.agent_serve_cpu [--seconds 30] [--runs 1]

With several runs (a fresh agent each) it prints each one and the median: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench import REPO


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


async def main(seconds: float) -> float:
    root = Path(tempfile.mkdtemp(prefix="k25cpu-", dir="/tmp"))
    state = root / "state"
    argv = [
        sys.executable,
        "-m",
        "agent.cli.main",
        "serve",
        "--profile",
        str(REPO / "profiles/local-sim.toml"),
    ]
    argv += ["--engine", "sim", "--state-dir", str(state), "--gpus", "fixture"]
    argv += [
        "--gpu-fixture",
        str(REPO / "tests/fixtures/gpu/h200x2-loaded/nvml-loaded.json"),
        "--log-level",
        "warning",
    ]
    agent = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    sock = state / "run" / "agent.sock"
    try:
        deadline = time.monotonic() + 60
        while not sock.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)  # another process: nothing to await but its socket file
        token = (state / "token").read_text().strip()
        async with httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=str(sock)),
            base_url="http://agent",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        ) as c:
            while (await c.get("/v1/status")).json()["engine_state"] != "ready":
                if time.monotonic() > deadline:
                    raise TimeoutError("the engine did not get ready")
                await asyncio.sleep(0.2)
            await c.put("/v1/telemetry", json={"tick_interval_s": 0.25})
            listener = asyncio.create_task(_listen(c))
            since = (await c.get("/v1/status")).json()["last_seq"]
            cpu0, t0 = cpu_seconds(agent.pid), time.monotonic()
            await asyncio.sleep(seconds)
            cpu1, t1 = cpu_seconds(agent.pid), time.monotonic()
            snaps = (await c.get("/v1/snapshots", params={"since": since, "limit": 20000})).json()[
                "snapshots"
            ]
            listener.cancel()
            await c.post("/v1/agent/stop", json={"engine_too": True})
        agent.wait(timeout=60)
    finally:
        if agent.poll() is None:
            agent.kill()
        shutil.rmtree(root, ignore_errors=True)
    ticks = len(snaps)
    cpu = cpu1 - cpu0
    print(
        f"agent serve --engine sim, 4 Hz, {t1 - t0:.1f} s, {ticks} snapshots, one SSE listener, 2 fixture GPUs"
    )
    per_tick = cpu * 1000 / max(ticks, 1)
    print(f"agent process CPU: {per_tick:.2f} ms per tick ({100 * cpu / (t1 - t0):.1f}% of one core)")
    return per_tick


async def _listen(c: httpx.AsyncClient) -> None:
    async with c.stream("GET", "/v1/stream", timeout=None) as response:
        async for _ in response.aiter_lines():
            pass


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    runs = [asyncio.run(main(args.seconds)) for _ in range(args.runs)]
    if len(runs) > 1:
        print(
            f"median of {len(runs)} runs: {statistics.median(runs):.2f} ms per tick "
            f"[{min(runs):.2f}, {max(runs):.2f}]"
        )
    start = time.process_time()
    sum(range(10**6))
    print(f"this machine: sum(range(10**6)) takes {(time.process_time() - start) * 1e3:.1f} ms of CPU")
