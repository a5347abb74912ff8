"""``agent smoke --profile P``: the three-minute check of the real engine before loading a 600 GB model.

With the stack's own python it writes tiny local models (a Llama target whose greedy token is always
777, an "oracle" EAGLE-3 head whose every draft is accepted and a "random" one), derives a one-GPU
tiny profile from P (same stack, speculation settings, adaptive threshold and live steps, page size,
attention backend) and starts it through the same supervisor as `agent serve`, once per head, both
at the same time on one GPU (--draft both). It then checks, printing a table with timings: ready
within the start-up limit (an engine that dies is reported with its log's error); the agent's own
snapshot reads the real /metrics and /server_info (speculation configured, live state present);
threshold 1 -> accept length ~1.0; threshold 0 -> ~steps+1; each live step k -> ~k+1; release
(-1) -> ~steps+1 again; an unbuilt step and a wrong type are refused and change nothing; with the
random head ~1. Accept length is measured per request from /generate's meta_info. The engines are
stopped at the end, also on failure, Ctrl-C and SIGTERM. Exit 0 when every check passed, 1 when one
failed, 2 when the smoke could not run. --engine sim runs the same checks against the simulated
engine (its --draft-acceptance oracle/random stand in for the two heads; no GPU, no models).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from pathlib import Path

from agent.profile import ProfileError, load_profile
from agent.smoke.checks import CheckRow

# Start-up cost: `agent` imports every command module to build its parser, so what only this
# command needs (FastAPI, uvicorn, httpx, the simulator, the daemon) is imported inside the
# function that runs it; `agent --help` and the other commands do not load it.

COLUMNS = (("engine", 7), ("check", 52), ("expected", 30), ("measured", 40), ("result", 6), ("time", 8))


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "smoke",
        help="check the real engine with tiny local models: start-up, telemetry, live threshold and steps",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--profile", required=True, type=Path, help="the profile whose stack and speculation to check"
    )
    p.add_argument(
        "--draft", choices=("oracle", "random", "both"), default="both", help="which EAGLE-3 head(s)"
    )
    p.add_argument(
        "--engine", choices=("sglang", "sim"), default="sglang", help="real SGLang or the simulator"
    )
    p.add_argument(
        "--startup-timeout", type=float, default=600.0, metavar="S", help="ready within (default 600)"
    )
    p.add_argument(
        "--gpu", type=int, help="the GPU index to run on (CUDA_VISIBLE_DEVICES; default: SGLang's first)"
    )
    p.add_argument(
        "--preset",
        choices=("tiny", "heavy", "big"),
        default="tiny",
        help="model shape (heavy: hidden 2048, 24 layers; big: Llama-3-8B's shape, ~15 GB)",
    )
    p.add_argument(
        "--tp",
        type=int,
        default=1,
        metavar="N",
        help="tensor parallel over the first N GPUs (the tiny models' heads must be divisible by N)",
    )
    p.add_argument("--heads", type=int, help="attention heads (so that a TP size divides them)")
    p.add_argument("--kv-heads", type=int, help="KV heads")
    p.add_argument("--work-dir", type=Path, help="models, engine logs, reports (default <state-dir>/smoke)")
    p.add_argument(
        "--sim-speedup", type=float, default=10.0, help="--engine sim: modelled seconds per second"
    )
    p.set_defaults(handler=run)


def _say(line: str) -> None:
    print(line, flush=True)


def _cell(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render_table(rows: list[CheckRow]) -> list[str]:
    header = "  ".join(f"{name:<{width}}" for name, width in COLUMNS)
    lines = [header, "-" * len(header)]
    for row in rows:
        values = (
            row.engine,
            row.check,
            row.expected,
            row.measured,
            "ok" if row.ok else "FAIL",
            f"{row.seconds:.1f} s",
        )
        lines.append("  ".join(f"{_cell(v, w):<{w}}" for v, (_, w) in zip(values, COLUMNS, strict=True)))
        for value, (name, width) in zip(values, COLUMNS, strict=True):
            if len(value) > width:  # a cell cut to its column is given whole below its row
                lines.append(f"{'':<9}{name}: {value}")
        if row.detail and (not row.ok or "refused" in row.measured):
            lines.append(f"{'':<9}why: {row.detail}")
    return lines


def run(args: argparse.Namespace) -> int:
    from agent.serve.paths import default_state_dir
    from agent.smoke.checks import Report
    from agent.smoke.run import SmokeError, SmokeOptions, run_smoke
    from agent.smoke.shapes import shape_for

    try:
        profile = load_profile(args.profile)
        shape = shape_for(args.preset, heads=args.heads, kv_heads=args.kv_heads)
    except (ProfileError, ValueError) as exc:
        print(f"agent smoke: {exc}", file=sys.stderr)
        return 2
    if args.startup_timeout <= 0 or args.sim_speedup <= 0 or args.tp < 1:
        print("agent smoke: --startup-timeout, --sim-speedup and --tp must be positive", file=sys.stderr)
        return 2
    opts = SmokeOptions(
        profile=profile,
        engine=args.engine,
        drafts=("oracle", "random") if args.draft == "both" else (args.draft,),
        work_dir=(args.work_dir or default_state_dir() / "smoke").expanduser().absolute(),
        shape=shape,
        preset=args.preset,
        startup_timeout_s=args.startup_timeout,
        gpu=args.gpu,
        sim_speedup=args.sim_speedup,
        tp_size=args.tp,
    )

    def row_done(row: CheckRow) -> None:
        mark = "ok  " if row.ok else "FAIL"
        _say(
            f"[{mark}] {row.engine}: {row.check}: {row.measured} (expected {row.expected}; {row.seconds:.1f} s)"
        )

    report = Report(on_row=row_done)
    started = time.monotonic()
    _say(f"agent smoke: {args.engine} engine, profile {profile.identity.name}, draft(s) {', '.join(opts.drafts)}, "
         f"{args.preset} models, work dir {opts.work_dir}")  # fmt: skip

    async def main() -> int:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        stopping: list[int] = []

        def on_signal(sig: int) -> None:
            if not stopping and task is not None:
                stopping.append(sig)
                _say(f"agent smoke: {signal.Signals(sig).name}: stopping the engines ...")
                task.cancel()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal, sig)
        try:
            await run_smoke(opts, _say, report)
        except asyncio.CancelledError:
            _say("agent smoke: interrupted; the engines are stopped")
            return 130
        except SmokeError as exc:
            print(f"agent smoke: {exc}", file=sys.stderr)
            return 2
        return 0

    code = asyncio.run(main())
    if report.rows:
        order = {draft: i for i, draft in enumerate(opts.drafts)}
        rows = sorted(report.rows, key=lambda r: order.get(r.engine, 99))  # stable: each engine's own order
        for line in render_table(rows):
            _say(line)
    failed = sum(1 for r in report.rows if not r.ok)
    took = time.monotonic() - started
    if code == 0 and report.ok:
        _say(f"agent smoke: PASSED ({len(report.rows)} checks) in {took:.0f} s")
        return 0
    if code == 0:
        _say(f"agent smoke: FAILED ({failed} of {len(report.rows)} checks) in {took:.0f} s")
        return 1
    return code
