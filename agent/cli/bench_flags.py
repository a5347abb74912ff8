"""``agent bench``'s flags as the one request a benchmark takes (``agent.wire.bench_request``).

The command runs the benchmark itself (straight at the engine), yet what it may be asked is what the
agent's ``POST /v1/bench`` and the console's Bench screen may ask: the flags become a
``BenchRequest``, checked by the same rules, and a refusal is said with the flag's name
(``--budget: a number of seconds from 10 to 86400 (24 h)``). The text forms only a command line
has (``4%``, ``20m``, ``1,2,4``) are read here; their ranges are the request's.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from agent.bench.arrivals import parse_rates
from agent.bench.options import BenchOptionError
from agent.bench.stopping import StopRuleError, parse_budget, parse_until
from agent.bench.workload import resolve
from agent.wire.bench import BenchOptions
from agent.wire.bench_request import BenchRequest, field_words

FLAGS = {"budget_s": "budget", "baseline_url": "baseline-url", "request_rates": "request-rate"}
"""A request field whose flag is not its name with dashes."""


def flag_of(field: str) -> str:
    return FLAGS.get(field, field.replace("_", "-"))


def _levels(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise BenchOptionError(
            "concurrency", "not a comma-separated list of whole numbers, e.g. 1,2,4,8"
        ) from None


def _stop_field(parse: Callable[[str], float], text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return parse(text)
    except StopRuleError as exc:
        raise BenchOptionError(exc.field_name, str(exc).split(": ", 1)[1]) from None


def request_of(args: argparse.Namespace) -> BenchRequest:
    """The request the flags make; ``BenchOptionError`` names the flag that breaks a rule."""
    arms = getattr(args, "arms", None)
    given = {
        "mode": args.bench_mode,
        "concurrency": _levels(args.concurrency),
        "min_requests": args.min_requests,
        "input_len": args.input_len,
        "output_len": args.output_len,
        "chat": args.chat,
        "min_window_s": args.min_window_s,
        "warmup_requests": args.warmup_requests,
        "warmup_output_len": args.warmup_output_len,
        "drain_wait_s": args.drain_wait_s,
        "until": _stop_field(parse_until, args.until),
        "budget_s": _stop_field(parse_budget, args.budget),
        "repeats": args.repeats,
        "min_windows": args.min_windows,
        "max_windows": args.max_windows,
        "baseline_url": getattr(args, "baseline_url", None),
        "arms": None if arms is None else [a.strip() for a in arms.split(",") if a.strip()],
        "workload": _workload(args),
        "request_rates": None if args.request_rate is None else parse_rates(args.request_rate),
        "burstiness": args.burstiness,
    }
    try:
        return BenchRequest.model_validate(
            {k: v for k, v in given.items() if v is not None}, context={"paths": True}
        )
    except ValidationError as exc:
        field, words = field_words(exc.errors(), flag_of).split(": ", 1)
        for name in ("until", "budget_s", "min_windows", "max_windows", "baseline_url"):
            words = words.replace(name, f"--{flag_of(name)}")
        raise BenchOptionError(field, words) from None


def _workload(args: argparse.Namespace) -> dict[str, object]:
    """``--dataset random|shared-prefix|PATH`` and its knobs, as the request's ``workload``."""
    dataset = args.dataset
    kind = dataset if dataset in ("random", "shared-prefix") else "dataset"
    spec: dict[str, object] = {"kind": kind, "range_ratio": args.random_range_ratio}
    if kind == "dataset":
        spec["dataset"] = dataset
    if kind == "shared-prefix":
        spec |= {"groups": args.prefix_groups, "prefix_len": args.prefix_len}
    return spec


def options_of(args: argparse.Namespace) -> BenchOptions:
    """The run's options: the request's (its dataset read and checked), with the API keys read from
    their files."""
    options = request_of(args).options
    options = options.model_copy(update={"workload": resolve(options.workload, allow_paths=True)})
    return options.with_api_key(
        _read_key(args.api_key_file, "api-key-file"), _read_key(args.admin_api_key_file, "admin-api-key-file")
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
