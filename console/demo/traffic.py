"""Demo traffic: streaming chat requests whose concurrency ramps 1 → peak → 1, over and over.

Run as its own process (``python -m console.demo.traffic``) so 250 open streams never compete with
the console's event loop; it exits by itself when the console that started it is gone.

It follows the agent, not a fixed address: a restarted engine (a topk change, a profile load)
listens on a new port, and the agent says so on its event stream (``engine.ready`` carries the URL),
so the traffic moves there as soon as the engine is ready. While the agent runs a benchmark the
traffic pauses and cuts off its requests in flight: the benchmark measures the engine alone, and the Overview shows the benchmark's load,
not the sum of both.

The requests have the shape of the demo profile's "crossover" benchmark preset (256 prompt tokens,
up to 256 output tokens), so the speculation threshold that benchmark finds is the one that matters
for this traffic. Longer prompts would make the two-minute ramp prefill-bound: on the calibrated
model, 1,024-token prompts arriving at the climb's rate leave decode idle for half a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import random
import sys
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import httpx

from agent.wire import Event
from agent.wire.api import AgentStatus, BenchList
from agent.wire.events import EngineEvent, read_event_json

CLIMB, TOP, DESCENT = 0.375, 0.125, 0.375
"""Shares of a period: a geometric climb from 1 to the peak, a hold at the peak, the same descent,
and the rest held at 1. Geometric (1, 2, 4, ... like a benchmark sweep) gives every doubling the same
time; the holds give both ends of the story (speculation ahead at 1, behind at the peak) time to show."""
PROMPT_WORDS = 256
MAX_TOKENS = 256
WORDS = ("speculative", "decoding", "drafts", "tokens", "that", "the", "target", "model", "verifies",
         "in", "one", "pass", "and", "keeps", "what", "it", "would", "have", "written")  # fmt: skip
PAUSE_EVENTS = {"bench.started"}
RESUME_EVENTS = {"bench.finished", "bench.failed", "bench.cancelled"}
DOWN_EVENTS = {"engine.stopped", "engine.crashed", "engine.starting", "engine.restarting", "engine.draining"}


def target_concurrency(elapsed_s: float, period_s: float, peak: int) -> int:
    """1 at the start of each period, climbing geometrically to ``peak``, held, and back down to 1."""
    phase = (elapsed_s % period_s) / period_s
    if phase < CLIMB:
        level = phase / CLIMB
    elif phase < CLIMB + TOP:
        level = 1.0
    elif phase < CLIMB + TOP + DESCENT:
        level = 1.0 - (phase - CLIMB - TOP) / DESCENT
    else:
        level = 0.0
    return max(1, min(peak, round(math.pow(peak, level))))


class EngineAddress:
    """Where the engine listens now, and whether the traffic may send: kept by ``follow_agent``."""

    def __init__(self) -> None:
        self.url: str | None = None
        self.benchmark = False
        self._changed = asyncio.Event()

    @property
    def open(self) -> bool:
        return self.url is not None and not self.benchmark

    def set_url(self, url: str | None) -> None:
        self.url = url
        self._notify()

    def set_benchmark(self, running: bool) -> None:
        self.benchmark = running
        self._notify()

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_open(self) -> str:
        while not self.open:
            await self._changed.wait()
        assert self.url is not None
        return self.url

    async def wait_benchmark(self) -> None:
        """Until a benchmark runs: the requests in flight then end, so that it measures the engine alone."""
        while not self.benchmark:
            await self._changed.wait()

    async def wait_change(self, timeout_s: float) -> None:
        """Until the address or the pause changes, or ``timeout_s``.

        ``asyncio.timeout``, not ``asyncio.wait_for``: on Python 3.11 ``wait_for`` swallowed a cancel
        that landed as the address changed, and the demo's traffic went on after it was stopped.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._changed.wait()


def apply_event(address: EngineAddress, event: Event) -> None:
    """One agent event's effect on where (and whether) the traffic sends."""
    if isinstance(event, EngineEvent) and event.name == "engine.ready" and event.data.url is not None:
        address.set_url(event.data.url)
    elif event.name in DOWN_EVENTS:
        address.set_url(None)
    elif event.name in PAUSE_EVENTS:
        address.set_benchmark(True)
    elif event.name in RESUME_EVENTS:
        address.set_benchmark(False)


async def _sse_events(response: httpx.Response) -> AsyncIterator[Event]:
    kind = None
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            kind = line.removeprefix("event: ")
        elif line.startswith("data: ") and kind == "event":
            yield read_event_json(line.removeprefix("data: "))


