"""Agent CPU per telemetry tick: 8 GPUs of data and a full SGLang 0.5.23 /metrics page.

Usage: python -m bench.costs.agent_tick [--ticks N] [--runs R] [--json]

What it runs: the real ``Collector`` (and the Snapshot the daemon stamps from its observation) scraping ``/metrics`` (the full TP-8 page generated from the
pinned wheel, tests/fixtures/metrics) and ``/server_info`` over HTTP from a server in *another
process* (so that only the agent's own CPU is counted), and a ``FixtureSampler`` replaying the
loaded H200 capture scaled to 8 GPUs. Ticks run back to back; CPU is ``time.process_time()`` (user +
system, all threads of this process) divided by ticks. Two servers: one answers the same page every
time (an idle engine), the other a page in which every sample's value moved since the last one (a
busy engine: nothing the collector remembers from the last page can be reused). Each figure is the
median of ``--runs`` runs (the spread is printed too: the machine is shared).

Then the parts on their own: parsing the page, sampling 8 GPUs, serialising the Snapshot to JSON
(what the stream sends per tick per console), and the memory an hour of busy snapshots takes in the
agent's stream buffer (``agent.serve.stream.StreamHub``, tracemalloc) at 1 Hz and 4 Hz, next to
what the same snapshots took as pydantic objects. The GPU replay skips the driver: on real hardware
each NVML reading costs a few µs more of system time (``bench/real/gpu_probe.py`` measures that on the
device).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from agent.profile.store import load_profile
from agent.serve.stream import StreamHub
from agent.sglang.live_control import READBACK_FIELD
from agent.sglang.reading import MetricsParser, read_page
from agent.telemetry.collector import Collector, Identity
from agent.telemetry.nvml import FixtureSampler
from agent.wire import Snapshot
from bench import REPO

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
import gzip, http.server, itertools, re, socket, sys
from pathlib import Path
root = Path(sys.argv[2])
PAGE, INFO = (root / "metrics").read_bytes(), (root / "server_info").read_bytes()
SAMPLE = re.compile(rb"^([a-z][^ #\\n]*(?:\\{[^}\\n]*\\})?) (\\S+)$", re.M)
def moved(step):  # every sample a little higher: counters and histograms stay cumulative
    return SAMPLE.sub(lambda m: m.group(1) + b" " + repr(float(m.group(2)) + step).encode(), PAGE)
PAGES = [moved(step) for step in range(1, 65)] if sys.argv[3] == "busy" else [PAGE]
NEXT = itertools.cycle(PAGES)
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as SGLang's uvicorn does
    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def do_GET(self):
        headers = {}
        if self.path == "/metrics":
            # prometheus_client's exposition (SGLang mounts make_asgi_app) gzips when the client accepts it
            body, headers["Content-Type"] = next(NEXT), "text/plain; version=0.0.4; charset=utf-8"
            if "gzip" in self.headers.get("Accept-Encoding", ""):
                body, headers["Content-Encoding"] = gzip.compress(body), "gzip"
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
"""SGLang's HTTP surface for /metrics and /server_info, in another process so its CPU is not counted;
argv: port, directory with the page and the /server_info JSON, ``static`` or ``busy``."""


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


async def tick_cpu(url: str, ticks: int, threaded_gpus: bool) -> tuple[float, float, float, Snapshot]:
    profile = load_profile(PROFILE)
    gpus = FixtureSampler(CAPTURE, scale_to=8)
    async with httpx.AsyncClient(timeout=5.0) as http:
        collector = Collector(url, profile, gpus, http, sample_gpus_in_thread=threaded_gpus)
        identity = Identity(profile.identity.name, profile.identity.production, "sglang")
        # A tick is the collector's observation and the Snapshot the daemon numbers and stamps from it.
        snap = (await collector.tick("ready", 1)).snapshot(0, identity)
        for seq in range(20):
            snap = (await collector.tick("ready", 1)).snapshot(seq, identity)
        cpu0, wall0, sys0 = (
            time.process_time(),
            time.perf_counter(),
            resource.getrusage(resource.RUSAGE_SELF).ru_stime,
        )
        for seq in range(ticks):
            snap = (await collector.tick("ready", 1)).snapshot(seq, identity)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        kernel = resource.getrusage(resource.RUSAGE_SELF).ru_stime - sys0
        await collector.aclose()
    assert snap.metrics_source == "metrics" and len(snap.gpus.devices) == 8
    return cpu / ticks * 1e3, kernel / ticks * 1e3, wall / ticks * 1e3, snap


def busy_snapshots(snap: Snapshot, count: int, seed: int = 7) -> Iterator[Callable[[int], Snapshot]]:
    """Builders of ``count`` snapshots of a busy engine one tick apart: every GPU reading and every
    rate differs from the last tick's, as on a loaded server (the NVML replay reads the same)."""
    rng = random.Random(seed)
    base = snap.model_dump()
    start = time.time()
    for i in range(count):
        data = json.loads(json.dumps(base))
        data["time"] = start + i
        for gpu in data["gpus"]["devices"]:
            gpu["utilization_pct"] = float(rng.randint(85, 100))
            gpu["power_w"] = round(rng.uniform(450.0, 700.0), 3)
            gpu["temperature_c"] = float(rng.randint(55, 75))
            gpu["sm_clock_mhz"] = rng.choice((1410, 1455, 1500, 1545, 1980))
            gpu["memory_used_bytes"] = 44_788_744_192 + rng.randrange(0, 2**30, 2**21)
        data["throughput"]["output_tok_s"] = round(rng.uniform(1000, 3000), 1)
        data["throughput"]["prompt_tok_s"] = round(rng.uniform(0, 20000), 1)
        data["throughput"]["requests_per_s"] = round(rng.uniform(0, 9), 3)
        data["load"]["running"] = rng.randint(1, 256)
        data["kv"]["used_tokens"] = rng.randint(0, 136_800)
        data["latency"]["itl_p50_s"] = round(rng.uniform(0.01, 0.05), 4)

        def build(seq: int, data: dict[str, Any] = data) -> Snapshot:
            return Snapshot.model_validate({**data, "seq": seq})

        yield build


