"""Demo traffic: streaming chat requests whose concurrency ramps 1 → peak → 1, over and over.

Run as its own process (``python -m console.demo.traffic``) so 250 open streams never compete with
the console's event loop; it exits by itself when the console that started it is gone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import random
import sys

import httpx

CLIMB_FRACTION = 0.12
"""Share of a period spent climbing to the peak. The climb is quick so that a fresh demo crosses the
speculation threshold within seconds; the long geometric descent then gives every concurrency, the
low ones where speculation pays included, its share of the time."""


def target_concurrency(elapsed_s: float, period_s: float, peak: int) -> int:
    """1 at the start of each period, ``peak`` after the climb, both ways geometric (1, 2, 4, ... like
    a benchmark sweep)."""
    phase = (elapsed_s % period_s) / period_s
    if phase < CLIMB_FRACTION:
        level = phase / CLIMB_FRACTION
    else:
        level = 1.0 - (phase - CLIMB_FRACTION) / (1.0 - CLIMB_FRACTION)
    return max(1, round(math.pow(peak, level)))


async def _find_engine(socket_path: str, token: str) -> str:
    """Ask the agent for the engine URL (it reports it once the simulated engine listens)."""
    transport = httpx.AsyncHTTPTransport(uds=socket_path)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://agent",
        headers={"Authorization": f"Bearer {token}"},
        timeout=5.0,
    ) as client:
        while True:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                status = (await client.get("/v1/status")).json()
                if status.get("engine_url") and status.get("engine_state") == "ready":
                    return str(status["engine_url"])
            await asyncio.sleep(0.5)


async def _one_request(client: httpx.AsyncClient, rng: random.Random) -> None:
    body = {
        "model": "default",
        "messages": [{"role": "user", "content": "Tell me about speculative decoding."}],
        "max_tokens": rng.randint(64, 256),
        "stream": True,
    }
    async with client.stream("POST", "/v1/chat/completions", json=body) as response:
        async for _ in response.aiter_lines():
            pass


async def run(socket_path: str, token_path: str, peak: int, period_s: float, parent: int) -> None:
    with open(token_path, encoding="utf-8") as handle:
        token = handle.read().strip()
    url = await _find_engine(socket_path, token)
    rng = random.Random(7)
    limits = httpx.Limits(max_connections=peak + 8, max_keepalive_connections=peak + 8)
    loop = asyncio.get_running_loop()
    start = loop.time()
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120.0) as client:

        async def worker(index: int) -> None:
            while True:
                if index >= target_concurrency(loop.time() - start, period_s, peak):
                    await asyncio.sleep(0.25)
                    continue
                try:
                    await _one_request(client, rng)
                except httpx.HTTPError:
                    await asyncio.sleep(1.0)  # the engine restarts (a profile load): wait, then carry on

        tasks = [asyncio.create_task(worker(i)) for i in range(peak)]
        try:
            while os.getppid() == parent:
                await asyncio.sleep(1.0)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="k25console demo traffic (started by k25console --demo)")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--peak", type=int, default=250)
    parser.add_argument("--period", type=float, default=120.0, help="seconds for one 1 → peak → 1 ramp")
    parser.add_argument("--parent", type=int, default=os.getppid())
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(args.socket, args.token_file, args.peak, args.period, args.parent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
