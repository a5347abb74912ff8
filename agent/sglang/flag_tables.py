"""The tables of SGLang 0.5.23 flags and backends that ``rules`` checks a profile against.

Kept apart from the rules themselves so that ``rules`` reads as rules; ``rules`` re-exports them.
"""

from __future__ import annotations

PAGE_TREE_SPEC_BACKENDS = ("flashinfer", "fa3", "triton")
"""Attention backends that accept topk > 1 with page > 1 (``speculative_hook.py: _PAGE_TREE_SPEC_BACKENDS``)."""

SM120_FAILING_BACKENDS = {
    "fa3": "FlashAttention 3 asserts an SM80/SM90 GPU (attention_registry.py)",
    "cutedsl_mla": "cutedsl_mla is SM100-only and raises on other GPUs (overrides.py)",
}
"""Attention backends SGLang 0.5.23 refuses at start-up on SM120 (RTX PRO 6000 Blackwell)."""

SM120_FAILING_FLAGS = {
    "--enable-flashinfer-allreduce-fusion": "FlashInfer all-reduce fusion requires SM90 or SM10X GPUs "
    "(flashinfer_comm_fusion.py); SGLang fails at start-up on SM120",
    "--flashinfer-allreduce-fusion-backend": "FlashInfer all-reduce fusion requires SM90 or SM10X GPUs "
    "(flashinfer_comm_fusion.py); SGLang fails at start-up on SM120",
}
"""Extra flags known to fail on SM120."""

RENAMED_FLAGS = {
    "--cuda-graph-max-bs": "0.5.23 calls it --cuda-graph-max-bs-decode; set server.cuda_graph_max_bs",
    "--cuda-graph-bs": "0.5.23 calls it --cuda-graph-bs-decode",
}
"""Spellings from older SGLang recipes, with what 0.5.23 wants instead."""

IMPLICIT_MAX_RUNNING_REQUESTS = 48
"""What 0.5.23 sets ``max_running_requests`` to for EAGLE when it is unset (``_handle_eagle_family``)."""

RENDERED_FLAGS: dict[str, str] = {
    "--model-path": "model.path",
    "--model": "model.path",
    "--speculative-draft-model-path": "model.draft_path",
    "--speculative-draft-model": "model.draft_path",
    "--trust-remote-code": "model.trust_remote_code",
    "--served-model-name": "model.served_name",
    "--context-length": "model.context_length",
    "--reasoning-parser": "model.reasoning_parser",
    "--tool-call-parser": "model.tool_call_parser",
    "--language-model-only": "model.language_model_only",
    "--tp-size": "server.tp_size",
    "--tensor-parallel-size": "server.tp_size",
    "--page-size": "server.page_size",
    "--mem-fraction-static": "server.mem_fraction_static",
    "--max-running-requests": "server.max_running_requests",
    "--cuda-graph-max-bs-decode": "server.cuda_graph_max_bs",
    "--max-total-tokens": "server.max_total_tokens",
    "--chunked-prefill-size": "server.chunked_prefill_size",
    "--kv-cache-dtype": "server.kv_cache_dtype",
    "--attention-backend": "server.attention_backend",
    "--host": "server.host",
    "--port": "server.port",
    "--enable-metrics": "server.enable_metrics",
    "--api-key": "server.api_key_file",
    "--admin-api-key": "server.admin_api_key_file",
    "--config": "server.api_key_file",
    "--speculative-algorithm": "speculation.algorithm",
    "--speculative-num-steps": "speculation.num_steps",
    "--speculative-eagle-topk": "speculation.eagle_topk",
    "--speculative-num-draft-tokens": "speculation.num_draft_tokens",
    "--speculative-adaptive": "speculation.adaptive",
    "--speculative-adaptive-config": "speculation.threshold",
}
"""Flags k25console renders from profile keys; setting them again in extra_flags would fight the profile."""