def stream_memory(snap: Snapshot, hz: float, seconds: float = 3600.0) -> tuple[int, int]:
    """(items, bytes) the stream buffer holds after ``seconds`` of busy snapshots at ``hz``: the
    memory freed when the buffer goes (tracemalloc)."""
    items = int(seconds * hz)
    clock = [time.time()]
    hub = StreamHub(clock=lambda: clock[0])
    builders = busy_snapshots(snap, items)
    tracemalloc.start()
    for build in builders:
        hub.publish_snapshot(build)
        clock[0] += 1.0 / hz
    gc.collect()
    held = tracemalloc.take_snapshot()
    kept = len(hub.snapshots)
    del hub
    gc.collect()
    freed = tracemalloc.take_snapshot()
    tracemalloc.stop()
    return kept, -sum(stat.size_diff for stat in freed.compare_to(held, "filename"))


def object_bytes(snap: Snapshot, items: int = 1000) -> float:
    """Bytes per busy snapshot kept as a pydantic object (what the ring held before it kept JSON)."""
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    kept = [build(i) for i, build in enumerate(busy_snapshots(snap, items))]
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    assert len(kept) == items
    return sum(stat.size_diff for stat in after.compare_to(before, "filename")) / items


def serve(root: str, mode: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port), root, mode],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:  # wait for the other process to listen
        try:
            httpx.get(url + "/metrics", timeout=1.0).raise_for_status()
            return server, url
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                server.kill()
                raise
            time.sleep(0.05)


