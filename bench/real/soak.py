"""Issue 46's soak: hold "off" (live threshold 1: every round at 0 steps) for a long run at one
concurrency, window by window, beside a server without a drafter, and see whether anything grows.

    python -m bench.real.soak --state-dir DIR --baseline-state-dir DIR2 [--concurrency 64]
        [--duration-s 600] [--window-s 10] [--baseline-every N --baseline-block K | --baseline-after-s S]
        [--input-len 256] [--output-len 128] [--timed-rounds 50] --json OUT

The threshold is set through the agent of ``--state-dir`` as an operator's action (planned and confirmed,
audited as the operator "bench", as ``bench/real/act.py`` does) and put back at the end, also on SIGINT
or SIGTERM. The load is the bench's own (``bench.studies.ramp_load.RampLoad``: ``/generate`` with unique
``input_ids`` per request, ``max_new_tokens`` with ``ignore_eos``, streamed; a stream's first request
has a random length so that completions spread): C streams on the server measured now, none on the
other. Each window of ``--window-s`` records: our streams' tok/s and the engine's, the running
requests, GPU busy and SM clock (``nvidia-smi``, sampled through the window; said where absent), the
round timer's host and GPU ms per round by part (``--timed-rounds`` rounds of each window; 0: none),
patch 03's state sizes and the scheduler's resident memory and collector time (its ``zero_step``
read-back), and the engine's process tree's resident memory (``/proc``, from the agent's
``engine_pid``). The baseline runs in blocks between off's (``--baseline-every N``: after every N off
windows, ``--baseline-block`` baseline windows) and/or after them (``--baseline-after-s``).

A table row is printed per window, and ``--json`` is rewritten (atomically) after every window with
the verdict so far (``soak_verdict.summary``), so that a run cut short keeps what it measured; gpu.sh's
``soak`` stage starts it under setsid to outlive the command that started it, ``soakwait`` waits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from agent.bench.engine import EngineProbe
from agent.profile.atomic import write_atomic
from bench.kit.agent_api import agent_client, plan_and_confirm
from bench.real import soak_probes, soak_verdict
from bench.studies.ramp_load import RampLoad, timed_window, window_figures

OFF_THRESHOLD = 1
"""Live threshold 1: every batch of one request or more runs at 0 steps (issue 46's "off")."""
SLICES = 5
TIMEOUT_S = 60.0


class BadInput(SystemExit):
    pass


@dataclass
class Server:
    name: str
    url: str
    pid: int | None
    probe: EngineProbe
    load: RampLoad
    last_gc_s: float | None = None


async def agent_status(state_dir: Path) -> dict[str, Any]:
    try:
        client = agent_client(state_dir, timeout_s=TIMEOUT_S)
    except OSError as exc:
        raise BadInput(f"--state-dir {state_dir}: no agent token there ({exc.strerror or exc})") from None
    async with client:
        try:
            status: dict[str, Any] = (await client.get("/v1/status")).json()
        except httpx.HTTPError as exc:
            raise BadInput(
                f"--state-dir {state_dir}: the agent does not answer on its socket ({exc})"
            ) from None
    if status.get("engine_state") != "ready" or not status.get("engine_url"):
        raise BadInput(
            f"--state-dir {state_dir}: the agent's engine is {status.get('engine_state')}, not ready"
        )
    return status


async def set_threshold(state_dir: Path, value: int) -> str:
    """The live threshold through the agent (audited as the operator ``bench``); its answer in words."""
    async with agent_client(state_dir, timeout_s=TIMEOUT_S) as client:
        plan, done = await plan_and_confirm(client, "threshold", value)
    if done is None:
        return f"not planned live: {plan.get('reason') or plan.get('mode')}"
    return f"{done.get('status')}: {done.get('message')}"


def schedule(args: argparse.Namespace) -> list[str]:
    """The servers of the windows in order: off windows, baseline blocks between them, then after."""
    off_windows = max(1, round(args.duration_s / args.window_s))
    out: list[str] = []
    for i in range(off_windows):
        out.append("off")
        if args.baseline_every and (i + 1) % args.baseline_every == 0 and i + 1 < off_windows:
            out.extend(["baseline"] * args.baseline_block)
    out.extend(["baseline"] * round(args.baseline_after_s / args.window_s))
    return out


async def measure_window(server: Server, args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """One window on ``server``: the engine reads around it, the round timer's table, the read-back."""
    if args.timed_rounds:
        try:
            await server.probe.time_rounds(0)
            await server.probe.time_rounds(args.timed_rounds)
        except Exception:  # a server that refuses the timer still gets its window measured
            pass
    reads = await timed_window(server.probe, args.window_s)
    table = None
    if args.timed_rounds:
        try:
            table = await server.probe.round_timing()
        except Exception:
            table = None
    try:
        live = await server.probe.live_state()
    except Exception:
        live = None
    return reads, table, live


def window_record(
    server: Server, index: int, reads: Any, table: Any, live: Any, t0: float, gpu: soak_probes.GpuSampler
) -> dict[str, Any]:
    figures = window_figures(server.load, reads, SLICES)
    record: dict[str, Any] = {
        "index": index,
        "server": server.name,
        "at_s": round(reads.wall_start - t0, 2),
        "wall_start": reads.wall_start,
        "wall_end": reads.wall_end,
        **{
            k: figures[k]
            for k in ("seconds", "client_tps", "engine_tps", "engine_running", "completed", "failed")
        },
        "slice_cv": figures["slice_cv"],
        **gpu.window(reads.wall_start, reads.wall_end),
        "timer": soak_probes.timer_figures(table),
        "engine_rss_kib": soak_probes.tree_rss_kib(server.pid),
        **soak_probes.readback_figures(live),
    }
    gc_s = record.get("gc_total_s")
    record["gc_ms"] = (
        round((gc_s - server.last_gc_s) * 1000.0, 2)
        if isinstance(gc_s, float) and server.last_gc_s is not None
        else None
    )
    if isinstance(gc_s, float):
        server.last_gc_s = gc_s
    return record


def write(path: Path | None, result: dict[str, Any]) -> None:
    if path is not None:
        result["summary"] = soak_verdict.summary(result["windows"])
        write_atomic(path, json.dumps(result, indent=1, default=str))


async def soak(args: argparse.Namespace) -> int:
    status = await agent_status(args.state_dir)
    base_status = await agent_status(args.baseline_state_dir) if args.baseline_state_dir else None
    plan = schedule(args)
    stop = asyncio.Event()
    why: list[str] = []
    loop = asyncio.get_running_loop()

    def on_signal(sig: signal.Signals) -> None:
        """End the window under way, put the threshold back, write what was measured."""
        why.append(sig.name)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    t0 = time.time()
    result: dict[str, Any] = {
        "kind": "soak",
        "argv": sys.argv[1:],
        "concurrency": args.concurrency,
        "window_s": args.window_s,
        "duration_s": args.duration_s,
        "request": {"endpoint": "/generate", "input_len": args.input_len, "output_len": args.output_len,
                    "prompts": "unique input_ids per request", "first_request_of_a_stream": "random length"},
        "off": {"state_dir": str(args.state_dir), "url": status["engine_url"], "profile": status.get("profile"),
                "engine_pid": status.get("engine_pid"), "threshold": OFF_THRESHOLD},
        "baseline": None if base_status is None else {"state_dir": str(args.baseline_state_dir),
                    "url": base_status["engine_url"], "profile": base_status.get("profile"),
                    "engine_pid": base_status.get("engine_pid")},
        "schedule": plan,
        "started_at": t0,
        "windows": [],
    }  # fmt: skip
    gpu = soak_probes.GpuSampler(args.gpu_index)
    await gpu.start()
    result["gpu_sampler"] = (
        gpu.unavailable or f"nvidia-smi every {soak_probes.SAMPLE_MS} ms, GPU {args.gpu_index}"
    )
    async with httpx.AsyncClient(timeout=httpx.Timeout(TIMEOUT_S, connect=10.0)) as http:
        servers = {"off": Server("off", status["engine_url"], status.get("engine_pid"),
                                 EngineProbe(http, status["engine_url"], {}),
                                 RampLoad(status["engine_url"], args.input_len, args.output_len, {}, seed=args.seed))}  # fmt: skip
        if base_status is not None:
            url = base_status["engine_url"]
            servers["baseline"] = Server("baseline", url, base_status.get("engine_pid"), EngineProbe(http, url, {}),
                                         RampLoad(url, args.input_len, args.output_len, {}, seed=args.seed + 1))  # fmt: skip
        before = await servers["off"].probe.live_state()
        restore = None if before is None else before.threshold
        result["off"]["threshold_before"] = restore
        result["off"]["set"] = await set_threshold(args.state_dir, OFF_THRESHOLD)
        print(
            f"soak: off ({status['engine_url']}) threshold {OFF_THRESHOLD}: {result['off']['set']}",
            flush=True,
        )
        if gpu.unavailable:
            print(f"soak: {gpu.unavailable}", flush=True)
        for line in soak_verdict.table_lines([]):
            print(line, flush=True)
        current: str | None = None
        off_clock = 0.0
        stopping = asyncio.create_task(stop.wait())
        try:
            for index, name in enumerate(plan):
                if stop.is_set():
                    break
                server = servers[name]
                if name != current:
                    for other in servers.values():
                        if other is not server:
                            await other.load.set_concurrency(0)
                    await server.load.set_concurrency(args.concurrency)
                    settle = asyncio.create_task(
                        asyncio.sleep(args.warmup_s if current is None else args.settle_s)
                    )
                    await asyncio.wait({settle, stopping}, return_when=asyncio.FIRST_COMPLETED)
                    settle.cancel()
                    current = name
                    if stop.is_set():
                        break
                window = asyncio.create_task(measure_window(server, args))
                await asyncio.wait({window, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not window.done():
                    window.cancel()
                    break
                record = window_record(server, index, *window.result(), t0, gpu)
                if name == "off":
                    record["off_s_start"], off_clock = off_clock, off_clock + record["seconds"]
                    record["off_s_end"] = off_clock
                server.load.forget_finished()
                result["windows"].append(record)
                print(soak_verdict.row(record), flush=True)
                write(args.json, result)
        finally:
            stopping.cancel()
            for server in servers.values():
                await server.load.close()
            await gpu.stop()
            if restore is not None:
                result["off"]["restored"] = await set_threshold(args.state_dir, restore)
            else:
                result["off"]["restored"] = "the engine read back no threshold before the soak: left at 1"
            result["stopped_by"] = why[0] if why else None
            result["ended_at"] = time.time()
            write(args.json, result)
    print(f"soak: threshold back to {restore}: {result['off']['restored']}", flush=True)
    for line in soak_verdict.verdict_lines(soak_verdict.summary(result["windows"])):
        print(line, flush=True)
    return 0 if not why else 128 + int(getattr(signal, why[0]))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--state-dir", type=Path, required=True, help="the agent of the speculative engine held at off"
    )
    p.add_argument("--baseline-state-dir", type=Path, help="the agent of the server without a drafter")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--duration-s", type=float, default=600.0, help="seconds of off windows")
    p.add_argument("--window-s", type=float, default=10.0)
    p.add_argument("--baseline-every", type=int, default=0, help="a baseline block after every N off windows")
    p.add_argument("--baseline-block", type=int, default=2, help="windows in a baseline block")
    p.add_argument(
        "--baseline-after-s",
        type=float,
        default=None,
        help="baseline seconds after (default 120 without --baseline-every, else 0)",
    )
    p.add_argument("--warmup-s", type=float, default=15.0, help="load before the first window")
    p.add_argument(
        "--settle-s", type=float, default=8.0, help="load before a window after a switch of server"
    )
    p.add_argument("--input-len", type=int, default=256)
    p.add_argument("--output-len", type=int, default=128)
    p.add_argument("--timed-rounds", type=int, default=50, help="round-timer rounds per window (0: none)")
    p.add_argument("--gpu-index", type=int, default=0)
    p.add_argument("--seed", type=int, default=46)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    if args.baseline_after_s is None:
        args.baseline_after_s = 0.0 if args.baseline_every else (120.0 if args.baseline_state_dir else 0.0)
    checks = [
        (1 <= args.concurrency <= 4096, "--concurrency must be 1 to 4096"),
        (1.0 <= args.window_s <= 600.0, "--window-s must be 1 to 600"),
        (args.window_s <= args.duration_s <= 86_400.0, "--duration-s must be at least one window and at most a day"),
        (args.baseline_every >= 0 and 1 <= args.baseline_block <= 100, "--baseline-every >= 0, --baseline-block 1 to 100"),
        (0.0 <= args.baseline_after_s <= 86_400.0, "--baseline-after-s must be 0 to a day"),
        (0 <= args.timed_rounds <= 100_000, "--timed-rounds must be 0 to 100000"),
        (1 <= args.input_len <= 1_000_000 and 1 <= args.output_len <= 1_000_000, "--input-len, --output-len must be 1 to 1000000"),
    ]  # fmt: skip
    checks.append(
        (
            args.baseline_state_dir is not None or not (args.baseline_every or args.baseline_after_s),
            "--baseline-every and --baseline-after-s need --baseline-state-dir (the server without a drafter)",
        )
    )
    for ok, words in checks:
        if not ok:
            p.error(words)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        return asyncio.run(soak(args))
    except BadInput as exc:
        print(f"soak: {exc.code}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
