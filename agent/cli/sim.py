"""``agent sim``: serve the simulated SGLang 0.5.23 engine for a profile.

The API keys come from files (``--api-key-file``/``--admin-api-key-file``, else the profile's
``server.api_key_file``/``server.admin_api_key_file``), never from the command line, where other
users could read them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING

from agent.profile.store import ProfileError, load_profile
from agent.sglang.launch import LaunchError, read_key_file

if TYPE_CHECKING:
    from agent.sim.drafter_change import DrafterChange

# Start-up cost: `agent` imports every command module to build its parser, so what only this
# command needs (FastAPI, uvicorn, httpx, the simulator, the daemon) is imported inside the
# function that runs it; `agent --help` and the other commands do not load it.


def drafter_change_arg(text: str) -> DrafterChange:
    """``--drafter-change``'s type (``agent serve --sim-drafter-change`` too): the error says what is allowed."""
    from agent.sim.drafter_change import parse_drafter_change

    try:
        return parse_drafter_change(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "sim",
        help="serve a simulated SGLang 0.5.23 engine (no GPU) for a profile",
        description="Serve SGLang 0.5.23's HTTP surface from a calibrated model of the profile's deployment.",
    )
    parser.add_argument("--profile", required=True, help="profile TOML file")
    parser.add_argument("--port", type=int, required=True, help="TCP port (0 = any free port)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--speedup", type=float, default=1.0, help="modelled seconds per real second (default 1)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the acceptance and length draws")
    parser.add_argument(
        "--api-key-file", help="file holding the API key (default: profile server.api_key_file)"
    )
    parser.add_argument("--admin-api-key-file", help="file holding the admin API key")
    parser.add_argument(
        "--draft-acceptance",
        choices=("calibrated", "oracle", "random"),
        default="calibrated",
        help="how drafts are accepted: calibrated (the Kimi K2.5 EAGLE-3 drafters, default), oracle (every "
        "draft: accept length = steps + 1) or random (none: accept length 1), as agent smoke's tiny heads",
    )
    parser.add_argument(
        "--drafter-change",
        type=drafter_change_arg,
        metavar="AFTER_S:NAME",
        help="after AFTER_S modelled seconds, requests that arrive draw their acceptance from NAME: random "
        "or low (a drafter that stops matching: acceptance collapses, drafts are wasted), oracle (a looping "
        "client: every draft kept), calibrated; e.g. 60:random (docs/sim.md)",
    )
    parser.set_defaults(handler=run)

    whatif = subparsers.add_parser(
        "sim-whatif",
        help="what the modelled deployment delivers at given concurrencies (no server, no GPU)",
        description=(
            "Run the simulated engine's model on its virtual clock: a closed loop of clients per "
            "concurrency, as bench_serving measures it. Answers questions like 'what does threshold 16 "
            "do at concurrency 64?' in seconds."
        ),
    )
    whatif.add_argument("--profile", required=True, help="profile TOML file")
    what = whatif.add_mutually_exclusive_group(required=True)
    what.add_argument("--concurrency", help="comma-separated levels, e.g. 1,8,64")
    what.add_argument(
        "--workload",
        help="replay traffic that changes over time instead: a shipped workload's name (shifting) or a TOML "
        "file of phases (prompt and output length, acceptance, clients); see agent/sim/workload.py",
    )
    whatif.add_argument(
        "--threshold",
        type=int,
        help=(
            "live threshold to apply (0 = none; adaptive profiles only); default: the profile's "
            "speculation.threshold. The output says which one was used"
        ),
    )
    whatif.add_argument(
        "--thresholds",
        help="with --workload: several fixed thresholds side by side, e.g. 0,16,64,125 (0 = none)",
    )
    whatif.add_argument(
        "--autopilot",
        action="store_true",
        help="with --workload: also replay it with the speculation autopilot on (the profile's "
        "[speculation.autopilot] bounds), fed by the agent's own telemetry code",
    )
    whatif.add_argument("--input-len", type=int, default=1024)
    whatif.add_argument("--output-len", type=int, default=256)
    whatif.add_argument(
        "--requests", type=int, help="requests per level (default 4 x concurrency, at least 32)"
    )
    whatif.add_argument("--seed", type=int, default=0)
    whatif.add_argument("--json", action="store_true", help="print JSON instead of a table")
    whatif.set_defaults(handler=run_whatif)


