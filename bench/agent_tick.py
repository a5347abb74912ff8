"""Agent CPU per telemetry tick: 8 GPUs of data and a full SGLang 0.5.23 /metrics page.

Usage: python bench/agent_tick.py [--ticks N] [--json]

What it runs: the real ``Collector`` with a real ``httpx.AsyncClient``, scraping ``/metrics`` (the
full page generated from the pinned wheel, tests/fixtures/metrics) and ``/server_info`` over HTTP
from a server in *another process* (so that only the agent's own CPU is counted), and a
``FixtureSampler`` replaying the loaded H200 capture scaled to 8 GPUs. Ticks run back to back;
CPU is ``time.process_time()`` (user + system, all threads of this process) divided by ticks.

Then the parts on their own: parsing the page, sampling 8 GPUs, serialising the Snapshot to JSON
(what the stream sends per tick per console), and the memory an hour of snapshots takes in the
ring buffer. The GPU replay skips the driver: on real hardware each NVML reading costs a few µs
more of system time (``bench/gpu_probe.py`` measures that on the device).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agent.profile.store import load_profile  # noqa: E402
from agent.sglang.live_control import READBACK_FIELD  # noqa: E402
from agent.telemetry.collector import Collector  # noqa: E402
from agent.telemetry.nvml import FixtureSampler  # noqa: E402
from agent.telemetry.ring import RingBuffer  # noqa: E402
from agent.telemetry.scrape import parse_metrics  # noqa: E402
from agent.wire import Gpus, Snapshot  # noqa: E402

PAGE = REPO / "tests/fixtures/metrics/sglang-0.5.23-tp8-loaded.txt"
CAPTURE = REPO / "tests/fixtures/gpu/h200x2-loaded/nvml-loaded.json"
PROFILE = REPO / "profiles/kimi-k25-eagle3.toml"

SERVER_INFO: dict[str, Any] = {
    "version": "0.5.23",
    "speculative_algorithm": "EAGLE3",
    "speculative_eagle_topk": 1,
    "speculative_num_steps": 3,
    "speculative_adaptive": True,
    "max_running_requests": 256,
    "page_size": 1,
    "max_total_num_tokens": 136800,
    "api_key": "sk-bench-0000",
    "launch_command": "python -m sglang.launch_server --api-key sk-bench-0000",
    "internal_states": [
        {
            "effective_max_running_requests_per_dp": 256,
            "decode_cuda_graph_bs": [1, 2, 4, 8, 16, 32, 64, 128, 256],
            "avg_spec_accept_length": 2.4,
            READBACK_FIELD: {
                "threshold": 64,
                "pinned_steps": -1,
                "active_steps": 3,
                "prebuilt_steps": [1, 2, 3],
            },
        }
    ],
}


SERVER = """
import gzip, http.server, socket, sys
from pathlib import Path
root = Path(sys.argv[2])
PAGE, INFO = (root / "metrics").read_bytes(), (root / "server_info").read_bytes()
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as SGLang's uvicorn does
    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def do_GET(self):
        headers = {}
        if self.path == "/metrics":
            # prometheus_client's exposition (SGLang mounts make_asgi_app) gzips when the client accepts it
            body, headers["Content-Type"] = PAGE, "text/plain; version=0.0.4; charset=utf-8"
            if "gzip" in self.headers.get("Accept-Encoding", ""):
                body, headers["Content-Encoding"] = gzip.compress(PAGE), "gzip"
        elif self.path == "/server_info":
            body, headers["Content-Type"] = INFO, "application/json"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""