def median_of(runs: list[tuple[float, float, float, Snapshot]]) -> tuple[float, float, float, float, float]:
    """(median CPU, its kernel part, median wall, lowest CPU, highest CPU) over the runs, in ms."""
    cpus = [r[0] for r in runs]
    return (
        statistics.median(cpus),
        statistics.median(r[1] for r in runs),
        statistics.median(r[2] for r in runs),
        min(cpus),
        max(cpus),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    tick: dict[str, tuple[float, float, float, float, float]] = {}
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "metrics").write_bytes(PAGE.read_bytes())
        (Path(root) / "server_info").write_text(json.dumps(SERVER_INFO))
        for mode in ("static", "busy"):
            server, url = serve(root, mode)
            try:
                for threaded in (True, False):
                    runs = [asyncio.run(tick_cpu(url, args.ticks, threaded)) for _ in range(args.runs)]
                    tick[f"{mode}_{'thread' if threaded else 'inline'}"] = median_of(runs)
                    snap = runs[-1][3]
            finally:
                server.terminate()
                server.wait(timeout=10)

    page = PAGE.read_text()
    page_bytes = PAGE.read_bytes()
    sampler = FixtureSampler(CAPTURE, scale_to=8)
    warm = MetricsParser()
    warm.parse(page_bytes)
    at_1hz = stream_memory(snap, 1.0)
    at_4hz = stream_memory(snap, 4.0)
    figures: dict[str, Any] = {
        "ticks": args.ticks,
        "runs": args.runs,
        "page_lines": len(page.splitlines()),
        "page_bytes": len(page_bytes),
        "gpus": 8,
        "target_tick_cpu_ms": 1.0,
    }
    for key, (cpu, kernel, wall, low, high) in tick.items():
        figures[f"tick_cpu_ms_{key}"] = round(cpu, 3)
        figures[f"tick_cpu_ms_{key}_of_it_kernel"] = round(kernel, 3)
        figures[f"tick_cpu_ms_{key}_range"] = [round(low, 3), round(high, 3)]
        figures[f"tick_wall_ms_{key}"] = round(wall, 3)
    figures.update(
        {
            "parse_metrics_us": round(per_call_cpu_us(lambda: read_page(page_bytes), 300), 1),
            "parse_same_page_again_us": round(per_call_cpu_us(lambda: warm.parse(page_bytes), 300), 1),
            "gpu_sample_8_us": round(per_call_cpu_us(sampler.sample, 300), 1),
            "snapshot_json_us": round(per_call_cpu_us(snap.model_dump_json, 300), 1),
            "snapshot_json_bytes": len(snap.model_dump_json()),
            "stream_1h_1hz_items": at_1hz[0],
            "stream_1h_1hz_mib": round(at_1hz[1] / 2**20, 1),
            "stream_1h_4hz_items": at_4hz[0],
            "stream_1h_4hz_mib": round(at_4hz[1] / 2**20, 1),
            "stream_bytes_per_snapshot": round(at_4hz[1] / at_4hz[0]),
            "object_bytes_per_snapshot": round(object_bytes(snap)),
        }
    )
    start = time.process_time()
    sum(range(10**6))
    figures["calibration_sum_range_1e6_ms"] = round((time.process_time() - start) * 1e3, 1)
    figures["objects_mib_1h_4hz"] = round(figures["object_bytes_per_snapshot"] * 14_400 / 2**20, 1)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(
        f"agent telemetry tick: {args.ticks} ticks x {args.runs} runs (median, [lowest, highest]), "
        f"{figures['page_lines']} line /metrics page ({figures['page_bytes']} bytes), 8 GPUs (fixture)"
    )
    for mode, what in (
        ("static", "same page every tick (idle engine)"),
        ("busy", "every value moves (busy engine)"),
    ):
        print(f"  {what}:")
        for gpus in ("thread", "inline"):
            key = f"{mode}_{gpus}"
            low, high = figures[f"tick_cpu_ms_{key}_range"]
            print(
                f"    CPU per tick, GPU sample {'in a thread' if gpus == 'thread' else 'inline     '} "
                f"{figures[f'tick_cpu_ms_{key}']:.3f} ms [{low:.3f}, {high:.3f}] "
                f"(kernel {figures[f'tick_cpu_ms_{key}_of_it_kernel']:.3f})   wall {figures[f'tick_wall_ms_{key}']:.3f} ms"
            )
    print(
        f"  parse_metrics on the full page        {figures['parse_metrics_us']:.0f} µs "
        f"({figures['parse_same_page_again_us']:.0f} µs for the same page again)"
    )
    print(f"  8-GPU sample (replayed NVML)          {figures['gpu_sample_8_us']:.0f} µs")
    print(
        f"  Snapshot → JSON                       {figures['snapshot_json_us']:.0f} µs ({figures['snapshot_json_bytes']} bytes)"
    )
    print(
        f"  stream buffer, busy 8-GPU snapshots   1 h at 1 Hz: {figures['stream_1h_1hz_mib']} MiB "
        f"({figures['stream_1h_1hz_items']} items); 1 h at 4 Hz: {figures['stream_1h_4hz_mib']} MiB "
        f"({figures['stream_1h_4hz_items']} items); {figures['stream_bytes_per_snapshot']} bytes/snapshot "
        f"(as pydantic objects: {figures['object_bytes_per_snapshot']} bytes, "
        f"{figures['objects_mib_1h_4hz']} MiB for 1 h at 4 Hz)"
    )
    print(
        f"  this machine: sum(range(10**6)) takes {figures['calibration_sum_range_1e6_ms']} ms of CPU "
        "(scale the figures above by it when comparing machines)"
    )
    for mode in ("static", "busy"):
        verdict = "under" if figures[f"tick_cpu_ms_{mode}_thread"] < 1.0 else "OVER"
        print(f"  target < 1 ms CPU per tick ({mode} page, GPU sample in a thread): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
