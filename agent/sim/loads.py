"""``GET /v1/loads``: the per-DP-rank load SGLang 0.5.23 reports, which SGLang's router polls.

The router (``smg``) asks every worker for ``/v1/loads?include=core,disagg,queues,memory`` and routes
its load-aware policies by it; its ``/workers`` and ``/get_loads`` show it back. The fields and the
sections are those of 0.5.23's ``LoadSnapshot.to_dict`` (``sglang/srt/managers/load_snapshot.py``,
filled by ``scheduler_components/load_inquirer.py``); the simulated engine has one DP rank.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

from agent.sim.engine import Engine
from agent.sim.http import HttpRequest

SECTIONS = frozenset({"core", "memory", "spec", "lora", "disagg", "queues", "all"})
"""``LoadSnapshot.VALID_SECTIONS``: anything else is a 400."""


def load_snapshot(engine: Engine, include: set[str] | None) -> dict[str, Any]:
    """One rank's ``LoadSnapshot.to_dict(include)``: the core scalars, then the sections asked for."""
    cfg = engine.config
    stats = engine.stats
    pool = cfg.pool_tokens
    used = engine.kv_used
    waiting = list(engine.waiting)
    pending = sum(r.input_len - r.prefilled for r in waiting)
    load: dict[str, Any] = {
        "timestamp": time.time(),
        "dp_rank": 0,
        "num_running_reqs": len(engine.running),
        "num_waiting_reqs": len(waiting),
        "num_waiting_uncached_tokens": pending,
        "num_used_tokens": used,
        "num_total_tokens": used + pending,
        "num_active_tokens": used + pending,
        "num_prealloc_ready_tokens": 0,
        "max_total_num_tokens": pool,
        "max_running_requests": cfg.max_running_requests,
        "token_usage": round(used / pool, 4) if pool else 0.0,
        "gen_throughput": round(stats.gen_throughput, 2),
        "cache_hit_rate": 0.0,
        "utilization": round(min(1.0, len(engine.running) / cfg.max_running_requests), 4),
        "total_prefill_uncached_tokens": 0,
        "total_prefill_busy_us": 0,
        "decode_moments": None,
    }
    if include == {"core"}:
        return load
    asked = SECTIONS if include is None or "all" in include else include
    if cfg.speculative and stats.spec_total_forward_ct > 0 and "spec" in asked:
        load["speculative"] = {
            "accept_length": stats.spec_total_accept_tokens / stats.spec_total_forward_ct,
            "accept_rate": stats.spec_accept_rate,
        }
    if "disagg" in asked:
        load["disaggregation"] = {
            "mode": "null",
            "prefill_bootstrap_queue_reqs": 0,
            "prefill_inflight_queue_reqs": 0,
            "decode_prealloc_queue_reqs": 0,
            "decode_transfer_queue_reqs": 0,
            "decode_retracted_queue_reqs": 0,
            "kv_transfer_speed_gb_s": 0.0,
            "kv_transfer_latency_ms": 0.0,
        }
    if "queues" in asked:
        load["queues"] = {
            "waiting": len(waiting),
            "grammar": 0,
            "paused": 0,
            "retracted": stats.num_retracted_reqs,
            "prealloc_ready": 0,
        }
    return load


async def respond(engine: Engine, version: str, request: HttpRequest) -> None:
    query = parse_qs(bytes(request.scope.get("query_string", b"")).decode("latin-1"))
    raw = ",".join(query.get("include", []))
    include = {s.strip() for s in raw.split(",")} if raw else None
    if include is not None and not include <= SECTIONS:
        bad = sorted(include - SECTIONS)
        why = f"Invalid include sections: {set(bad)}. Valid options: {sorted(SECTIONS)}"
        await request.respond_json({"detail": why}, 400)
        return
    await request.respond_json(
        {
            "timestamp": datetime.now(UTC).isoformat(),
            "version": version,
            "accelerator": None,
            "num_accelerators": engine.config.profile.server.tp_size,
            "loads": [load_snapshot(engine, include)],
        }
    )