async def follow_agent(socket_path: str, token: str, address: EngineAddress) -> None:
    """Read the engine's address from the agent's status, then follow the agent's event stream."""
    transport = httpx.AsyncHTTPTransport(uds=socket_path)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://agent", headers=headers) as agent:
        while True:
            try:
                answer = await agent.get("/v1/status", timeout=5.0)
                status = AgentStatus.model_validate_json(answer.content)
                address.set_url(status.engine_url if status.engine_state == "ready" else None)
                answer = await agent.get("/v1/bench", timeout=5.0)
                runs = BenchList.model_validate_json(answer.content).runs
                address.set_benchmark(any(run.state == "running" for run in runs))
                params = {"since": status.last_seq}
                async with agent.stream("GET", "/v1/stream", params=params, timeout=None) as response:
                    async for event in _sse_events(response):
                        apply_event(address, event)
            except (httpx.HTTPError, ValueError, KeyError):
                pass
            await asyncio.sleep(1.0)  # the agent went away or restarts: ask again shortly


def make_prompt(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(PROMPT_WORDS))


async def _one_request(client: httpx.AsyncClient, url: str, prompt: str, model: str = "default") -> None:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": MAX_TOKENS,
        "stream": True,
    }
    async with client.stream("POST", url + "/v1/chat/completions", json=body) as response:
        async for _ in response.aiter_lines():
            pass


async def served_model(client: httpx.AsyncClient, url: str) -> str:
    """The first model ``url`` lists at ``/v1/models`` (the router lists its workers' names)."""
    while True:
        with contextlib.suppress(httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
            return str((await client.get(url + "/v1/models")).json()["data"][0]["id"])
        await asyncio.sleep(1.0)


async def _unless_benchmark(address: EngineAddress, request: Coroutine[Any, Any, None]) -> None:
    """Run one request, or cut it off when a benchmark starts (closing the stream aborts it in the
    engine). Pausing only new requests left up to 250 long ones running into the benchmark's first
    window, where the engine generated 12x what the benchmark's own streams received."""
    sending = asyncio.ensure_future(request)
    benchmark = asyncio.ensure_future(address.wait_benchmark())
    try:
        await asyncio.wait({sending, benchmark}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sending, benchmark):
            task.cancel()
        await asyncio.gather(sending, benchmark, return_exceptions=True)
    failure = None if sending.cancelled() else sending.exception()
    if failure is not None:
        raise failure


async def run(
    socket_path: str | None,
    token_path: str | None,
    peak: int,
    period_s: float,
    parent: int,
    url: str | None = None,
) -> None:
    """The ramp against the engine the agent names (following it through restarts), or, with ``url``,
    against that address as it is (the fleet demo's router)."""
    address = EngineAddress()
    follower: asyncio.Task[Any]
    if url is not None:
        address.set_url(url)
        follower = asyncio.create_task(asyncio.Event().wait())  # nothing to follow
    else:
        assert socket_path is not None and token_path is not None
        with open(token_path, encoding="utf-8") as handle:
            token = handle.read().strip()
        follower = asyncio.create_task(follow_agent(socket_path, token, address))
    rng = random.Random(7)
    prompts = [make_prompt(rng) for _ in range(16)]
    limits = httpx.Limits(max_connections=peak + 8, max_keepalive_connections=peak + 8)
    loop = asyncio.get_running_loop()
    start = loop.time()
    async with httpx.AsyncClient(limits=limits, timeout=300.0) as client:
        # A router routes by model: ask it for the name its workers serve (an engine takes any).
        model = await served_model(client, url) if url is not None else "default"

        async def worker(index: int) -> None:
            while True:
                url = await address.wait_open()
                if index >= target_concurrency(loop.time() - start, period_s, peak):
                    await address.wait_change(0.25)  # the ramp's resolution, or the address changed
                    continue
                try:
                    await _unless_benchmark(
                        address, _one_request(client, url, prompts[index % len(prompts)], model)
                    )
                except httpx.HTTPError:
                    # The engine went away (a restart): the agent's next engine.ready moves us on.
                    await address.wait_change(1.0)

        tasks = [asyncio.create_task(worker(i)) for i in range(peak)]
        try:
            while os.getppid() == parent:
                await asyncio.sleep(1.0)  # no event tells a process that its parent died: poll
        finally:
            for task in [*tasks, follower]:
                task.cancel()
            await asyncio.gather(*tasks, follower, return_exceptions=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="k25console demo traffic (started by k25console --demo)")
    parser.add_argument("--socket", help="the agent to follow for the engine's address")
    parser.add_argument("--token-file")
    parser.add_argument("--url", help="send to this address as it is (the fleet demo's router) instead")
    parser.add_argument("--peak", type=int, default=250)
    parser.add_argument("--period", type=float, default=120.0, help="seconds for one 1 → peak → 1 ramp")
    parser.add_argument("--parent", type=int, default=os.getppid())
    args = parser.parse_args(argv)
    if args.url is None and not (args.socket and args.token_file):
        parser.error("give --socket and --token-file, or --url")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(args.socket, args.token_file, args.peak, args.period, args.parent, args.url))
    return 0


if __name__ == "__main__":
    sys.exit(main())
