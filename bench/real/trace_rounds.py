"""A torch profiler trace of a steady decode on a live SGLang, for ``trace_gaps.py``.

The round timer (``round_timing.py``) times what happens inside one round; this records what
happens between rounds too. Keeps ``--concurrency`` long streaming requests on one engine, puts a
speculative engine at 0 steps on patch 03's plain path (live threshold 1) or leaves a server
without a drafter as it is (``--baseline``), lets the batch settle, and asks SGLang's own profiler
(``/start_profile``: CPU and GPU activity, no shapes, and no Python frames unless ``--with-stack``,
so that the host is slowed as little as the profiler allows) for ``--steps`` forward steps. The trace lands in ``--out`` as
``<name>-<id>-TP-0.trace.json.gz``; the original threshold and path are put back.

    python -m bench.real.trace_rounds --url http://127.0.0.1:30021 --name plain --out DIR \\
        [--baseline] [--concurrency 64] [--steps 40] [--unique-prompts --input-len 256 --output-len 128]

``--out`` must be writable by the engine's process (it writes the file itself).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import httpx

from agent.sglang.client import EngineError
from agent.sglang.live_control import ZERO_STEP_PLAIN
from bench.real.round_timing import NEVER_SPECULATE, LoadShape, under_load


def newest_trace(out: Path, name: str, since: float) -> Path | None:
    """The newest complete trace of this name written since ``since`` (its size no longer moves)."""
    found = [p for p in out.glob(f"{name}-*.trace.json.gz") if p.stat().st_mtime >= since]
    if not found:
        return None
    path = max(found, key=lambda p: p.stat().st_mtime)
    size = path.stat().st_size
    time.sleep(0.5)
    return path if size > 0 and path.stat().st_size == size else None


def shape_of(args: argparse.Namespace) -> LoadShape:
    """The load's requests: ``--unique-prompts`` is the compare's shape (every arrival prefills)."""
    unique = bool(getattr(args, "unique_prompts", False))
    stagger = getattr(args, "stagger_s", None)
    return LoadShape(
        output_len=args.output_len,
        input_len=getattr(args, "input_len", 256),
        unique=unique,
        stagger_s=stagger if stagger is not None else (1.0 if unique else 0.0),
    )


async def record(args: argparse.Namespace) -> Path:
    args.out.mkdir(parents=True, exist_ok=True)
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(60.0, read=None)) as client,
        under_load(client, args.url, args.concurrency, shape_of(args), args.baseline) as session,
    ):
        engine = session.engine
        if session.live is not None:
            await engine.set_live(adaptive_spec_threshold=NEVER_SPECULATE)
            await engine.set_zero_step_path(ZERO_STEP_PLAIN)
        await asyncio.sleep(args.warmup_s)
        since = time.time() - 1
        await engine.start_profile(str(args.out.resolve()), args.steps, args.name, args.with_stack)
        until = time.monotonic() + args.limit_s
        while time.monotonic() < until:
            await asyncio.sleep(0.5)
            path = await asyncio.to_thread(newest_trace, args.out, args.name, since)
            if path is not None:
                return path
        raise SystemExit(f"no trace named {args.name}-*.trace.json.gz in {args.out} after {args.limit_s:g} s")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", required=True)
    parser.add_argument("--name", required=True, help="the trace file's prefix (letters, digits, '-')")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--baseline", action="store_true", help="a server without a drafter: trace it as it is"
    )
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument(
        "--with-stack",
        action="store_true",
        help="record Python frames too: names the functions, slows the host (times are then not the engine's)",
    )
    parser.add_argument("--output-len", type=int, default=2400)
    parser.add_argument("--input-len", type=int, default=256)
    parser.add_argument(
        "--unique-prompts",
        action="store_true",
        help="token-id prompts drawn per request, as agent bench compare sends them: every arrival "
        "prefills --input-len tokens (without it the text prompt hits the prefix cache)",
    )
    parser.add_argument(
        "--stagger-s",
        type=float,
        default=None,
        help="spread the streams' first requests over this many seconds (default 1 with --unique-prompts, "
        "else 0), so that arrivals and finishes do not come in one wave",
    )
    parser.add_argument("--warmup-s", type=float, default=6.0, help="load before the trace starts")
    parser.add_argument("--limit-s", type=float, default=90.0, help="most seconds to wait for the trace file")
    args = parser.parse_args()
    try:
        path = asyncio.run(record(args))
    except EngineError as exc:
        raise SystemExit(str(exc)) from None
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
