"""The rest of SGLang 0.5.23's ``/metrics`` page as the real server shows it for this deployment.

The real captures (``tests/fixtures/sglang-0.5.23-real/metrics-*.prom``) carry families the model
has nothing to say about: pools this model does not have (SWA, Mamba), disaggregation and grammar
queues, routing keys, DP attention, scheduler stage timers. SGLang still exports them, at 0 here, so
the sim does too, with the same names, types and labels; the memory gauges come from the same
figures as ``/server_info``'s ``memory_usage``. What the sim cannot honestly carry is listed, with
the reason, in ``tests/sim/test_sim_follows_real_captures.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from agent.sglang import kv
from agent.sglang import metrics as names
from agent.sim.engine import Engine

PREFIX = names.PREFIX

ZERO_GAUGES = (
    ("mamba_available_tokens", "Number of free Mamba state slots."),
    ("mamba_evictable_tokens", "Number of evictable Mamba state slots."),
    ("mamba_usage", "The Mamba state usage."),
    ("mamba_used_tokens", "Number of used Mamba state slots."),
    ("swa_available_tokens", "Number of free token slots in the SWA KV cache pool."),
    ("swa_evictable_tokens", "Number of evictable token slots in the SWA KV cache pool."),
    ("swa_token_usage", "The token usage for SWA layers."),
    ("swa_used_tokens", "Number of used token slots in the SWA KV cache pool."),
    ("num_grammar_queue_reqs", "The number of requests in the grammar waiting queue."),
    ("num_prefill_bootstrap_queue_reqs", "The number of requests in the prefill bootstrap queue."),
    ("num_prefill_inflight_queue_reqs", "The number of requests in the prefill inflight queue."),
    ("num_decode_prealloc_queue_reqs", "The number of requests in the decode prealloc queue."),
    ("num_decode_transfer_queue_reqs", "The number of requests in the decode transfer queue."),
    ("num_decode_host_receive_queue_reqs", "The number of requests in the decode host receive queue."),
    ("num_decode_deferred_kv_release_reqs", "The number of decode requests whose KV release is deferred."),
    ("pending_prealloc_token_usage", "The token usage of pending preallocations."),
    ("prealloc_full_token_usage", "The full-pool token usage of preallocations."),
    ("prealloc_swa_token_usage", "The SWA-pool token usage of preallocations."),
    ("num_unique_running_routing_keys", "The number of unique routing keys among running requests."),
    ("spec_cap_length", "Mean capped draft length of speculative decoding."),
    ("spec_block_accept_length", "Mean block accept length of block speculative decoding."),
    ("utilization", "The utilization."),
)
ZERO_COUNTERS = (
    ("scheduler_idle_seconds", "Seconds the scheduler spent idle."),
    ("scheduler_process_cpu_seconds", "CPU seconds of the scheduler process."),
)
ROUTING_BUCKETS = ((0, 1), (1, 2), (2, 3), (3, 5), (5, 7), (7, 10), (10, 20), (20, 50), (50, 100), (100, 200))
SCHEDULER_STAGES = (
    "other", "recv_requests", "process_input_requests", "get_next_batch_to_run", "process_queue",
    "run_batch", "process_batch_result", "sanity_check_cache", "idle",
)  # fmt: skip


def extra_families(engine: Engine, s_labels: tuple[str, ...], s_vals: list[str]) -> Iterator[Metric]:
    """The scheduler-side families beyond the modelled ones, labelled like SGLang's."""
    cfg = engine.config
    labels = list(s_labels)
    for name, doc in ZERO_GAUGES:
        family = GaugeMetricFamily(PREFIX + name, doc, labels=labels)
        family.add_metric(s_vals, 0.0)
        yield family
    for name, doc in ZERO_COUNTERS:
        counter = CounterMetricFamily(PREFIX + name, doc, labels=labels)
        counter.add_metric(s_vals, 0.0)
        yield counter

    pid = str(os.getpid())
    paused = GaugeMetricFamily(
        PREFIX + "num_paused_reqs", "The number of paused requests.", labels=[*labels, "pid"]
    )
    paused.add_metric([*s_vals, pid], 0.0)
    yield paused

    memory = _memory(engine)
    for name, doc, value in (
        ("weight_memory_usage_gb", "Memory used by the model weights (GB).", memory["weight"]),
        ("kv_cache_memory_usage_gb", "Memory used by the KV cache (GB).", memory["kvcache"]),
        (
            "startup_available_gpu_memory_gb",
            "Free GPU memory when the server started (GB).",
            memory["startup"],
        ),
        (
            "num_pages",
            "The number of pages in the KV cache pool.",
            cfg.pool_tokens // cfg.profile.server.page_size,
        ),
        (
            "fwd_occupancy",
            "Occupancy of the forward batch.",
            len(engine.running) / max(1, cfg.max_running_requests),
        ),
    ):
        gauge = GaugeMetricFamily(PREFIX + name, doc, labels=labels)
        gauge.add_metric(s_vals, float(value))
        yield gauge
    graph = GaugeMetricFamily(
        PREFIX + "graph_memory_usage_gb", "CUDA graph memory by phase (GB).", labels=[*labels, "phase"]
    )
    for phase, gb in memory["graph"]:
        graph.add_metric([*s_vals, phase], gb)
    yield graph

    for name in ("routing_key_running_req_count", "routing_key_all_req_count"):
        routing = GaugeMetricFamily(
            PREFIX + name, "Routing keys by request count.", labels=[*labels, "gt", "le"]
        )
        for low, high in (*ROUTING_BUCKETS, (200, None)):
            routing.add_metric([*s_vals, str(low), "+Inf" if high is None else str(high)], 0.0)
        yield routing

    active = GaugeMetricFamily(PREFIX + "routing_keys_active", "The number of active routing keys.")
    active.add_metric([], 0.0)
    yield active

    prefill = CounterMetricFamily(
        PREFIX + "prefill_effective_tokens",
        "Prefill tokens by where they came from.",
        labels=[*labels, "mode"],
    )
    prompt = float(sum(engine.stats.prompt_tokens.values()))
    for mode, value in (("input", prompt), ("device_hit", 0.0), ("host_hit", 0.0), ("storage_hit", 0.0)):
        prefill.add_metric([*s_vals, mode], value)
    yield prefill
    stages = CounterMetricFamily(
        PREFIX + "scheduler_stage_seconds",
        "Seconds the scheduler spent per stage.",
        labels=[*labels, "category", "forward_overlap"],
    )
    for stage in SCHEDULER_STAGES:
        stages.add_metric([*s_vals, stage, "none"], 0.0)
    yield stages
    for name, label, values in (
        ("dp_attention_tokens", "kind", ("imbalance", "scheduled")),
        ("dp_attention_pairs", "kind", ("imbalance", "scheduled")),
        ("dp_attention_steps", "rank_state", ("active", "idle")),
    ):
        dp = CounterMetricFamily(
            PREFIX + name, "DP attention accounting (no DP attention here).", labels=[*labels, label]
        )
        for value in values:
            dp.add_metric([*s_vals, value], 0.0)
        yield dp


def _memory(engine: Engine) -> dict[str, Any]:
    """The figures ``/server_info`` → ``memory_usage`` reports (``agent.sim.info.ServerInfo.memory_usage``)."""
    cfg = engine.config
    memory = cfg.calibration.memory
    cell = kv.mla_cell_bytes(cfg.profile.server.kv_cache_dtype, cfg.speculative)
    graph = dict(memory.graph_gb)
    if not cfg.speculative:
        graph.update(target_verify=0.0, draft_decode=0.0, draft_extend=0.0)
    weight = memory.target_weight_gb + (
        memory.draft_weight_bytes_per_rank / 1024**3 if cfg.speculative else 0.0
    )
    return {
        "weight": round(weight, 3),
        "kvcache": round(cfg.pool_tokens * cell / 1024**3, 3),
        "startup": memory.startup_available_gb,
        "graph": sorted(graph.items()),
    }
