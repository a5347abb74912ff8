"""Re-record ``local-sim.jsonl``, the fixed sequence the snapshot tests replay.

Runs the demo stack as ``./dev demo`` does (real agent, simulated engine, the demo's traffic ramp to
250 and back every two minutes, so the load crosses the threshold both ways; the H200x2 GPU
capture) and records its stream through the console's own RecordingLink, for a little over the
charts' default five-minute window. On the way an operator moves the threshold (an audited action
in the stream) and runs a small on/off comparison, so the Controls and Bench screens have
something to show; the GET answers the screens ask for are recorded at the end.
Usage: .venv/bin/python tests/console/data/record_fixture.py [--seconds 320]  (about 1 MB)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
import uuid
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from agent.wire import ActionRequest, Event
from agent.wire.bench_request import BenchRequest
from console.demo.stack import DemoStack
from console.link import LinkError
from console.link.client import AgentClient
from console.link.local import LocalLink
from console.link.recording import RecordingLink

HERE = Path(__file__).parent
GPU_FIXTURE = HERE.parents[1] / "fixtures" / "gpu" / "h200x2-loaded" / "nvml-loaded.json"
ACTION_AT_S = 20.0
BENCH_AT_S = 40.0
BENCH = BenchRequest(concurrency=[1, 8, 64], mode="compare", min_requests=16, output_len=64, input_len=256)


async def operator(client: AgentClient, started: float) -> str | None:
    """What an operator does while the recording runs: one live threshold change, one small bench."""
    await asyncio.sleep(max(0.0, started + ACTION_AT_S - time.monotonic()))
    request = ActionRequest(request_id=uuid.uuid4().hex, kind="threshold", value=130, operator="recorder")
    plan = await client.plan(request)
    await client.confirm(plan.action_id)
    await asyncio.sleep(max(0.0, started + BENCH_AT_S - time.monotonic()))
    return await client.bench_start(BENCH)


async def record(stack: DemoStack, out: Path, seconds: float) -> None:
    link = RecordingLink(LocalLink(stack.socket_path, stack.token_path), out)
    client = AgentClient(link)
    await link.connect()
    started = time.monotonic()
    acting = asyncio.create_task(operator(client, started))
    action_ids: set[str] = set()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            async for item in client.stream(0):
                if isinstance(item, Event) and isinstance(item.data.get("action_id"), str):
                    action_ids.add(item.data["action_id"])
    bench_id = await acting
    calls: list[Coroutine[Any, Any, Any]] = [
        client.profiles(),
        client.profile("local-sim"),
        client.logs(300),
        client.bench_runs(),
    ]
    calls += [client.action(action_id) for action_id in sorted(action_ids)]  # another console's words
    if bench_id is not None:
        calls.append(client.bench_result(bench_id))
    for call in calls:
        with contextlib.suppress(LinkError):
            await call
    await link.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=320.0)
    args = parser.parse_args()
    out = HERE / "local-sim.jsonl"
    out.unlink(missing_ok=True)
    stack = DemoStack(gpu_fixture=GPU_FIXTURE)
    try:
        stack.start()
        asyncio.run(record(stack, out, args.seconds))
    finally:
        stack.stop()
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
