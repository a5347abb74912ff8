"""What a long stretch at one setting does to the engines' host side, window by window (issue 46).

A minute-long comparison cannot see a slowdown that comes after a minute. This sampler runs beside
a long load (``gpu.sh soak``) and, every ``--window-s``, writes one JSON line per engine: output
tokens/s and running requests from the engine's own ``/metrics``, GPU busy and SM clock averaged
over the window (``nvidia-smi`` at 1 Hz), patch 03's read-back (``adaptive_spec_live.zero_step``:
its counters and structure sizes, as far as the installed patch reports them), and each SGLang
process's resident memory and CPU seconds. What grows while tokens/s falls names the suspect.

    python -m bench.real.soak_sampler --engine NAME=URL [--engine ...] --out soak.jsonl \
        [--window-s 10] [--duration-s 900]

Each line is flushed as it is written, so a run cut short keeps every window it finished.
SIGINT or SIGTERM ends it after the window in progress.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

from agent.sglang.client import EngineClient, EngineError

SMI_QUERY = "utilization.gpu,clocks.sm"


class GpuWindow:
    """``nvidia-smi -l 1`` read in a thread: the mean busy % and SM clock since the last ``take``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: list[float] = []
        self._sm: list[float] = []
        try:
            self._proc: subprocess.Popen[str] | None = subprocess.Popen(
                ["nvidia-smi", f"--query-gpu={SMI_QUERY}", "--format=csv,noheader,nounits", "-l", "1"],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        except OSError:
            self._proc = None
            return
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            try:
                busy, sm = float(parts[0]), float(parts[1])
            except (ValueError, IndexError):
                continue
            with self._lock:
                self._busy.append(busy)
                self._sm.append(sm)

    def take(self) -> dict[str, float | int | None]:
        with self._lock:
            busy, sm, self._busy, self._sm = self._busy, self._sm, [], []
        if not busy:
            return {"gpu_busy_pct": None, "sm_mhz": None, "gpu_samples": 0}
        return {"gpu_busy_pct": sum(busy) / len(busy), "sm_mhz": sum(sm) / len(sm), "gpu_samples": len(busy)}

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()


def sglang_processes() -> list[dict[str, Any]]:
    """Every process whose command line names SGLang: pid, title, RSS (MiB), CPU seconds, threads."""
    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
            title = proc.info["name"] or ""
            if "sglang" not in cmdline and "sglang" not in title:
                continue
            cpu = proc.cpu_times()
            found.append(
                {
                    "pid": proc.pid,
                    "title": (cmdline or title)[:120],
                    "rss_mib": round(proc.memory_info().rss / 2**20, 1),
                    "cpu_s": round(cpu.user + cpu.system, 2),
                    "threads": proc.num_threads(),
                }
            )
        except (psutil.Error, OSError):
            continue
    return found


async def engine_reading(client: EngineClient) -> dict[str, Any]:
    """The engine's counters now (the reading's field names: ``agent/sglang/metric_fields.py``) and
    patch 03's read-back; what did not answer is None."""
    out: dict[str, Any] = {
        "generated": None,
        "running": None,
        "queued": None,
        "zero_step": None,
        "live": None,
    }
    try:
        reading = await client.metrics()
        if reading is not None:
            out["generated"] = reading.counter("generation_tokens")
            out["running"] = reading.gauge("running")
            out["queued"] = reading.gauge("queued")
        raw = await client.server_info_raw()
        state0 = (raw.get("internal_states") or [{}])[0]
        live = state0.get("adaptive_spec_live") or {}
        out["zero_step"] = live.get("zero_step")
        out["live"] = {k: v for k, v in live.items() if k != "zero_step"}
    except EngineError as exc:
        out["error"] = str(exc)[:200]
    return out


async def sample(args: argparse.Namespace) -> int:
    engines = dict(spec.split("=", 1) for spec in args.engine)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    gpu = GpuWindow()
    start = time.monotonic()
    async with httpx.AsyncClient() as http:
        clients = {name: EngineClient(url, http, timeout_s=10.0) for name, url in engines.items()}
        last = {name: await engine_reading(c) for name, c in clients.items()}
        last_t = time.monotonic()
        gpu.take()
        with args.out.open("a", encoding="utf-8") as out:
            window = 0
            while not stop.is_set() and time.monotonic() - start < args.duration_s:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(args.window_s):
                        await stop.wait()
                now = time.monotonic()
                span = now - last_t
                gpu_now = gpu.take()
                procs = sglang_processes()
                for name, client in clients.items():
                    reading = await engine_reading(client)
                    before, after = last[name].get("generated"), reading.get("generated")
                    rate = (after - before) / span if before is not None and after is not None else None
                    line = {
                        "window": window,
                        "t_s": round(now - start, 2),
                        "span_s": round(span, 2),
                        "engine": name,
                        "tok_s": None if rate is None else round(rate, 1),
                        **gpu_now,
                        **reading,
                        "processes": procs,
                    }
                    out.write(json.dumps(line) + "\n")
                    last[name] = reading
                out.flush()
                shown = [f"{n} {last[n].get('running')} running" for n in clients]
                print(
                    f"window {window} at {now - start:.0f}s: busy {gpu_now['gpu_busy_pct']} %, {', '.join(shown)}"
                )
                last_t = now
                window += 1
    gpu.stop()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", action="append", required=True, help="NAME=URL, one per engine")
    parser.add_argument("--out", type=Path, required=True, help="JSON lines, appended")
    parser.add_argument("--window-s", type=float, default=10.0)
    parser.add_argument("--duration-s", type=float, default=900.0)
    args = parser.parse_args()
    return asyncio.run(sample(args))


if __name__ == "__main__":
    raise SystemExit(main())
