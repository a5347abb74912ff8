"""Where a round's time goes, part by part, on a live patched SGLang (patch 03's round timer).

Keeps ``--concurrency`` long streaming requests on one engine and, for each setting, sets it live,
lets the batch settle, asks the engine to time the next ``--rounds`` rounds (``k25_round_timing``)
and reads the table back: per stage, host milliseconds (the Python that launched it) and GPU
milliseconds (CUDA events on the forward stream). Settings, on a speculative engine:

* ``zero_verify``: live threshold 1 (every round at 0 steps) through SGLang's own 0-step path;
* ``zero_plain``: the same rounds through patch 03's plain decode;
* ``spec``: live threshold 0 (drafting at every size);

and ``decode`` on a server without a drafter (``--baseline``). The original threshold and path
are put back at the end.

    python -m bench.real.round_timing --url http://127.0.0.1:30021 [--baseline] \\
        [--concurrency 64] [--rounds 200] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from agent.bench.stream import generate_body, make_prompt
from agent.sglang.client import EngineClient
from agent.sglang.info_view import LiveSpec
from agent.sglang.live_control import NO_THRESHOLD, ZERO_STEP_PLAIN, ZERO_STEP_VERIFY
from bench.studies.upshift_recovery import _body, stream_one

NEVER_SPECULATE = 1
SETTLE_S = 2.0
STAGE_ORDER = (
    "activate",
    "catch_up",
    "input",
    "batch_init",
    "prepare",
    "target_forward",
    "sample",
    "commit",
    "ring",
    "draft_extend",
    "end",
)


@dataclass(frozen=True)
class LoadShape:
    """The requests the load keeps on the engine.

    ``unique`` prompts are ``input_len`` token ids drawn per request, as ``agent bench compare``
    sends them, so every arrival prefills its whole prompt. The default (``unique=False``) is the
    text prompt the round timer has always used: under the tiny models' word-level tokenizer its
    words are all ``<unk>``, so after the first request the prefix cache holds the prompt and an
    arrival prefills one or two tokens (the 2026-12-04/06 traces: ``step[EXTEND bs=38 toks=76]``).
    ``stagger_s`` spreads the workers' first requests over that many seconds, so that requests of
    one length do not arrive and finish in one wave.
    """

    output_len: int
    input_len: int = 256
    unique: bool = False
    stagger_s: float = 0.0

    def body(self, seed: int) -> dict[str, Any]:
        if self.unique:
            return generate_body(make_prompt(self.input_len, seed), self.output_len)
        return _body(self.input_len, self.output_len, seed)


async def keep_load(
    client: httpx.AsyncClient, url: str, n: int, stop: asyncio.Event, shape: LoadShape | int
) -> int:
    """``n`` workers, each sending one request after another until ``stop``; requests sent.

    ``shape`` is a ``LoadShape`` or, as before, an output length (text prompts, no stagger)."""
    load = shape if isinstance(shape, LoadShape) else LoadShape(output_len=shape)
    sent = 0

    async def worker(i: int) -> None:
        nonlocal sent
        if load.stagger_s > 0:
            await asyncio.sleep(load.stagger_s * i / n)
        k = 0
        while not stop.is_set():
            sent += 1
            await stream_one(client, url, {}, load.body(1000 * i + k))
            k += 1

    tasks = [asyncio.create_task(worker(i)) for i in range(n)]
    await stop.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return sent


@dataclass
class LoadedEngine:
    """An engine under load: its client, what it read back before (None: a server without a drafter)
    and, once the load stopped, how many requests were sent."""

    engine: EngineClient
    live: LiveSpec | None
    requests_sent: int = 0


@contextlib.asynccontextmanager
async def under_load(
    client: httpx.AsyncClient, url: str, concurrency: int, output_len: int | LoadShape, baseline: bool
) -> AsyncIterator[LoadedEngine]:
    """``concurrency`` streams kept on the engine at ``url`` while the block runs; afterwards the load
    stops and a speculative engine gets back the live threshold and zero-step path it had.

    Refuses (SystemExit) a speculative engine that reads back no patch 03 state, before any load.
    Shared by this script and ``trace_rounds.py``: both change live settings for a measurement, and an
    engine left at threshold 1 after a run would serve the next one wrong.
    """
    engine = EngineClient(url, client)
    live = None if baseline else await engine.live_state()
    if not baseline and (live is None or live.zero_step is None):
        raise SystemExit("the server reads back no zero_step state: it lacks patch 03 (or adaptive)")
    loaded = LoadedEngine(engine=engine, live=live)
    stop = asyncio.Event()
    load = asyncio.create_task(keep_load(client, url, concurrency, stop, output_len))
    try:
        yield loaded
    finally:
        stop.set()
        loaded.requests_sent = await load
        if live is not None:
            if live.threshold is not None:  # as the 0-step path: what was read back is given back
                await engine.set_live(adaptive_spec_threshold=live.threshold)
            if live.zero_step is not None and live.zero_step.path:
                await engine.set_zero_step_path(live.zero_step.path)


async def time_setting(engine: EngineClient, rounds: int, limit_s: float) -> dict[str, Any] | None:
    await engine.time_rounds(0)
    await engine.time_rounds(rounds)
    until = time.monotonic() + limit_s
    table: dict[str, Any] | None = None
    while time.monotonic() < until:
        await asyncio.sleep(0.5)
        table = await engine.round_timing()
        if table is not None and table.get("remaining") == 0:
            return table
    return table


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"url": args.url, "concurrency": args.concurrency, "rounds": args.rounds}
    settings: list[tuple[str, dict[str, Any]]] = (
        [("decode", {})]
        if args.baseline
        else [
            ("zero_verify", {"threshold": NEVER_SPECULATE, "path": ZERO_STEP_VERIFY}),
            ("zero_plain", {"threshold": NEVER_SPECULATE, "path": ZERO_STEP_PLAIN}),
            ("spec", {"threshold": NO_THRESHOLD, "path": ZERO_STEP_PLAIN}),
        ]
    )
    async with httpx.AsyncClient(timeout=httpx.Timeout(60.0, read=None)) as client:
        loaded = under_load(client, args.url, args.concurrency, args.output_len, args.baseline)
        async with loaded as session:
            engine = session.engine
            await asyncio.sleep(args.warmup_s)
            for name, setting in settings:
                if "threshold" in setting:
                    await engine.set_live(adaptive_spec_threshold=setting["threshold"])
                    await engine.set_zero_step_path(setting["path"])
                await asyncio.sleep(SETTLE_S)
                started = time.monotonic()
                table = await time_setting(engine, args.rounds, args.limit_s)
                info = await engine.live_state()
                results[name] = {
                    "table": table,
                    "seconds": round(time.monotonic() - started, 2),
                    "zero_step": None
                    if info is None or info.zero_step is None
                    else dataclasses.asdict(info.zero_step),
                }
                print(f"{name}: timed in {results[name]['seconds']} s", flush=True)
        results["requests_sent"] = session.requests_sent
    return results


def table_lines(results: dict[str, Any]) -> list[str]:
    """One row per stage, one column per setting: GPU ms (host ms)."""
    kinds = [k for k in ("zero_verify", "zero_plain", "spec", "decode") if k in results]
    cells: dict[str, dict[str, str]] = {}
    totals: dict[str, tuple[float, float]] = {}
    batch: dict[str, str] = {}
    for name in kinds:
        table = (results[name] or {}).get("table") or {}
        kind = (table.get("kinds") or {}).get(name) or {}
        batch[name] = f"{kind.get('mean_batch_size', '?')} x {kind.get('rounds', 0)}"
        gpu_sum = host_sum = 0.0
        for stage, value in (kind.get("stages") or {}).items():
            gpu, host = value.get("gpu_ms"), value.get("host_ms") or 0.0
            cells.setdefault(stage, {})[name] = (
                f"{gpu:.3f} ({host:.3f})" if gpu is not None else f"- ({host:.3f})"
            )
            gpu_sum += gpu or 0.0
            host_sum += host
        totals[name] = (gpu_sum, host_sum)
    header = "| stage | " + " | ".join(kinds) + " |"
    lines = [header, "| --- |" + " ---: |" * len(kinds)]
    lines.append("| batch x rounds | " + " | ".join(batch[k] for k in kinds) + " |")
    for stage in [s for s in STAGE_ORDER if s in cells] + sorted(set(cells) - set(STAGE_ORDER)):
        lines.append(f"| {stage} | " + " | ".join(cells[stage].get(k, "") for k in kinds) + " |")
    lines.append("| round | " + " | ".join(f"{totals[k][0]:.3f} ({totals[k][1]:.3f})" for k in kinds) + " |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", required=True)
    parser.add_argument("--baseline", action="store_true", help="a server without a drafter: time its decode")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--output-len", type=int, default=1024)
    parser.add_argument("--warmup-s", type=float, default=4.0, help="load before the first setting")
    parser.add_argument("--limit-s", type=float, default=60.0, help="most seconds one setting may take")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = asyncio.run(measure(args))
    for line in table_lines(results):
        print(line)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
