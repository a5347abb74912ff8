"""``agent bench sweep|compare|show``: closed-loop concurrency sweeps, the speculation comparison,
and a stored result read back (where it ran, its table)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent.bench.compare import run_compare
from agent.bench.drain import DEFAULT_DRAIN_WAIT_S
from agent.bench.engine import EngineError
from agent.bench.open_loop import rate_table, run_rates
from agent.bench.options import DEFAULT_MIN_WINDOW_S, DEFAULT_REPEATS, BenchOptionError
from agent.bench.progress import TerminalProgress
from agent.bench.provenance import local_context
from agent.bench.report import compare_table, sweep_table, where_lines
from agent.bench.settle import WARMUP_OUTPUT_LEN
from agent.bench.stopping import DEFAULT_MAX_WINDOWS, DEFAULT_MIN_WINDOWS
from agent.bench.store import atomic_write_json
from agent.bench.sweep import BenchCancelled, run_sweep
from agent.cli.bench_agent import Announcer, cancel_run
from agent.cli.bench_flags import options_of
from agent.cli.status import add_connection_args
from agent.sglang import paths
from agent.wire.bench_env import parse_environment
from agent.wire.bench_result import BenchResult

# Start-up cost: `agent` imports every command module to build its parser, so what only this
# command needs (FastAPI, uvicorn, httpx, the simulator, the daemon) is imported inside the
# function that runs it; `agent --help` and the other commands do not load it.

WINDOWS = (
    "Closed-loop load: at each level C streams, the next request sent as soon as one finishes. Each figure "
    "comes from steady-state windows: from the first completion once the engine holds C, whole cycles of "
    "one stream, at least --min-requests completed requests and --min-window-s seconds; the ramp is not "
    "measured. Every arm is measured --repeats times (or as --until and --budget say), and its figure is their mean with a 95 % interval. "
    "The expected duration is printed first, then a line per step with an ETA (a bar on a terminal)."
)
COMPARE = (
    " Each repeat is a pass over every level (on, off, adaptive at each), the next pass its mirror, forced through the "
    "live threshold, which is restored afterwards; the recommended threshold carries an interval and says "
    "where the arms could not be told apart. --arms measures some arms only."
)
STOPPING = (
    " With --until (a bound on the intervals) and/or --budget (the run's time), every arm first gets "
    "--min-windows windows at every level, then a level whose intervals are not all within the bound gets "
    "one more window of every arm per pass, until they are, the budget would be overrun, or it has "
    "--max-windows; the result and the table say which, per level, with the interval reached per arm."
)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", required=True, help="the SGLang server, e.g. http://127.0.0.1:30000")
    parser.add_argument("--concurrency", default="1,2,4,8,16,32,64,128,250", help="levels, comma-separated")
    parser.add_argument("--input-len", type=int, default=1024, help="prompt tokens per request")
    parser.add_argument("--output-len", type=int, default=256, help="output tokens per request (ignore_eos)")
    parser.add_argument(
        "--chat", action="store_true", help=f"use {paths.CHAT_COMPLETIONS} instead of {paths.GENERATE}"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help=f"a fixed number of windows per arm and level: passes over all levels, each the mirror of the "
        f"last (default {DEFAULT_REPEATS}; not with --until or --budget)",
    )
    parser.add_argument(
        "--until",
        default=None,
        metavar="BOUND",
        help="keep adding windows at a level until every arm's 95 %% interval is within ± this of its "
        "figure, e.g. 4%% (or 0.04); see --budget, --min-windows, --max-windows",
    )
    parser.add_argument(
        "--budget",
        default=None,
        metavar="DURATION",
        help="the whole run's time budget from its start (e.g. 1200, 20m, 1h30m): a level gets no more "
        "windows once its next pass would overrun it; with or without --until",
    )
    parser.add_argument(
        "--min-windows",
        type=int,
        default=None,
        help=f"with --until/--budget: windows of every arm at every level before any is judged (default {DEFAULT_MIN_WINDOWS})",
    )
    parser.add_argument(
        "--max-windows",
        type=int,
        default=None,
        help=f"with --until/--budget: the most windows of every arm a level takes (default {DEFAULT_MAX_WINDOWS})",
    )
    parser.add_argument(
        "--min-window-s",
        "--min-level-seconds",
        dest="min_window_s",
        type=float,
        default=DEFAULT_MIN_WINDOW_S,
        help=f"each steady-state window lasts at least this long (default {DEFAULT_MIN_WINDOW_S:g} s)",
    )
    parser.add_argument(
        "--min-requests",
        "--requests-per-level",
        dest="min_requests",
        type=int,
        default=None,
        help="completed requests each window must hold (default: two per stream, at least 8)",
    )
    parser.add_argument(
        "--warmup-requests",
        type=int,
        default=0,
        help="an extra batch of short requests before each loop (default 0: each loop's first batch is its warm-up)",
    )
    parser.add_argument(
        "--warmup-output-len",
        type=int,
        default=WARMUP_OUTPUT_LEN,
        help=f"output tokens of each warm-up request (default {WARMUP_OUTPUT_LEN})",
    )
    parser.add_argument(
        "--dataset",
        default="random",
        metavar="random|shared-prefix|PATH",
        help="where the prompts and lengths come from: random (default: unique random prompts), shared-prefix "
        "(--prefix-groups system prompts of --prefix-len tokens shared by the requests, as production's prefix "
        "cache sees them), or a file: ShareGPT JSON, or JSONL of prompt/messages lines with an optional "
        "output_len (capped by --input-len/--output-len); a dataset shipped with the agent by its name "
        "(chat-small.jsonl). The result records it (docs/bench.md)",
    )
    parser.add_argument(
        "--random-range-ratio",
        type=float,
        default=1.0,
        help="--dataset random: each request's lengths drawn from [ratio x length, length] of --input-len and "
        "--output-len, as bench_serving's (default 1: every request the same)",
    )
    parser.add_argument(
        "--request-rate",
        default=None,
        metavar="R1,R2,...",
        help="sweep only: open-loop levels, requests a second (inf: all at once), instead of --concurrency; "
        "each window is --min-requests requests (default 32) sent on the schedule, --repeats windows a rate",
    )
    parser.add_argument(
        "--burstiness",
        type=float,
        default=None,
        help="with --request-rate: the gamma shape of the gaps (1, the default: Poisson; below 1: bursts)",
    )
    parser.add_argument(
        "--prefix-groups", type=int, default=8, help="--dataset shared-prefix: system prompts"
    )
    parser.add_argument(
        "--prefix-len", type=int, default=512, help="--dataset shared-prefix: tokens of each system prompt"
    )
    parser.add_argument("--json", dest="json_out", type=Path, default=None, help="write the result JSON here")
    parser.add_argument("--api-key-file", type=Path, default=None, help="file holding the server's API key")
    parser.add_argument(
        "--admin-api-key-file",
        type=Path,
        default=None,
        help=f"file holding the server's admin API key (for {paths.SET_INTERNAL_STATE} and {paths.FLUSH_CACHE})",
    )
    parser.add_argument(
        "--drain-wait-s",
        type=float,
        default=DEFAULT_DRAIN_WAIT_S,
        help="before the first request, wait up to this long for the engine to finish other clients' "
        f"requests (default {DEFAULT_DRAIN_WAIT_S:g}; 0: start at once)",
    )
    add_connection_args(parser)  # the agent on this host that serves --url hears the run start and end


def register(subparsers: Any) -> None:
    bench = subparsers.add_parser("bench", help="benchmark an SGLang server (sweep, compare, cancel)")
    sub = bench.add_subparsers(dest="bench_command", metavar="SUBCOMMAND", required=True)
    cancel = sub.add_parser(
        "cancel",
        help="cancel the benchmark the agent runs (as the console's Bench screen does)",
        description="Cancel a benchmark the agent runs: its requests in flight are cut and the live threshold "
        "it forced is put back; the agent audits it. Without BENCH_ID: the one running now.",
    )
    cancel.add_argument("bench_id", nargs="?", help="the run's id (default: the running one)")
    add_connection_args(cancel)
    cancel.add_argument("--yes", "-y", action="store_true", help="cancel without asking (scripts)")
    cancel.add_argument("--operator", default=None, help="who asks, for the audit (default: this user)")
    cancel.set_defaults(handler=cancel_run)
    sweep = sub.add_parser(
        "sweep", help="closed-loop load at each concurrency level", description=WINDOWS + STOPPING
    )
    _common(sweep)
    sweep.set_defaults(handler=_handle, bench_mode="sweep")
    compare = sub.add_parser(
        "compare",
        help="speculation on / off / adaptive through the live threshold",
        description=WINDOWS + COMPARE + STOPPING,
    )
    _common(compare)
    compare.add_argument("--baseline-url", default=None, help="a server without a drafter, as a fourth arm")
    compare.add_argument(
        "--arms",
        default=None,
        help="the arms to measure, comma-separated, of on, off, adaptive, baseline (baseline needs "
        "--baseline-url); default: all of them (e.g. off,baseline: what 'off' costs, nothing else)",
    )
    compare.set_defaults(handler=_handle, bench_mode="compare")
    show = sub.add_parser(
        "show",
        help="a stored result: where it ran (GPUs, driver, CUDA, SGLang, attention backend, model, profile) and its table",
        description="Print a result written by --json (or a run the agent stored): the hardware and software "
        "it ran on, what it could not know and why, then its table. Results from before this record read "
        "'not recorded'.",
    )
    show.add_argument("result", type=Path, help="a result JSON file")
    show.add_argument(
        "--json", dest="as_json", action="store_true", help="print only the environment, as JSON"
    )
    show.set_defaults(handler=_show)


def _handle(args: argparse.Namespace) -> int:
    try:
        options = options_of(args)
    except BenchOptionError as exc:
        print(f"agent bench: --{exc}", file=sys.stderr)
        return 2
    bar = TerminalProgress()
    announce = Announcer.for_engine(args, args.url)
    announce("running")
    kept: dict[str, Any] = {}
    try:
        if args.bench_mode == "sweep" and options.request_rates:
            result = asyncio.run(run_rates(args.url, options, bar, context=local_context(args.url)))
        elif args.bench_mode == "sweep":
            result = asyncio.run(
                run_sweep(args.url, options, bar, context=local_context(args.url), keep=kept.update)
            )
        else:
            result = asyncio.run(
                run_compare(args.url, options, bar, baseline_url=args.baseline_url,
                            context=local_context(args.url), keep=kept.update)
            )  # fmt: skip
    except (EngineError, BenchCancelled) as exc:
        bar.close()
        notes = "; ".join(getattr(exc, "__notes__", []))
        print(f"agent bench: failed: {exc}{'; ' + notes if notes else ''}", file=sys.stderr)
        announce("failed", f"{exc}")
        _cut_short(args, kept, "failed", f"{exc}")
        return 1
    except KeyboardInterrupt:
        bar.close()
        announce("cancelled", "interrupted (Ctrl-C) where it ran")
        print("agent bench: cancelled", file=sys.stderr)
        _cut_short(args, kept, "cancelled", "interrupted (Ctrl-C)")
        return 130
    bar.close()
    announce("finished")
    _report(args, BenchResult.model_validate(result), result)
    return 0


def _report(args: argparse.Namespace, typed: BenchResult, raw: dict[str, Any]) -> None:
    """The table (``raw``: the result as the run built it, for an open-loop run's own table), where it
    ran, and the ``--json`` file; a partial run says first what it holds."""
    if args.json_out is not None:
        atomic_write_json(args.json_out, typed.stored())
    if typed.partial is not None:
        print(typed.partial.words)
    rule = typed.stopping.rule if typed.stopping is not None else None
    rule_words = None if rule is None else rule.words
    table = sweep_table(typed.levels, rule_words) if args.bench_mode == "sweep" else compare_table(typed)
    print(rate_table(raw["levels"]) if "arrivals" in raw else table)
    print("\n".join(where_lines(typed)))
    if typed.workload is not None:
        print(f"workload: {typed.workload.words()}")
    if args.json_out is not None:
        print(f"result JSON: {args.json_out}")


def _cut_short(args: argparse.Namespace, kept: dict[str, Any], state: str, error: str) -> None:
    """A run cut short keeps the windows it completed: printed and written to ``--json``, marked partial."""
    if not kept.get("levels"):
        return
    try:
        typed = BenchResult.model_validate({**kept, "state": state, "error": error})
    except ValidationError as exc:  # a builder's bug: said, not hidden behind the cut
        print(f"agent bench: the windows kept do not fit a result: {exc.errors()[0]['msg']}", file=sys.stderr)
        return
    _report(args, typed, kept)


def _show(args: argparse.Namespace) -> int:
    path: Path = args.result
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        print(f"agent bench show: {path}: cannot read it ({exc.strerror})", file=sys.stderr)
        return 2
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(f"agent bench show: {path}: not JSON ({exc})", file=sys.stderr)
        return 2
    if not isinstance(result, dict) or not isinstance(result.get("levels"), list):
        print(
            f"agent bench show: {path}: not a benchmark result (an object with a 'levels' list, as "
            "agent bench sweep|compare --json writes)",
            file=sys.stderr,
        )
        return 2
    try:
        env = parse_environment(result)
    except ValidationError as exc:
        print(
            f"agent bench show: {path}: its 'environment' is malformed: {exc.errors()[0]['msg']}",
            file=sys.stderr,
        )
        return 2
    if args.as_json:
        print(json.dumps(None if env is None else env.model_dump(), indent=2))
        return 0
    try:
        typed = BenchResult.model_validate(result)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        print(f"agent bench show: {path}: {where}: {first['msg']}", file=sys.stderr)
        return 2
    print("\n".join(where_lines(typed)))
    if typed.workload is not None:
        print(f"workload: {typed.workload.words()}")
    rule = typed.stopping.rule if typed.stopping is not None else None
    rule_words = None if rule is None else rule.words
    print(
        compare_table(typed)
        if (typed.kind or "compare") == "compare"
        else sweep_table(typed.levels, rule_words)
    )
    return 0
