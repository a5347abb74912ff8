"""The ``/server_info`` and ``/set_internal_state`` fields of SGLang 0.5.23 that k25console reads and writes.

``/server_info`` (``srt/entrypoints/http_server.py: server_info``) is every resolved ``ServerArgs``
field, the scheduler's handshake (``max_total_num_tokens``...), ``version`` and ``internal_states``:
one dict per DP rank from TP rank 0 (``srt/managers/scheduler_components/internal_state.py``),
where runtime overrides are applied, so speculation fields there show the live adaptive tier.
It also holds the API keys and the raw launch command: redact before showing or storing it.

``/set_internal_state`` takes ``{"server_args": {KEY: number}}`` and answers one boolean per DP
rank; any unknown or invalid key rejects the whole request (``[false]`` with HTTP 200).
"""

from __future__ import annotations

from typing import Final

from agent.sglang.live_control import LIVE_KEYS, READBACK_FIELD

# --- /server_info, top level --------------------------------------------------------------------

VERSION: Final = "version"
INTERNAL_STATES: Final = "internal_states"
LAUNCH_COMMAND: Final = "launch_command"
MAX_TOTAL_NUM_TOKENS: Final = "max_total_num_tokens"
MAX_REQ_INPUT_LEN: Final = "max_req_input_len"
STARTUP_TIME: Final = "startup_time"

SERVER_ARGS_READ: Final = (
    "model_path",
    "served_model_name",
    "tp_size",
    "page_size",
    "mem_fraction_static",
    "max_running_requests",
    "kv_cache_dtype",
    "attention_backend",
    "context_length",
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "speculative_adaptive",
    "speculative_adaptive_config",
    "speculative_accept_threshold_single",
    "speculative_accept_threshold_acc",
    "dp_size",
    "attn_dp_size",
    "cuda_graph_max_bs_decode",
    "enable_multi_layer_eagle",
    "enable_two_batch_overlap",
    "enable_pdmux",
)
"""Resolved ``ServerArgs`` fields read from ``/server_info`` (and ``internal_states[i]``)."""

CUDA_GRAPH_MAX_BS_DECODE: Final = "cuda_graph_max_bs_decode"
OLD_CUDA_GRAPH_MAX_BS: Final = "cuda_graph_max_bs"
"""What SGLang before 0.5.23 called the largest decode batch captured in a CUDA graph."""
ENABLE_DP_ATTENTION: Final = "enable_dp_attention"
"""Synthesized by ``/server_info`` from the attention-DP size (not a ``ServerArgs`` field)."""
STATUS: Final = "status"

TOP_LEVEL_READ: Final = (
    VERSION,
    INTERNAL_STATES,
    MAX_TOTAL_NUM_TOKENS,
    MAX_REQ_INPUT_LEN,
    STARTUP_TIME,
    STATUS,
)

SECRET_FIELDS: Final = ("api_key", "admin_api_key", LAUNCH_COMMAND)
"""Fields that carry key material in 0.5.23's ``/server_info``; never display or store them."""

# --- /server_info → internal_states[i] ----------------------------------------------------------

AVG_SPEC_ACCEPT_LENGTH: Final = "avg_spec_accept_length"
"""Lifetime average since start, the last /flush_cache or accept-threshold update; absent before the first decode log."""
LAST_GEN_THROUGHPUT: Final = "last_gen_throughput"
EFFECTIVE_MAX_RUNNING_REQUESTS: Final = "effective_max_running_requests_per_dp"
MEMORY_USAGE: Final = "memory_usage"
MEMORY_USAGE_KEYS: Final = ("weight", "kvcache", "token_capacity", "graph")
DECODE_CUDA_GRAPH_BS: Final = "decode_cuda_graph_bs"
WORLD_SIZE: Final = "world_size"

INTERNAL_STATE_READ: Final = (
    AVG_SPEC_ACCEPT_LENGTH,
    LAST_GEN_THROUGHPUT,
    EFFECTIVE_MAX_RUNNING_REQUESTS,
    MEMORY_USAGE,
    DECODE_CUDA_GRAPH_BS,
    WORLD_SIZE,
)
"""Keys SGLang adds to ``internal_states[i]`` beside the resolved server args."""

ADAPTIVE_READBACK: Final = READBACK_FIELD
"""Added by k25console's patch: the live threshold/steps state (``agent.sglang.live_control``)."""

# --- /set_internal_state ------------------------------------------------------------------------

SGLANG_SET_INTERNAL_STATE_KEYS: Final = (
    "pp_max_micro_batch_size",
    "speculative_accept_threshold_single",
    "speculative_accept_threshold_acc",
    "dspark_force_budget_frac",
    "dspark_clear_info_records",
)
"""The keys unpatched 0.5.23 accepts (``SchedulerInternalStateController._update_handlers``)."""

SET_INTERNAL_STATE_KEYS: Final = SGLANG_SET_INTERNAL_STATE_KEYS + LIVE_KEYS
"""What the patched server accepts: SGLang's own keys plus our two live keys."""

SET_INTERNAL_STATE_BODY_FIELD: Final = "server_args"
