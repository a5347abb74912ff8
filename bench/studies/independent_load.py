"""An independent load client against the bench's steady-state figure, at one concurrency level.

Its own minimal code (a bare HTTP/1.1 keep-alive connection per worker, nothing of ``agent.bench``): C workers send the same requests
as the bench (native ``/generate`` with ``input_ids`` drawn the bench's way, ``max_new_tokens`` with
``ignore_eos``, streamed) back to back for ``--seconds``, all starting at once as bench_serving's
do. It separates ramp and tail its own way: it stops issuing at the deadline and measures only the
later part of the run, from ``--skip`` of it to the deadline (the ramp and the first waves are
left out, and every worker is still busy at the deadline), as the least-squares slope of the
cumulative output tokens over time (a slope leaves the loop's within-cycle swing out better than
two end points do), and prints the plain count over time beside it.

Around it, ``agent bench sweep --concurrency C`` (default options) runs before and after against
the same simulator; the bench's figure must agree with the independent one within ``--bound``.

    .venv/bin/python -m bench.studies.independent_load [--concurrency 64] [--seconds 45] [--speedup 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from bench import REPO
from bench.kit.sim_process import AGENT, running_sim

FIRST_SEED = 1_001_000_000
"""The bench's first prompt seed at its first level with seed 1: the same prompts, in order."""


def prompt_ids(input_len: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(1000, 30000) for _ in range(input_len)]


COUNT = re.compile(rb'"completion_tokens":\s*(\d+)')


class Connection:
    """One keep-alive HTTP/1.1 connection that POSTs and reads a chunked SSE answer, nothing more."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post_generate(self, body: bytes, arrivals: list[tuple[float, int]]) -> None:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = (
            f"POST /generate HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        status = await self.reader.readuntil(b"\r\n\r\n")
        if b" 200 " not in status.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"/generate answered {status[:60]!r}")
        seen = 0
        pending = b""
        while True:
            size = int((await self.reader.readline()).strip() or b"0", 16)
            if size == 0:
                await self.reader.readline()
                return
            pending += (await self.reader.readexactly(size + 2))[:-2]
            *events, pending = pending.split(b"\n\n")
            for event in events:
                found = COUNT.findall(event)
                if found and int(found[-1]) > seen:
                    count = int(found[-1])
                    arrivals.append((time.perf_counter(), count - seen))
                    seen = count


async def load(
    url: str, concurrency: int, seconds: float, input_len: int, output_len: int
) -> tuple[float, list[tuple[float, int]], float]:
    arrivals: list[tuple[float, int]] = []
    seeds = iter(range(FIRST_SEED, FIRST_SEED + 10_000_000))
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    cpu0 = time.process_time()
    start = time.perf_counter()
    deadline = start + seconds

    async def worker() -> None:
        conn = Connection(host, port)
        while time.perf_counter() < deadline:
            body = {
                "input_ids": prompt_ids(input_len, next(seeds)),
                "sampling_params": {"max_new_tokens": output_len, "ignore_eos": True, "temperature": 0.0},
                "stream": True,
            }
            await conn.post_generate(json.dumps(body).encode(), arrivals)
        if conn.writer is not None:
            conn.writer.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - start
    return start, arrivals, (time.process_time() - cpu0) / wall


def steady_figures(
    start: float, arrivals: list[tuple[float, int]], seconds: float, skip: float
) -> tuple[float, float]:
    """(least-squares slope, count / time) of the output tokens delivered from ``skip`` of the run to the deadline."""
    a, b = start + skip * seconds, start + seconds
    inside = sorted((t, n) for t, n in arrivals if a <= t <= b)
    total = 0
    xs, ys = [], []
    for t, n in inside:
        total += n
        xs.append(t - a)
        ys.append(total)
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mean_x) ** 2 for x in xs
    )
    return slope, total / (b - a)


def bench_sweep(url: str, concurrency: int, out: Path, input_len: int, output_len: int) -> dict[str, object]:
    cmd = [*AGENT, "bench", "sweep", "--url", url, "--concurrency", str(concurrency), "--json", str(out)]
    cmd += ["--input-len", str(input_len), "--output-len", str(output_len)]
    done = subprocess.run(cmd, cwd=REPO, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"agent bench sweep failed: {done.stderr}")
    level: dict[str, object] = json.loads(out.read_text())["levels"][0]
    return level


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--profile", default=str(REPO / "profiles" / "kimi-k25-eagle3.toml"))
    parser.add_argument("--speedup", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=45.0)
    parser.add_argument("--skip", type=float, default=0.3, help="share of the run left out at its start")
    parser.add_argument("--input-len", type=int, default=1024)
    parser.add_argument("--output-len", type=int, default=256)
    parser.add_argument("--bound", type=float, default=0.05)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="independent-load-"))
    load_before = os.getloadavg()[0]
    with running_sim(args.profile, args.speedup, workdir / "sim.log") as url:
        before = bench_sweep(url, args.concurrency, workdir / "before.json", args.input_len, args.output_len)
        start, arrivals, cpu = asyncio.run(
            load(url, args.concurrency, args.seconds, args.input_len, args.output_len)
        )
        after = bench_sweep(url, args.concurrency, workdir / "after.json", args.input_len, args.output_len)
    slope, plain = steady_figures(start, arrivals, args.seconds, args.skip)
    lags = (workdir / "sim.log").read_text(errors="replace").count("fell behind the wall clock")
    print(
        f"host: {os.cpu_count()} cores, load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after; "
        f"simulator fell-behind warnings: {lags}"
    )
    print(
        f"independent client, c={args.concurrency}, {args.seconds:.0f} s, steady from {args.skip:.0%} of the run:"
    )
    print(
        f"  {slope:9.1f} tok/s (least-squares slope), {plain:9.1f} tok/s (tokens / time); client CPU {cpu:.0%} of a core"
    )
    ok = True
    for name, level in (("before", before), ("after", after)):
        value = float(level["output_throughput"])  # type: ignore[arg-type]
        ci = level.get("output_throughput_ci")
        shown = f"[{ci[0]:.0f}, {ci[1]:.0f}]" if isinstance(ci, list) else "-"
        diff = value / slope - 1.0
        ok &= abs(diff) <= args.bound
        print(
            f"  agent bench sweep {name}: {value:9.1f} tok/s, interval {shown}, {diff * 100:+5.1f}% against the independent figure"
        )
    print(f"within ±{args.bound * 100:.0f}%: {'yes' if ok else 'NO'}  (results in {workdir})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
