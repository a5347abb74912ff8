"""``agent kv``: how much KV cache N running requests hold, with speculation on and off (SGLang 0.5.23's rule)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from agent.cli.profile import load_valid_profile
from agent.sglang import SGLANG_VERSION
from agent.sglang.kv import KvWhatIf, kv_whatif

_ROWS = (
    ("alloc_len_per_decode", "KV slots per request per decode step"),
    ("reserve_per_decode", "reserve per request (2 × alloc)"),
    ("lookahead_per_request", "held beyond the context, per request"),
    ("tokens_per_request", "held per request"),
    ("tokens_held", "held by all running requests"),
    ("tokens_reserved", "of which look-ahead"),
    ("requests_that_fit", "requests of this context that fit"),
    ("row_extra", "req->token row headroom"),
)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def format_table(w: KvWhatIf) -> str:
    spec = (
        "no speculation"
        if w.spec is None
        else (
            f"steps {w.spec.steps}, topk {w.spec.topk}, draft tokens {w.spec.draft_tokens}"
            + (f", widest {w.spec.widest_draft}" if w.spec.max_draft_tokens is not None else "")
        )
    )
    lines = [
        f"{w.running} running requests of {w.context} tokens, page {w.page_size}, "
        f"pool {w.pool} tokens ({w.pool_source}); speculation: {spec}",
        "",
        f"{'':40} {'spec on':>12} {'spec off':>12}",
    ]
    on, off = w.on.__dict__, w.off.__dict__
    for key, label in _ROWS:
        lines.append(f"{label:40} {on[key]:>12,} {off[key]:>12,}")
    return "\n".join(lines)


def _kv(args: argparse.Namespace) -> int:
    profile = load_valid_profile(args.path)
    if profile is None:
        return 1
    w = kv_whatif(profile, running=args.running, context=args.context, pool=args.pool)
    if args.json:
        print(json.dumps(w.to_dict(), indent=2))
    else:
        print(format_table(w))
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "kv",
        help="KV cache held and reserved by N running requests, speculation on vs off",
        description=f"KV allocation as SGLang {SGLANG_VERSION} computes it (mem_cache/allocation_sizing.py): "
        "per-request decode allocation, the 2x reserve, page alignment; adaptive speculation always "
        "reserves for its widest candidate. 'off' is the same server launched without speculation.",
    )
    parser.add_argument("path", metavar="PATH", help="profile TOML file")
    parser.add_argument("--running", type=_non_negative, required=True, metavar="N", help="running requests")
    parser.add_argument(
        "--context", type=_positive, required=True, metavar="L", help="tokens per request so far"
    )
    parser.add_argument(
        "--pool",
        type=_positive,
        default=None,
        metavar="P",
        help="KV pool in tokens (default: server.max_total_tokens, else an estimate for Kimi K2.5 INT4)",
    )
    parser.add_argument("--json", action="store_true", help="print the what-if as JSON (keys 'on' and 'off')")
    parser.set_defaults(handler=_kv)