def run(args: argparse.Namespace) -> int:
    from agent.sim.server import run_sim

    if not 0 <= args.port <= 65535:
        print(f"agent sim: --port must be between 0 and 65535, got {args.port}", file=sys.stderr)
        return 2
    if not args.speedup > 0:
        print(f"agent sim: --speedup must be positive, got {args.speedup}", file=sys.stderr)
        return 2
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        print(f"agent sim: {exc}", file=sys.stderr)
        return 2
    try:
        key_file = args.api_key_file or profile.server.api_key_file
        admin_file = args.admin_api_key_file or profile.server.admin_api_key_file
        api_key = read_key_file(key_file) if key_file else None
        admin_key = read_key_file(admin_file) if admin_file else None
    except LaunchError as exc:
        print(f"agent sim: {exc}", file=sys.stderr)
        return 2

    async def serve() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            async with run_sim(
                profile,
                host=args.host,
                port=args.port,
                speedup=args.speedup,
                seed=args.seed,
                api_key=api_key,
                admin_api_key=admin_key,
                draft_acceptance=args.draft_acceptance,
                drafter_change=args.drafter_change,
            ) as sim:
                cfg = sim.server.config
                print(
                    f"agent sim: {profile.identity.name} on {sim.url} (speedup {args.speedup:g}, "
                    f"speculation {cfg.mode}, KV pool {cfg.pool_tokens} tokens, "
                    f"max running {cfg.max_running_requests}, draft acceptance {args.draft_acceptance})",
                    flush=True,
                )
                for note in cfg.notes:
                    print(f"agent sim: {note}", flush=True)
                if args.drafter_change is not None:
                    change = args.drafter_change
                    print(
                        f"agent sim: drafter changes to {change.name} after {change.after_s:g} s", flush=True
                    )
                await stop.wait()
        except OSError as exc:
            print(
                f"agent sim: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr
            )
            return 1
        return 0

    return asyncio.run(serve())


def run_whatif(args: argparse.Namespace) -> int:
    if args.workload is not None:
        return run_workload(args)

    from agent.sim.config import sim_config
    from agent.sim.engine import Engine
    from agent.sim.loadmodel import run_closed_loop

    try:
        levels = [int(v) for v in args.concurrency.split(",") if v.strip()]
    except ValueError:
        levels = []
    if not levels or any(c < 1 or c > 10_000 for c in levels):
        print(
            f"agent sim-whatif: --concurrency must list levels between 1 and 10000, got {args.concurrency!r}",
            file=sys.stderr,
        )
        return 2
    if args.input_len < 1 or args.output_len < 1:
        print("agent sim-whatif: --input-len and --output-len must be at least 1", file=sys.stderr)
        return 2
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        print(f"agent sim-whatif: {exc}", file=sys.stderr)
        return 2
    config = sim_config(profile)
    rows = []
    threshold: int | None = None
    for level in levels:
        engine = Engine(config, seed=args.seed)
        if args.threshold is not None:
            if engine.controller is None:
                print(
                    "agent sim-whatif: --threshold needs a profile with adaptive speculation", file=sys.stderr
                )
                return 2
            reason = engine.controller.check_threshold(args.threshold)
            if reason is not None:
                print(f"agent sim-whatif: --threshold: {reason}", file=sys.stderr)
                return 2
            engine.controller.set_threshold(args.threshold)
        # Without --threshold the engine starts as the profile launches it: its adaptive config's
        # 0-step slot is the profile's threshold. What the engine runs with is what is reported.
        threshold = engine.controller.threshold if engine.controller is not None else None
        result = run_closed_loop(
            config, level, args.input_len, args.output_len, num_requests=args.requests, engine=engine
        )
        rows.append(asdict(result))
    source = "option" if args.threshold is not None else ("profile" if threshold is not None else "none")
    used = threshold_words(threshold, source, config.mode)
    if args.json:
        print(
            json.dumps(
                {
                    "profile": profile.identity.name,
                    "threshold": threshold,
                    "threshold_source": source,
                    "threshold_text": used,
                    "levels": rows,
                }
            )
        )
        return 0
    print(f"{profile.identity.name}: {args.input_len} in / {args.output_len} out, modelled; {used}")
    print(
        f"{'concurrency':>11} {'output tok/s':>12} {'mean running':>12} {'accept len':>10} {'retracted':>9}"
    )
    for row in rows:
        accept = f"{row['accept_length']:.2f}" if row["accept_length"] is not None else "-"
        print(
            f"{row['concurrency']:>11} {row['output_tok_s']:>12.1f} {row['mean_running']:>12.1f} "
            f"{accept:>10} {row['retractions']:>9}"
        )
    return 0


