"""The Prometheus metric names SGLang 0.5.23 exports on ``/metrics`` that k25console reads.

Names are given without their prefix. ``/metrics`` uses ``sglang:`` (declared in
``srt/observability/metrics_collector.py``); ``/v1/loads?format=prometheus`` writes ``sglang_`` +
field names (``srt/entrypoints/v1_loads.py``). A parser accepts both (:data:`PREFIXES`).
Counters are written with their ``_total`` suffix, as they appear in the exposition text.
A contract test finds every name here in the wheel's source.
"""

from __future__ import annotations

from typing import Final

PREFIX: Final = "sglang:"
LOADS_PREFIX: Final = "sglang_"
PREFIXES: Final = (PREFIX, LOADS_PREFIX)

# Requests and throughput (scheduler gauges, refreshed every --decode-log-interval decode batches)
NUM_RUNNING_REQS: Final = "num_running_reqs"
NUM_QUEUE_REQS: Final = "num_queue_reqs"
GEN_THROUGHPUT: Final = "gen_throughput"
CACHE_HIT_RATE: Final = "cache_hit_rate"
NEW_TOKEN_RATIO: Final = "new_token_ratio"

# KV cache
TOKEN_USAGE: Final = "token_usage"
NUM_USED_TOKENS: Final = "num_used_tokens"
KV_USED_TOKENS: Final = "kv_used_tokens"
KV_AVAILABLE_TOKENS: Final = "kv_available_tokens"
KV_EVICTABLE_TOKENS: Final = "kv_evictable_tokens"
MAX_TOTAL_NUM_TOKENS: Final = "max_total_num_tokens"
PAGE_SIZE: Final = "page_size"
CONTEXT_LEN: Final = "context_len"

# Speculative decoding
SPEC_ACCEPT_LENGTH: Final = "spec_accept_length"
SPEC_ACCEPT_RATE: Final = "spec_accept_rate"
SPEC_NUM_STEPS: Final = "spec_num_steps"
SPEC_NUM_DRAFT_TOKENS: Final = "spec_num_draft_tokens"
SPEC_VERIFY_CALLS_TOTAL: Final = "spec_verify_calls_total"

# Counters (tokenizer side unless noted)
PROMPT_TOKENS_TOTAL: Final = "prompt_tokens_total"
GENERATION_TOKENS_TOTAL: Final = "generation_tokens_total"
NUM_REQUESTS_TOTAL: Final = "num_requests_total"
NUM_ABORTED_REQUESTS_TOTAL: Final = "num_aborted_requests_total"
NUM_RETRACTED_REQUESTS_TOTAL: Final = "num_retracted_requests_total"  # scheduler
NUM_RETRACTED_REQS: Final = "num_retracted_reqs"  # scheduler gauge: last window
CUDA_GRAPH_PASSES_TOTAL: Final = "cuda_graph_passes_total"  # label mode = decode_cuda_graph | decode_none
IS_CUDA_GRAPH: Final = "is_cuda_graph"
REALTIME_TOKENS_TOTAL: Final = "realtime_tokens_total"
"""Scheduler counter of tokens processed per step, label ``mode`` = decode / prefill_compute / prefill_cache;
advanced every ``--decode-log-interval`` decode batches (reference §5.2)."""

# Latency histograms (seconds)
TIME_TO_FIRST_TOKEN_SECONDS: Final = "time_to_first_token_seconds"
INTER_TOKEN_LATENCY_SECONDS: Final = "inter_token_latency_seconds"
E2E_REQUEST_LATENCY_SECONDS: Final = "e2e_request_latency_seconds"
QUEUE_TIME_SECONDS: Final = "queue_time_seconds"

READ: Final = (
    NUM_RUNNING_REQS,
    NUM_QUEUE_REQS,
    GEN_THROUGHPUT,
    CACHE_HIT_RATE,
    NEW_TOKEN_RATIO,
    TOKEN_USAGE,
    NUM_USED_TOKENS,
    KV_USED_TOKENS,
    KV_AVAILABLE_TOKENS,
    KV_EVICTABLE_TOKENS,
    MAX_TOTAL_NUM_TOKENS,
    PAGE_SIZE,
    CONTEXT_LEN,
    SPEC_ACCEPT_LENGTH,
    SPEC_ACCEPT_RATE,
    SPEC_NUM_STEPS,
    SPEC_NUM_DRAFT_TOKENS,
    SPEC_VERIFY_CALLS_TOTAL,
    PROMPT_TOKENS_TOTAL,
    GENERATION_TOKENS_TOTAL,
    NUM_REQUESTS_TOTAL,
    NUM_ABORTED_REQUESTS_TOTAL,
    NUM_RETRACTED_REQUESTS_TOTAL,
    NUM_RETRACTED_REQS,
    CUDA_GRAPH_PASSES_TOTAL,
    IS_CUDA_GRAPH,
    REALTIME_TOKENS_TOTAL,
    TIME_TO_FIRST_TOKEN_SECONDS,
    INTER_TOKEN_LATENCY_SECONDS,
    E2E_REQUEST_LATENCY_SECONDS,
    QUEUE_TIME_SECONDS,
)
"""Every metric k25console reads, without prefix."""

# Names older SGLang releases (and /v1/loads) use for what 0.5.23 calls otherwise; read as aliases.
# They are not in 0.5.23's source, so they are kept out of READ (which a contract test checks).
LOADS_NUM_WAITING_REQS: Final = "num_waiting_reqs"
"""``/v1/loads?format=prometheus`` (``sglang_`` prefix) calls the queue this (``load_snapshot.py``)."""
OLD_NUM_REQUESTS_RUNNING: Final = "num_requests_running"
OLD_NUM_REQUESTS_WAITING: Final = "num_requests_waiting"
OLD_QUEUE_REQ: Final = "queue_req"
OLD_TIME_PER_OUTPUT_TOKEN_SECONDS: Final = "time_per_output_token_seconds"
OLD_TIME_PER_OUTPUT_TOKEN: Final = "time_per_output_token"
ALIASES: Final = (
    LOADS_NUM_WAITING_REQS,
    OLD_NUM_REQUESTS_RUNNING,
    OLD_NUM_REQUESTS_WAITING,
    OLD_QUEUE_REQ,
    OLD_TIME_PER_OUTPUT_TOKEN_SECONDS,
    OLD_TIME_PER_OUTPUT_TOKEN,
)
"""Names read for older pages; a contract test checks that 0.5.23 itself exports none of them."""

TP_RANK_LABEL: Final = "tp_rank"
PP_RANK_LABEL: Final = "pp_rank"
DP_RANK_LABEL: Final = "dp_rank"
MODEL_NAME_LABEL: Final = "model_name"
MODE_LABEL: Final = "mode"
LE_LABEL: Final = "le"
RANK_LABELS: Final = (TP_RANK_LABEL, PP_RANK_LABEL, "moe_ep_rank", "attn_tp_rank", "attn_cp_rank")
"""Labels of the ranks inside one scheduler group: every rank of a group reports the same batch
(``--enable-metrics-for-all-schedulers``), so one copy is read. ``dp_rank`` is not among them: each
data-parallel rank runs its own scheduler with its own requests."""


def strip_prefix(full: str) -> str | None:
    """A metric's name without its SGLang prefix, or None when it is not an SGLang metric."""
    for prefix in PREFIXES:
        if full.startswith(prefix):
            return full[len(prefix) :]
    return None
