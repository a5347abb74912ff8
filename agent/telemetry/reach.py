"""Whether the live threshold can ever act: a threshold above the batch the KV pool holds never does.

The pool decides how many requests run at once: SGLang admits a request only while its context and
look-ahead fit (``agent.sglang.kv``). Kimi K2.5's profile carries 125, the cost model's crossover
at its bench preset's mean context (1,152 tokens), read without the pool's limit; the estimated
pool (126,526 tokens at mem_fraction_static 0.85, bf16 KV) holds about 107 such requests, so
speculation never turns off there and a compare, which cannot reach 125 either, recommends 0. The
pool is SGLang's own count (``max_total_num_tokens``) on a running server and follows SGLang's
allocation rule, so where the two disagree it is the threshold that is wrong for the traffic: this
finding says so, with the numbers, on every console.
"""

from __future__ import annotations

from agent.telemetry.moment import Moment
from agent.wire import Finding

MIN_RUNNING = 8
"""Below this many running requests their mean context says too little about the traffic."""


def threshold_unreachable(m: Moment) -> Finding | None:
    snap = m.snap
    spec, kv, load = snap.speculation, snap.kv, snap.load
    threshold = spec.threshold
    if not spec.threshold_available or threshold is None or threshold < 2:
        return None
    if not kv.pool_tokens or not kv.used_tokens or not load.running or load.running < MIN_RUNNING:
        return None
    context = kv.used_tokens / load.running
    per_request = context + (kv.reserve_per_request_on or 0)
    fit = int(kv.pool_tokens // per_request)
    cap = min(fit, load.max_running_requests) if load.max_running_requests else fit
    if cap >= threshold:
        return None
    limit = (
        "max_running_requests"
        if load.max_running_requests and cap == load.max_running_requests
        else "KV pool"
    )
    return Finding(
        code="threshold_unreachable",
        severity="info",
        title=f"The threshold {threshold} is above the {cap} requests this server holds at once",
        explanation=(
            f"At the running mean context of {context:,.0f} tokens (plus {kv.reserve_per_request_on or 0} of "
            f"look-ahead) the {limit} ({kv.pool_tokens:,} tokens) holds {fit:,} requests at once, so the running "
            f"batch never reaches {threshold}: speculation never turns off, and a compare at these request sizes "
            "cannot reach it either (it recommends 0). The pool is SGLang's own count; it is the threshold "
            "that is wrong for this traffic, not the pool."
        ),
        action=(
            "Run a compare with this traffic's request sizes (Bench) and apply what it recommends; keep a "
            "threshold in the profile so that the 0-step state is built for shorter contexts."
        ),
        value=float(cap),
        limit=float(threshold),
        unit="requests",
    )