def threshold_words(threshold: int | None, source: str, mode: str) -> str:
    """Which speculation threshold the what-if ran with, and where it came from, in words."""
    if threshold is None:
        if mode == "none":
            return "no speculation (the profile has no drafter)"
        return "no live threshold (static speculation: it speculates at every batch size)"
    origin = "--threshold" if source == "option" else "the profile's speculation.threshold"
    if threshold == 0:
        if source != "option":
            return "threshold 0 (the profile sets none: speculate at every batch size)"
        return f"threshold 0 ({origin}: speculate at every batch size)"
    return f"threshold {threshold} ({origin}: no speculation at {threshold} running requests or more)"


def run_workload(args: argparse.Namespace) -> int:
    """``sim-whatif --workload``: fixed thresholds (and the autopilot) side by side on the same traffic."""

    from agent.sim.config import sim_config
    from agent.sim.workload import WorkloadError, load_workload
    from agent.whatif.autopilot import Run, run_autopilot, run_fixed

    try:
        workload = load_workload(args.workload)
        profile = load_profile(args.profile)
    except (WorkloadError, ProfileError) as exc:
        print(f"agent sim-whatif: {exc}", file=sys.stderr)
        return 2
    try:
        thresholds = [int(v) for v in (args.thresholds or "").split(",") if v.strip()]
    except ValueError:
        print(
            f"agent sim-whatif: --thresholds must list whole numbers, got {args.thresholds!r}",
            file=sys.stderr,
        )
        return 2
    if args.threshold is not None:
        thresholds.insert(0, args.threshold)
    adaptive = sim_config(profile).mode == "adaptive"
    if (thresholds or args.autopilot) and not adaptive:
        print(
            "agent sim-whatif: thresholds and the autopilot need a profile with adaptive speculation",
            file=sys.stderr,
        )
        return 2
    if any(t < 0 for t in thresholds):
        print("agent sim-whatif: a threshold is 0 (none) or more", file=sys.stderr)
        return 2
    fixed: list[int | None] = list(thresholds) if thresholds else [None]
    runs: list[Run] = [run_fixed(profile, workload, t, seed=args.seed) for t in fixed]
    if args.autopilot:
        runs.append(run_autopilot(profile, workload, seed=args.seed))

    def phases(run: Run) -> list[float]:
        return [
            round(t / p.seconds, 1) for t, p in zip(run.result.phase_tokens, workload.phase, strict=False)
        ]

    if args.json:
        rows = [
            {
                "setting": run.label,
                "threshold": run.threshold,
                "output_tokens": run.tokens,
                "output_tok_s": round(run.result.output_tok_s, 1),
                "phase_tok_s": phases(run),
                "changes": run.record.engine_changes if run.record else None,
            }
            for run in runs
        ]
        print(json.dumps({"profile": profile.identity.name, "workload": workload.name, "runs": rows}))
        return 0
    minutes = workload.seconds / 60
    print(
        f"{profile.identity.name}: workload {workload.name}, {minutes:g} modelled minutes in {len(workload.phase)} phases"
    )
    print(f"{'setting':>24} {'output tokens':>13} {'tok/s':>8}   tok/s per phase")
    for run in runs:
        shown = " ".join(f"{v:7.1f}" for v in phases(run))
        changes = f"   ({run.record.engine_changes} changes of the live setting)" if run.record else ""
        print(f"{run.label:>24} {run.tokens:>13} {run.result.output_tok_s:>8.1f}   {shown}{changes}")
    return 0
