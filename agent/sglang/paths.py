"""SGLang 0.5.23's HTTP paths: the one place in the agent that spells them.

The agent's readers, probes, benchmark and smoke checks name these constants, and the simulated
engine serves them, so an SGLang upgrade that moves a route changes this file only. A test
(``tests/test_sglang_paths.py``) fails on any of these strings anywhere else in ``agent/``.
"""

from __future__ import annotations

from typing import Final

HEALTH: Final = "/health"
"""503 while the server starts, 200 once it serves."""
HEALTH_GENERATE: Final = "/health_generate"
READY: Final = "/ready"
MODEL_INFO: Final = "/model_info"
"""Answers once the model is loaded (``model_path``, ``is_generation``...)."""
GET_MODEL_INFO: Final = "/get_model_info"
"""The older name of ``MODEL_INFO``, still served by 0.5.23."""
SERVER_INFO: Final = "/server_info"
GET_SERVER_INFO: Final = "/get_server_info"
"""The older name of ``SERVER_INFO``, still served by 0.5.23."""
METRICS: Final = "/metrics"
"""The Prometheus page (with ``--enable-metrics``)."""
MODELS: Final = "/v1/models"
SET_INTERNAL_STATE: Final = "/set_internal_state"
"""Admin route (ADMIN_OPTIONAL): the live keys our patch adds go through it."""
FLUSH_CACHE: Final = "/flush_cache"
"""Admin route (ADMIN_OPTIONAL): resets the radix cache and the accept-length totals."""
START_PROFILE: Final = "/start_profile"
"""SGLang's torch profiler: a trace of the next ``num_steps`` forward steps, written by the engine."""
GENERATE: Final = "/generate"
"""The native generation route (streams cumulative ``meta_info``)."""
CHAT_COMPLETIONS: Final = "/v1/chat/completions"
COMPLETIONS: Final = "/v1/completions"
LOADS: Final = "/v1/loads"
"""Per-DP-rank load (``sglang.srt.entrypoints.v1_loads``): what SGLang's router (smg) polls from each
worker for its load-aware policies and shows in its own ``/workers`` and ``/get_loads``."""

READY_PATHS: Final = (HEALTH, MODEL_INFO)
"""What a readiness probe asks, in order: up (``HEALTH``), and the model loaded (``MODEL_INFO``)."""

ALL: Final = frozenset(
    {
        HEALTH,
        HEALTH_GENERATE,
        READY,
        MODEL_INFO,
        GET_MODEL_INFO,
        SERVER_INFO,
        GET_SERVER_INFO,
        METRICS,
        MODELS,
        SET_INTERNAL_STATE,
        FLUSH_CACHE,
        START_PROFILE,
        GENERATE,
        CHAT_COMPLETIONS,
        COMPLETIONS,
        LOADS,
    }
)
"""Every path above (the layout test looks for each of them outside ``agent/sglang``)."""
