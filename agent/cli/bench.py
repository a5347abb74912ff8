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
from agent.bench.engine import EngineError
from agent.bench.options import (
    DEFAULT_MIN_WINDOW_S,
    DEFAULT_REPEATS,
    BenchOptionError,
    BenchOptions,
    parse_concurrency,
)
from agent.bench.progress import TerminalProgress
from agent.bench.provenance import local_context
from agent.bench.report import compare_table, sweep_table, where_lines
from agent.bench.settle import WARMUP_OUTPUT_LEN
from agent.bench.store import atomic_write_json
from agent.bench.sweep import BenchCancelled, run_sweep
from agent.wire.bench_env import parse_environment

WINDOWS = (
    "Closed-loop load: at each level C streams, the next request sent as soon as one finishes. Each figure "
    "comes from steady-state windows: from the first completion once the engine holds C, whole cycles of "
    "one stream, at least --min-requests completed requests and --min-window-s seconds; the ramp is not "
    "measured. Every arm is measured --repeats times, and its figure is their mean with a 95 % interval. "
    "The expected duration is printed first, then a line per step with an ETA (a bar on a terminal)."
)
COMPARE = (
    " Each repeat is a pass over every level (on, off, adaptive at each), the next pass its mirror, forced through the "
    "live threshold, which is restored afterwards; the recommended threshold carries an interval and says "
    "where the arms could not be told apart."
)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", required=True, help="the SGLang server, e.g. http://127.0.0.1:30000")
    parser.add_argument("--concurrency", default="1,2,4,8,16,32,64,128,250", help="levels, comma-separated")
    parser.add_argument("--input-len", type=int, default=1024, help="prompt tokens per request")
    parser.add_argument("--output-len", type=int, default=256, help="output tokens per request (ignore_eos)")
    parser.add_argument("--chat", action="store_true", help="use /v1/chat/completions instead of /generate")
    parser.add_argument(
        "--repeats",
        type=int,
        default=DEFAULT_REPEATS,
        help=f"windows per arm and level: passes over all levels, each the mirror of the last (default {DEFAULT_REPEATS})",
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
    parser.add_argument("--json", dest="json_out", type=Path, default=None, help="write the result JSON here")
    parser.add_argument("--api-key-file", type=Path, default=None, help="file holding the server's API key")
    parser.add_argument(
        "--admin-api-key-file",
        type=Path,
        default=None,
        help="file holding the server's admin API key (for /set_internal_state and /flush_cache)",
    )


def register(subparsers: Any) -> None:
    bench = subparsers.add_parser("bench", help="benchmark an SGLang server (sweep, compare)")
    sub = bench.add_subparsers(dest="bench_command", metavar="SUBCOMMAND", required=True)
    sweep = sub.add_parser("sweep", help="closed-loop load at each concurrency level", description=WINDOWS)
    _common(sweep)
    sweep.set_defaults(handler=_handle, bench_mode="sweep")
    compare = sub.add_parser(
        "compare",
        help="speculation on / off / adaptive through the live threshold",
        description=WINDOWS + COMPARE,
    )
    _common(compare)
    compare.add_argument("--baseline-url", default=None, help="a server without a drafter, as a fourth arm")
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


def _options(args: argparse.Namespace) -> BenchOptions:
    for name, flag in (("input_len", "input-len"), ("output_len", "output-len"), ("min_requests", "min-requests"),
                       ("warmup_output_len", "warmup-output-len")):  # fmt: skip
        value = getattr(args, name)
        if value is not None and value < 1:
            raise BenchOptionError(flag, f"{value}: must be at least 1")
    if not 1 <= args.repeats <= 20:
        raise BenchOptionError("repeats", f"{args.repeats}: must be from 1 to 20")
    if not 0 <= args.min_window_s <= 3600:
        raise BenchOptionError("min-window-s", f"{args.min_window_s}: must be from 0 to 3600")
    if args.warmup_requests < 0:
        raise BenchOptionError("warmup-requests", f"{args.warmup_requests}: must be 0 or more")
    api_key = _read_key(args.api_key_file, "api-key-file")
    admin_api_key = _read_key(args.admin_api_key_file, "admin-api-key-file")
    return BenchOptions(
        concurrency=parse_concurrency(args.concurrency),
        min_requests=args.min_requests,
        input_len=args.input_len,
        output_len=args.output_len,
        chat=args.chat,
        repeats=args.repeats,
        min_window_s=args.min_window_s,
        warmup_requests=args.warmup_requests,
        warmup_output_len=args.warmup_output_len,
        api_key=api_key,
        admin_api_key=admin_api_key,
    )


def _read_key(path: Path | None, flag: str) -> str | None:
    if path is None:
        return None
    try:
        key = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise BenchOptionError(flag, f"{path}: cannot read it ({exc.strerror})") from None
    if not key:
        raise BenchOptionError(flag, f"{path}: the file is empty")
    return key


def _handle(args: argparse.Namespace) -> int:
    try:
        options = _options(args)
    except BenchOptionError as exc:
        print(f"agent bench: --{exc}", file=sys.stderr)
        return 2
    bar = TerminalProgress()
    try:
        if args.bench_mode == "sweep":
            result = asyncio.run(run_sweep(args.url, options, bar, context=local_context(args.url)))
        else:
            result = asyncio.run(
                run_compare(
                    args.url, options, bar, baseline_url=args.baseline_url, context=local_context(args.url)
                )
            )
    except (EngineError, BenchCancelled) as exc:
        bar.close()
        notes = "; ".join(getattr(exc, "__notes__", []))
        print(f"agent bench: failed: {exc}{'; ' + notes if notes else ''}", file=sys.stderr)
        return 1
    bar.close()
    if args.json_out is not None:
        atomic_write_json(args.json_out, result)
    table = sweep_table(result["levels"]) if args.bench_mode == "sweep" else compare_table(result)
    print(table)
    print("\n".join(where_lines(result)))
    if args.json_out is not None:
        print(f"result JSON: {args.json_out}")
    return 0


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
    print("\n".join(where_lines(result)))
    try:
        table = (
            compare_table(result)
            if result.get("kind", "compare") == "compare"
            else sweep_table(result["levels"])
        )
    except (KeyError, TypeError, ValueError) as exc:
        print(f"agent bench show: {path}: its levels lack a field the table needs ({exc})", file=sys.stderr)
        return 2
    print(table)
    return 0
