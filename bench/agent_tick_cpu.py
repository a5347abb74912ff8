"""Agent CPU per telemetry tick, as the daemon runs it: scrape, build the Snapshot, publish, frame for SSE.

Inputs are the heaviest the agent meets: a full SGLang 0.5.23 /metrics page of a loaded TP-8 server
(tests/fixtures/metrics) served over real loopback HTTP by a separate process (so its CPU is not
counted), and 8 GPUs of NVML data (the H200x2 capture scaled to 8 devices). Prints per-tick CPU time
of this process (all threads: the GPU sampler runs in a worker thread).

    .venv/bin/python bench/agent_tick_cpu.py [--ticks 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from agent.api.sse import frame
from agent.profile import load_profile
from agent.serve.stream import StreamHub
from agent.telemetry.collector import Collector
from agent.telemetry.nvml import FixtureSampler
from agent.telemetry.scrape import parse_metrics

REPO = Path(__file__).resolve().parents[1]

_SERVER = """
import sys, pathlib, uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
root = pathlib.Path(sys.argv[1])
pages = {p.name: p.read_bytes() for p in root.iterdir()}
async def page(request):
    name = request.path_params["name"]
    return Response(pages[name], media_type="text/plain") if name in pages else Response(status_code=404)
uvicorn.run(Starlette(routes=[Route("/{name}", page)]), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def main(ticks: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="k25tick-"))
    shutil.copy(REPO / "tests/fixtures/metrics/sglang-0.5.23-tp8-loaded.txt", root / "metrics")
    (root / "server_info").write_text(
        json.dumps({"internal_states": [{}], "max_total_num_tokens": 1_000_000})
    )
    port = _free_port()
    # Keep-alive HTTP/1.1 like SGLang's uvicorn (http.server would reconnect on every request).
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(root), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(timeout=5) as http:
            for _ in range(200):
                try:
                    if (await http.get(url + "/metrics")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
            profile = load_profile(REPO / "profiles/kimi-k25-eagle3.toml")
            gpus = FixtureSampler(REPO / "tests/fixtures/gpu/h200x2-loaded/nvml-loaded.json", scale_to=8)
            collector = Collector(url, profile, gpus, http, engine_kind="sglang")
            hub = StreamHub()
            cpu_ms: list[float] = []
            wall_ms: list[float] = []
            for i in range(ticks + 20):
                c0, w0 = time.process_time(), time.perf_counter()
                snap = await collector.tick("ready", 1234)
                published = hub.publish_snapshot(lambda seq, s=snap: s.model_copy(update={"seq": seq}))
                frame(published)
                c1, w1 = time.process_time(), time.perf_counter()
                if i >= 20:  # warm-up: imports, first connections, histories filling
                    cpu_ms.append((c1 - c0) * 1000)
                    wall_ms.append((w1 - w0) * 1000)
            assert published.gpus.devices and len(published.gpus.devices) == 8, published.gpus
            assert published.load.running is not None, "the metrics page was not read"
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)
    cpu_ms.sort()
    print(f"ticks: {len(cpu_ms)} (8 GPUs from a fixture, full TP-8 /metrics page over loopback HTTP)")
    print(
        f"agent CPU per tick: mean {statistics.fmean(cpu_ms):.3f} ms, median {statistics.median(cpu_ms):.3f} ms, "
        f"p99 {cpu_ms[int(len(cpu_ms) * 0.99) - 1]:.3f} ms"
    )
    print(f"wall per tick: median {statistics.median(wall_ms):.3f} ms")
    # Where it goes: the parts measured alone, same inputs.
    page = (REPO / "tests/fixtures/metrics/sglang-0.5.23-tp8-loaded.txt").read_text()
    print(f"  of which parse_metrics(full page): {_cpu_ms(lambda: parse_metrics(page)):.3f} ms")
    gpus = FixtureSampler(REPO / "tests/fixtures/gpu/h200x2-loaded/nvml-loaded.json", scale_to=8)
    print(f"  of which GPU sample (8 devices, fixture NVML): {_cpu_ms(gpus.sample):.3f} ms")
    print(f"  of which SSE framing of one snapshot: {_cpu_ms(lambda: frame(published)):.3f} ms")


def _cpu_ms(fn: Callable[[], object], n: int = 300) -> float:
    fn()
    c0 = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - c0) * 1000 / n


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=500)
    asyncio.run(main(parser.parse_args().ticks))
