"""The one-GPU tiny profile ``agent smoke`` runs, derived from the operator's profile.

Kept from the profile: the stack (same venv, same patched SGLang), the whole speculation section
(algorithm, steps, topk, draft tokens, adaptive mode, threshold, live steps, EMA settings), the page
size and the attention backend. Replaced: the model (the tiny target and one of the two EAGLE-3 heads),
TP 1 on one chosen GPU (or ``--tp N`` over the first N), a small context, a free loopback port, no API keys, no extra flags (a
flag tuned for Kimi on 8 GPUs may not apply to a tiny Llama), and the memory settings below.

Memory, so that TWO such engines start at the same time on one GPU. SGLang 0.5.23 sizes its KV pool
from ``rest = free_now - free_before_load * (1 - mem_fraction_static)`` (``free_before_load`` is
measured when the engine starts, ``free_now`` after its weights are loaded; reference §3.3), then
caps it with ``--max-total-tokens``. The other engine may load, allocate and capture CUDA graphs in
between, so ``free_now`` may be lower by what it holds by then (a few GiB for these models). A
``mem_fraction_static`` of 0.3 leaves ``rest`` at about 0.3 x free memory minus that (some 35 GiB on
an H200), far above the capped pool (``MAX_TOTAL_TOKENS`` x the KV cell: ~0.6 GiB tiny, ~1.6 GiB
heavy), and costs nothing: SGLang allocates the capped pool, not the fraction. The simulated engine
models Kimi K2.5 on the profile's GPUs instead: for it the profile's TP size is kept and
``mem_fraction_static`` left to SGLang's default (the sim's pool estimate is for a Kimi rank at that
default; the cap still applies).
"""

from __future__ import annotations

from pathlib import Path

from agent.profile.schema import Profile

CONTEXT_LENGTH = 4096
MAX_TOTAL_TOKENS = 32768
MEM_FRACTION_STATIC = 0.3
MIN_GRAPH_BS = 32
"""Decode CUDA graphs up to this batch, or a little above the threshold when that is larger (the
0-step state is captured for the sizes at and above it); fewer graphs than a production profile
start faster."""
MAX_GRAPH_BS = 256


def smoke_profile(
    profile: Profile,
    *,
    target: Path,
    draft: Path,
    port: int,
    gpu: int | None,
    label: str,
    simulated: bool = False,
    tp_size: int = 1,
) -> Profile:
    spec = profile.speculation
    graph_bs = min(MAX_GRAPH_BS, max(MIN_GRAPH_BS, (spec.threshold or 0) + 8))
    env = {"HF_HUB_OFFLINE": "1"}  # local models: never ask a hub (the GPU host has no network)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(gpu)
    data = {
        "schema_version": 1,
        "identity": {
            "name": f"smoke-{label}",
            "description": f"agent smoke of {profile.identity.name}: tiny models, {label} EAGLE-3 head",
            "production": False,
        },
        "stack": profile.stack.model_dump(),
        "model": {
            "path": str(target),
            "draft_path": str(draft) if profile.speculative else None,
            "trust_remote_code": False,
            "served_name": f"smoke-{label}",
            "context_length": CONTEXT_LENGTH,
        },
        "server": {
            "tp_size": profile.server.tp_size if simulated else tp_size,
            "page_size": profile.server.page_size,
            "attention_backend": profile.server.attention_backend,
            "mem_fraction_static": None if simulated else MEM_FRACTION_STATIC,
            "max_total_tokens": MAX_TOTAL_TOKENS,
            "max_running_requests": graph_bs,
            "cuda_graph_max_bs": graph_bs,
            "kv_cache_dtype": "auto",
            "host": "127.0.0.1",
            "port": port,
            "extra_flags": ["--decode-log-interval", "10"],
            "env": env,
        },
        "speculation": spec.model_dump(),
        "telemetry": {"tick_interval_s": 1.0},
    }
    return Profile.model_validate(data)
