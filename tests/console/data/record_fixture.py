"""Re-record ``local-sim.jsonl``, the fixed sequence the snapshot tests replay.

Runs the demo stack (real agent, simulated engine, traffic ramp 1 → 16 → 1 over 40 s, so the load
crosses the threshold both ways; the H200x2 GPU capture) and records its stream and a few GET answers through the console's own RecordingLink.
Usage: .venv/bin/python tests/console/data/record_fixture.py [--seconds 75]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from pathlib import Path

from console.demo.stack import DemoStack
from console.link import LinkError
from console.link.client import AgentClient
from console.link.local import LocalLink
from console.link.recording import RecordingLink

HERE = Path(__file__).parent
GPU_FIXTURE = HERE.parents[1] / "fixtures" / "gpu" / "h200x2-loaded" / "nvml-loaded.json"


async def record(stack: DemoStack, out: Path, seconds: float) -> None:
    link = RecordingLink(LocalLink(stack.socket_path, stack.token_path), out)
    client = AgentClient(link)
    await link.connect()
    deadline = time.monotonic() + seconds
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            async for _ in client.stream(0):
                if time.monotonic() > deadline:
                    break
    for call in (client.profiles(), client.profile("local-sim"), client.logs(200), client.bench_runs()):
        with contextlib.suppress(LinkError):
            await call
    await link.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=75.0)
    args = parser.parse_args()
    out = HERE / "local-sim.jsonl"
    out.unlink(missing_ok=True)
    stack = DemoStack(peak=16, period_s=40.0, gpu_fixture=GPU_FIXTURE)
    try:
        stack.start()
        asyncio.run(record(stack, out, args.seconds))
    finally:
        stack.stop()
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