"""SGLang's HTTP surface for /metrics and /server_info, in another process so its CPU is not counted."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def per_call_cpu_us(fn: Callable[[], object], n: int) -> float:
    for _ in range(min(50, n)):
        fn()
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


async def idle_ring_bytes(url: str, items: int) -> float:
    """Bytes per snapshot that real collector ticks add to the ring when nothing changes (the page
    and the GPU capture are static here): the collector shares the unchanged frozen parts."""
    profile = load_profile(PROFILE)
    async with httpx.AsyncClient(timeout=5.0) as http:
        collector = Collector(url, profile, FixtureSampler(CAPTURE, scale_to=8), http)
        for _ in range(20):
            await collector.tick("ready", 1)
        ring: RingBuffer[Snapshot] = RingBuffer(max_items=items + 1)
        tracemalloc.start()
        for _ in range(items):
            snap = await collector.tick("ready", 1)

            def numbered(seq: int, snap: Snapshot = snap) -> Snapshot:
                return snap.model_copy(update={"seq": seq})

            ring.add(numbered)
        await collector.aclose()
        # What the ring alone keeps alive: the memory freed when it goes (parts it shares with the
        # collector's last tick stay, and are not counted).
        assert len(ring) == items
        gc.collect()
        held = tracemalloc.take_snapshot()
        del ring
        gc.collect()
        freed = tracemalloc.take_snapshot()
        tracemalloc.stop()
    return -sum(stat.size_diff for stat in freed.compare_to(held, "filename")) / items


async def tick_cpu(url: str, ticks: int, threaded_gpus: bool) -> tuple[float, float, float, Snapshot]:
    profile = load_profile(PROFILE)
    gpus = FixtureSampler(CAPTURE, scale_to=8)
    async with httpx.AsyncClient(timeout=5.0) as http:
        collector = Collector(url, profile, gpus, http, sample_gpus_in_thread=threaded_gpus)
        snap = await collector.tick("ready", 1)
        for _ in range(20):
            snap = await collector.tick("ready", 1)
        cpu0, wall0, sys0 = (
            time.process_time(),
            time.perf_counter(),
            resource.getrusage(resource.RUSAGE_SELF).ru_stime,
        )
        for _ in range(ticks):
            snap = await collector.tick("ready", 1)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        kernel = resource.getrusage(resource.RUSAGE_SELF).ru_stime - sys0
        await collector.aclose()
    assert snap.metrics_source == "metrics" and len(snap.gpus.devices) == 8
    return cpu / ticks * 1e3, kernel / ticks * 1e3, wall / ticks * 1e3, snap


def ring_memory(snap: Snapshot, items: int, *, gpus_change: bool) -> float:
    """Bytes one snapshot adds to the ring. Busy GPUs read differently every tick (a new object
    graph per snapshot); idle ones read the same, and the sampler then shares the frozen model."""
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    ring: RingBuffer[Snapshot] = RingBuffer(max_items=items + 1)
    base = snap.model_dump(exclude={"gpus"})
    dumped_gpus = snap.gpus.model_dump()
    for _ in range(items):
        gpus = Gpus.model_validate(dumped_gpus) if gpus_change else snap.gpus

        def build(seq: int, gpus: Gpus = gpus) -> Snapshot:
            return Snapshot.model_validate({**base, "seq": seq, "time": time.time(), "gpus": gpus})

        ring.add(build)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return grown / items


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "metrics").write_bytes(PAGE.read_bytes())
        (Path(root) / "server_info").write_text(json.dumps(SERVER_INFO))
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(port), root],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 10
            while True:  # wait for the other process to listen
                try:
                    httpx.get(url + "/metrics", timeout=1.0).raise_for_status()
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            cpu_thread, sys_thread, wall_thread, snap = asyncio.run(tick_cpu(url, args.ticks, True))
            cpu_inline, sys_inline, wall_inline, _ = asyncio.run(tick_cpu(url, args.ticks, False))
            idle_bytes = asyncio.run(idle_ring_bytes(url, 1000))
        finally:
            server.terminate()
            server.wait(timeout=10)

    page = PAGE.read_text()
    sampler = FixtureSampler(CAPTURE, scale_to=8)
    figures = {
        "ticks": args.ticks,
        "page_lines": len(page.splitlines()),
        "page_bytes": len(page.encode()),
        "gpus": 8,
        "tick_cpu_ms": round(cpu_thread, 3),
        "tick_cpu_ms_of_it_kernel": round(sys_thread, 3),
        "tick_wall_ms": round(wall_thread, 3),
        "tick_cpu_ms_gpus_inline": round(cpu_inline, 3),
        "tick_cpu_ms_gpus_inline_of_it_kernel": round(sys_inline, 3),
        "tick_wall_ms_gpus_inline": round(wall_inline, 3),
        "parse_metrics_us": round(per_call_cpu_us(lambda: parse_metrics(page), 300), 1),
        "gpu_sample_8_us": round(per_call_cpu_us(sampler.sample, 300), 1),
        "snapshot_json_us": round(per_call_cpu_us(snap.model_dump_json, 300), 1),
        "snapshot_json_bytes": len(snap.model_dump_json()),
        "ring_bytes_per_snapshot": round(ring_memory(snap, 2000, gpus_change=True)),
        "ring_bytes_per_snapshot_idle_gpus": round(ring_memory(snap, 2000, gpus_change=False)),
        "ring_bytes_per_snapshot_idle_server": round(idle_bytes),
        "target_tick_cpu_ms": 1.0,
    }
    start = time.process_time()
    sum(range(10**6))
    figures["calibration_sum_range_1e6_ms"] = round((time.process_time() - start) * 1e3, 1)
    figures["ring_mib_per_hour_at_1hz"] = round(figures["ring_bytes_per_snapshot"] * 3600 / 2**20, 1)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(
        f"agent telemetry tick: {args.ticks} ticks, {figures['page_lines']} line /metrics page, 8 GPUs (fixture)"
    )
    print(
        f"  CPU per tick (GPU sample in a thread) {figures['tick_cpu_ms']:.3f} ms "
        f"(kernel {figures['tick_cpu_ms_of_it_kernel']:.3f})   wall {figures['tick_wall_ms']:.3f} ms"
    )
    print(
        f"  CPU per tick (GPU sample inline)      {figures['tick_cpu_ms_gpus_inline']:.3f} ms "
        f"(kernel {figures['tick_cpu_ms_gpus_inline_of_it_kernel']:.3f})   wall {figures['tick_wall_ms_gpus_inline']:.3f} ms"
    )
    print(f"  parse_metrics on the full page        {figures['parse_metrics_us']:.0f} µs")
    print(f"  8-GPU sample (replayed NVML)          {figures['gpu_sample_8_us']:.0f} µs")
    print(
        f"  Snapshot → JSON                       {figures['snapshot_json_us']:.0f} µs ({figures['snapshot_json_bytes']} bytes)"
    )
    print(
        f"  ring buffer                           {figures['ring_bytes_per_snapshot']} bytes/snapshot "
        f"({figures['ring_bytes_per_snapshot_idle_gpus']} with idle GPUs, "
        f"{figures['ring_bytes_per_snapshot_idle_server']} when nothing changes), "
        f"{figures['ring_mib_per_hour_at_1hz']} MiB per hour at 1 Hz"
    )
    print(
        f"  this machine: sum(range(10**6)) takes {figures['calibration_sum_range_1e6_ms']} ms of CPU "
        "(scale the figures above by it when comparing machines)"
    )
    verdict = "under" if figures["tick_cpu_ms"] < 1.0 else "OVER"
    print(f"  target < 1 ms CPU per tick: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
