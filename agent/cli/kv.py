"""``agent kv``: how much KV cache N running requests hold: speculating, at 0 steps ("off"), and without a drafter.

Every number comes from ``agent.sglang.kv`` (SGLang 0.5.23's ``allocation_sizing.py`` rules); this
module only lays them out and says, in words, when the requests do not fit.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from agent.cli.profile import load_valid_profile
from agent.sglang import SGLANG_VERSION
from agent.sglang.kv import KvSide, KvWhatIf, kv_whatif

_ROWS = (
    ("alloc_len_per_decode", "KV slots per request per decode step"),
    ("reserve_per_decode", "reserve per request (2 × alloc)"),
    ("lookahead_per_request", "held beyond the context, per request"),
    ("tokens_per_request", "held per request"),
    ("tokens_held", "held by all running requests"),
    ("tokens_reserved", "of which look-ahead"),
    ("pool_tokens", "KV pool"),
    ("requests_that_fit", "requests of this context that fit"),
    ("row_extra", "req->token row headroom"),
)
_COLUMNS = (("on", "spec on"), ("off", "off (0 steps)"), ("baseline", "no drafter"))
_WIDTH = 16
NOT_APPLICABLE = "n/a"


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


def _mib(n: int) -> str:
    return f"{n / 1024**2:,.0f} MiB"


def _header(w: KvWhatIf) -> list[str]:
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
        f"pool {w.pool:,} tokens ({w.pool_source}); speculation: {spec}"
    ]
    if w.drafter is not None:
        d = w.drafter
        lines.append(
            f"without the drafter the pool would be {d.pool_tokens_without_drafter:,} tokens: the draft's share "
            f"of each KV cell ({d.draft_share_of_cell:.1%}) takes {d.tokens_for_draft_kv:,}, its weights "
            f"(about {_mib(d.draft_weight_bytes)} per rank, an estimate) {d.tokens_for_draft_weights:,}"
        )
    return lines


def _cell(side: KvSide | None, key: str) -> str:
    return NOT_APPLICABLE if side is None else f"{getattr(side, key):,}"


def format_table(w: KvWhatIf) -> str:
    lines = [*_header(w), "", f"{'':40}" + "".join(f"{label:>{_WIDTH}}" for _, label in _COLUMNS)]
    sides = [getattr(w, attr) for attr, _ in _COLUMNS]
    for key, label in _ROWS:
        lines.append(f"{label:40}" + "".join(f"{_cell(side, key):>{_WIDTH}}" for side in sides))
    notes = []
    if w.spec is None:
        notes.append("spec on, off: this profile does not speculate; its server is the no-drafter column")
    elif w.off is None and w.off_unavailable is not None:
        notes.append(f"off (0 steps): this server never runs at 0 steps: {w.off_unavailable}")
    if w.off is not None:
        notes.append(
            "off (0 steps) is SGLang's 0-step state inside the speculative server: it keeps the widest "
            "candidate's reserve and the drafter's memory"
        )
    lines += ["", *notes, *w.fit_summary()]
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
    return 1 if args.fail_if_overfull and w.overfull else 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "kv",
        help="KV cache held and reserved by N running requests: speculating, at 0 steps, without a drafter",
        description=f"KV allocation as SGLang {SGLANG_VERSION} computes it (mem_cache/allocation_sizing.py): "
        "per-request decode allocation, the 2x reserve, page alignment; adaptive speculation always "
        "reserves for its widest candidate, at 0 steps too. Three columns: 'spec on', 'off (0 steps)' "
        "inside the speculative server (same pool and reserve), and 'no drafter' (the same server "
        "launched without speculation: one slot per step and the drafter's memory back in the pool). "
        "Says when the requests do not fit in the pool.",
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
        help="the profile's server's KV pool in tokens (default: server.max_total_tokens, else an estimate "
        "for Kimi K2.5 INT4)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the what-if as JSON (keys 'on', 'off', 'baseline', 'drafter', 'overfull')",
    )
    parser.add_argument(
        "--fail-if-overfull",
        action="store_true",
        help="exit 1 when the profile's server cannot hold the N requests at once",
    )
    parser.set_defaults(handler=_kv)
