"""How fast the simulated engine is: is it ever the bottleneck?

(a) ``--speedup 1``: 250 concurrent streaming chat clients (1024 in / 256 out, closed loop) against
    the simulator pinned to one CPU core; prints the p50/p99/max scheduling delay per step (how
    late each modelled step ends against its wall-clock target), the chunks served per second and
    the simulator's CPU use. Target: p99 < 1 ms.
(b) ``--speedup 20``: a concurrency sweep 1..250 covering 10 minutes of modelled time; prints its
    wall time (target ~30 s) and each level's modelled output throughput.

(c) ``--part c``: the simulator's CPU per streamed API at speedup 20 and 64 clients, native
    ``/generate`` (cumulative chunks) against chat; the two should cost about the same.

The simulator runs in its own process on core 0; the load generator is a lean HTTP/1.1 client
(raw asyncio streams, chunked SSE) on the other core, so that the client is not what is measured.

    .venv/bin/python -m bench.costs.sim_speed [--profile profiles/local-sim.toml] [--part a|b|c|both]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import re
import statistics
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import psutil

SWEEP_LEVELS = (1, 2, 4, 8, 16, 32, 64, 128, 250)


# ---------------------------------------------------------------------------------- simulator side


def _sim_process(
    profile_path: str, speedup: float, core: int | None, realtime: bool, conn: Connection
) -> None:
    if core is not None:
        os.sched_setaffinity(0, {core})
    if realtime:
        # A core of its own, on a shared machine: the round-robin real-time class wakes the
        # simulator on time instead of behind other processes' time slices.
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(10))
    from agent.profile.store import load_profile
    from agent.sim.server import run_sim

    async def main() -> None:
        profile = load_profile(profile_path)
        async with run_sim(profile, port=0, speedup=speedup, seed=7) as sim:
            conn.send(sim.port)
            loop = asyncio.get_running_loop()
            while True:
                command = await loop.run_in_executor(None, conn.recv)
                if command == "reset":
                    sim.runner.lateness_s.clear()
                    conn.send("ok")
                elif command == "stats":
                    conn.send(list(sim.runner.lateness_s))
                elif command == "clock":
                    conn.send((sim.runner.virtual_now(), sim.engine.now))
                else:
                    break

    asyncio.run(main())


@dataclass
class SimHandle:
    process: BaseProcess  # the spawn context's process (not mp.Process, the default context's)
    conn: Connection
    port: int

    def call(self, command: str) -> Any:
        self.conn.send(command)
        return self.conn.recv()

    def stop(self) -> None:
        self.conn.send("stop")
        self.process.join(timeout=10)


def start_sim(profile: str, speedup: float, core: int | None, realtime: bool = False) -> SimHandle:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_sim_process, args=(profile, speedup, core, realtime, child), daemon=True)
    process.start()
    port = parent.recv()
    return SimHandle(process, parent, port)


# ---------------------------------------------------------------------------------- load generator


class Client:
    """One keep-alive HTTP/1.1 connection sending streaming chat requests one after another.

    Requests ask for continuous usage, so the last chunk seen carries the request's token count
    even when the run's deadline cuts it off (closing the connection aborts it on the server).
    """

    def __init__(self, port: int, body: bytes, path: str = "/v1/chat/completions") -> None:
        self.port = port
        self.request = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n".encode()
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        self.writer: asyncio.StreamWriter | None = None
        self.chunks = 0
        self.tokens = 0
        self._last = b""

    async def run(self) -> None:
        reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port, limit=1 << 20)
        try:
            while True:
                await self._one(reader, self.writer)
        finally:
            self._count_last()
            self.writer.close()

    def _count_last(self) -> None:
        match = _COMPLETION_TOKENS.search(self._last)
        if match:
            self.tokens += int(match.group(1))
        self._last = b""

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(self.request)
        status = await reader.readline()
        if b" 200 " not in status:
            raise RuntimeError(f"HTTP status {status!r}")
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        while True:
            size = int((await reader.readline()).strip(), 16)
            if size == 0:
                await reader.readline()
                break
            data = await reader.readexactly(size + 2)
            self.chunks += data.count(b"data: ")
            if b"completion_tokens" in data:
                self._last = data
        self._count_last()


_COMPLETION_TOKENS = re.compile(rb'"completion_tokens":(\d+)')


def chat_body(input_len: int, output_len: int) -> bytes:
    prompt = " ".join(["word"] * input_len)
    return json.dumps(
        {
            "model": "kimi-k2.5",
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": output_len,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
    ).encode()


def generate_body(input_len: int, output_len: int) -> bytes:
    """A streaming native ``/generate`` request (cumulative chunks with ``meta_info``, as the bench sends)."""
    return json.dumps(
        {
            "text": " ".join(["word"] * input_len),
            "sampling_params": {"max_new_tokens": output_len, "ignore_eos": True},
            "stream": True,
        }
    ).encode()


async def closed_loop(
    port: int, concurrency: int, seconds: float, body: bytes, path: str = "/v1/chat/completions"
) -> tuple[int, int]:
    """``concurrency`` clients, each sending its next request as soon as one ends, cut off after ``seconds``."""
    clients = [Client(port, body, path) for _ in range(concurrency)]
    tasks = [asyncio.create_task(c.run()) for c in clients]
    done, _ = await asyncio.wait(tasks, timeout=seconds)
    for task in done:
        task.result()  # a client that ended early failed: say why
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return sum(c.tokens for c in clients), sum(c.chunks for c in clients)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def part_a(profile: str, seconds: float, realtime: bool, warmup: float = 30.0) -> None:
    policy = "real-time (SCHED_RR)" if realtime else "normal"
    print(f"(a) speedup 1, 250 concurrent streaming clients, simulator on one core ({policy} scheduling), "
          f"{seconds:.0f} s measured")  # fmt: skip
    sim = start_sim(profile, speedup=1.0, core=0, realtime=realtime)
    cpu, tokens, chunks, late = _measure_load(
        sim, "/v1/chat/completions", chat_body(1024, 256), 250, seconds, warmup
    )
    print(f"    host load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"    steps {len(late)}, scheduling delay per step: p50 {_pct(late, 0.5):.3f} ms, "
          f"p99 {_pct(late, 0.99):.3f} ms, max {max(late):.3f} ms (target p99 < 1 ms)")  # fmt: skip
    total = warmup + seconds
    print(
        f"    {tokens / total:.0f} tok/s in {chunks / total:.0f} SSE chunks/s; simulator CPU {cpu * 100:.1f}% of one core"
    )


def part_b(profile: str, modelled_s: float) -> None:
    speedup = 20.0
    per_level = modelled_s / len(SWEEP_LEVELS) / speedup
    print(f"(b) speedup 20, sweep {list(SWEEP_LEVELS)} covering {modelled_s / 60:.0f} min of modelled time")
    sim = start_sim(profile, speedup=speedup, core=0)
    os.sched_setaffinity(0, {1})
    proc = psutil.Process(sim.process.pid)
    body = chat_body(1024, 256)
    rows = []
    try:
        cpu0 = proc.cpu_times()
        t0 = time.perf_counter()
        model0, _ = sim.call("clock")
        for level in SWEEP_LEVELS:
            start = time.perf_counter()
            tokens, _ = asyncio.run(closed_loop(sim.port, level, per_level, body))
            elapsed = time.perf_counter() - start
            rows.append((level, tokens / (elapsed * speedup), elapsed))
        wall = time.perf_counter() - t0
        covered = sim.call("clock")[1] - model0  # up to the end of the last modelled step
        cpu1 = proc.cpu_times()
        late = [x * 1000 for x in sim.call("stats")]
    finally:
        sim.stop()
    cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / wall
    print(f"    host load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"    simulator CPU {cpu * 100:.0f}% of one core; {len(late)} steps, step delay p50 {_pct(late, 0.5):.2f} ms, "
          f"max {max(late):.1f} ms wall (the model lagged at most {max(late) * speedup / 1000:.2f} modelled s)")  # fmt: skip
    print(f"    wall time {wall:.1f} s; the engine's clock covered {covered:.1f} modelled s of the {modelled_s:.0f} asked "
          f"(target ~30 s wall); step delay p99 {_pct(late, 0.99):.2f} ms wall")  # fmt: skip
    print("    per level (each starts empty and lasts 66 modelled s, less than one request at c >= 128,")
    print("    so the top levels show the ramp-up, not saturation):")
    for level, tok_s, elapsed in rows:
        print(f"    c={level:<4d} {tok_s:7.1f} tok/s modelled  ({elapsed:.1f} s wall)")
    print(f"    median level wall {statistics.median(r[2] for r in rows):.1f} s")


def _measure_api(
    profile: str, path: str, body: bytes, concurrency: int, seconds: float, warmup: float
) -> tuple[float, int, int, list[float]]:
    """One simulator at speedup 20 under ``concurrency`` clients of one API: (CPU share, tokens, chunks, step delays ms)."""
    return _measure_load(start_sim(profile, speedup=20.0, core=0), path, body, concurrency, seconds, warmup)


def _measure_load(
    sim: SimHandle, path: str, body: bytes, concurrency: int, seconds: float, warmup: float
) -> tuple[float, int, int, list[float]]:
    """``concurrency`` clients on a started simulator, measured after ``warmup`` s (the batch filled) for
    ``seconds``: (its CPU share of one core, tokens, chunks, step delays ms); the simulator is stopped."""
    os.sched_setaffinity(0, {1})
    proc = psutil.Process(sim.process.pid)
    marks: dict[str, Any] = {}

    async def measure() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        load = asyncio.create_task(closed_loop(sim.port, concurrency, warmup + seconds, body, path))
        await asyncio.sleep(warmup)  # fill the batch before measuring
        await loop.run_in_executor(None, sim.call, "reset")
        marks["cpu"], marks["t"] = proc.cpu_times(), time.perf_counter()
        return await load

    try:
        tokens, chunks = asyncio.run(measure())
        wall = time.perf_counter() - marks["t"]
        cpu1 = proc.cpu_times()
        late = [x * 1000 for x in sim.call("stats")]
    finally:
        sim.stop()
    cpu = (cpu1.user + cpu1.system - marks["cpu"].user - marks["cpu"].system) / wall
    return cpu, tokens, chunks, late


def part_c(profile: str, seconds: float, concurrency: int = 64, warmup: float = 10.0) -> None:
    """The simulator's CPU per streamed API at speedup 20: native ``/generate`` against chat."""
    speedup = 20.0
    print(f"(c) speedup 20, {concurrency} streaming clients (1024 in / 256 out), simulator on one core, "
          f"{seconds:.0f} s measured after {warmup:.0f} s warm-up, per API")  # fmt: skip
    apis = (
        ("chat", "/v1/chat/completions", chat_body(1024, 256)),
        ("native", "/generate", generate_body(1024, 256)),
    )
    for name, path, body in apis:
        cpu, tokens, chunks, late = _measure_api(profile, path, body, concurrency, seconds, warmup)
        total = warmup + seconds
        print(f"    {name:<6s} simulator CPU {cpu:.2f} of a core; {tokens / total / speedup:.0f} tok/s modelled in "
              f"{chunks / total:.0f} SSE chunks/s; step delay p99 {_pct(late, 0.99):.2f} ms, "
              f"max {max(late):.1f} ms wall")  # fmt: skip
    print(f"    host load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--profile", default="profiles/local-sim.toml")
    parser.add_argument("--part", choices=["a", "b", "c", "both"], default="both")
    parser.add_argument("--seconds", type=float, default=60.0, help="(a) measured seconds after warm-up")
    parser.add_argument("--modelled", type=float, default=600.0, help="(b) modelled seconds of the sweep")
    parser.add_argument(
        "--realtime",
        action="store_true",
        help="(a) run the simulator in the SCHED_RR class (needs root): a core of its own on a shared machine",
    )
    args = parser.parse_args()
    if args.part in ("a", "both"):
        part_a(args.profile, args.seconds, args.realtime)
    if args.part in ("b", "both"):
        part_b(args.profile, args.modelled)
    if args.part == "c":
        part_c(args.profile, args.seconds)


if __name__ == "__main__":
    main()
