"""The console's cost: CPU at 4 snapshots/s (target < 10% of one core) and snapshot-to-screen latency.

Starts the demo stack (a real ``agent serve --engine sim`` and the traffic ramp, so the numbers move),
sets the agent's telemetry tick to 0.25 s (4 snapshots/s), then:

1. CPU: runs ``k25console`` as a real process in a pseudo-terminal (120x40 unless --cols/--rows), on
   the Overview screen with its two live charts, and reads its CPU time with psutil over --seconds.
2. Latency: runs the app in-process (headless) for --seconds and reports, per snapshot painted, the
   time from its arrival at the console to the screen update, and from the agent's tick to it.

Usage: .venv/bin/python -m bench.costs.console_cpu [--seconds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

from bench.kit.pty_child import spawn_in_pty
from console.app import ConsoleApp
from console.demo.stack import DemoStack
from console.link.local import LocalLink

TICK_S = 0.25


def set_tick(stack: DemoStack, seconds: float) -> None:
    token = stack.token_path.read_text().strip()
    transport = httpx.HTTPTransport(uds=str(stack.socket_path))
    with httpx.Client(transport=transport, base_url="http://agent", timeout=10.0,
                      headers={"Authorization": f"Bearer {token}"}) as client:  # fmt: skip
        client.put("/v1/telemetry", json={"tick_interval_s": seconds}).raise_for_status()


def measure_cpu(stack: DemoStack, seconds: float, cols: int, rows: int, warmup: float) -> tuple[float, float]:
    """(CPU % of one core, snapshots/s seen by the agent) for k25console in a pty."""
    argv = [sys.executable, "-m", "console.cli", "--socket", str(stack.socket_path),
            "--token-file", str(stack.token_path)]  # fmt: skip
    proc, done, master = spawn_in_pty(argv, cols, rows)
    try:
        process = psutil.Process(proc.pid)
        time.sleep(warmup)
        before, t0 = process.cpu_times(), time.monotonic()
        time.sleep(seconds)
        after, t1 = process.cpu_times(), time.monotonic()
        used = (after.user - before.user) + (after.system - before.system)
        return 100.0 * used / (t1 - t0), 1.0 / TICK_S
    finally:
        done.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)


async def measure_latency(stack: DemoStack, seconds: float, cols: int, rows: int) -> ConsoleApp:
    app = ConsoleApp(LocalLink(stack.socket_path, stack.token_path), operator="bench")
    async with app.run_test(size=(cols, rows)):
        await asyncio.sleep(seconds)  # a measurement window, not a wait for an event
    return app


def describe(values: list[float]) -> str:
    if not values:
        return "no samples"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (f"n={len(values)} p50 {statistics.median(ordered) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
            f"max {ordered[-1] * 1000:.0f} ms")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--cols", type=int, default=120)
    parser.add_argument("--rows", type=int, default=40)
    args = parser.parse_args()
    stack = DemoStack(peak=64, period_s=60.0)
    try:
        stack.start()
        set_tick(stack, TICK_S)
        cpu, rate = measure_cpu(stack, args.seconds, args.cols, args.rows, args.warmup)
        app = asyncio.run(measure_latency(stack, args.seconds, args.cols, args.rows))
    finally:
        stack.stop()
    snaps = len(app.model.snapshots)
    print(f"console CPU at {rate:.0f} snapshots/s, {args.cols}x{args.rows} pty, Overview: "
          f"{cpu:.1f}% of one core over {args.seconds:.0f} s (target < 10%)")  # fmt: skip
    print(
        f"in-process run: {snaps} snapshots held after {args.seconds:.0f} s (the ring buffer's catch-up included)"
    )
    print(f"snapshot arrival -> on screen: {describe(list(app.paint_latencies))}")
    print(f"agent tick -> on screen:       {describe(list(app.tick_latencies))}")
    print(f"machine: {os.cpu_count()} CPUs; python {sys.version.split()[0]}; {Path(sys.executable)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
