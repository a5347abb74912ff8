"""What the simulated engine resolves from a profile, the way SGLang 0.5.23 resolves its launch flags.

Speculation: EAGLE-3 with the profile's steps/topk/draft tokens (topk 1 forces draft tokens to
steps + 1), adaptive only when ``agent.sglang.rules`` says SGLang would keep it on; the KV reserve
per running request from ``agent.sglang.kv`` (the widest adaptive candidate, all the time).
Capacity: the KV pool from ``agent.sglang.kv.estimate_pool_tokens`` (a speculative server loses the
draft's weights from it; ``server.max_total_tokens`` caps it, as ``--max-total-tokens`` does); ``max_running_requests``
defaults to 48 with EAGLE, as SGLang resets it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from agent.profile.schema import Profile
from agent.sglang import adaptive, kv, support
from agent.sglang.extra_flags import first_value
from agent.sim.calibration import CALIBRATION, Calibration

SpecMode = Literal["none", "static", "adaptive"]

EAGLE_DEFAULT_MAX_RUNNING = 48
"""``speculative_hook.py``: "Max running requests is reset to 48 for speculative decoding"."""
DEFAULT_CONTEXT_LENGTH = 262144
DEFAULT_DECODE_LOG_INTERVAL = 40
DEFAULT_MAX_RUNNING_NO_SPEC = 4096


def decode_cuda_graph_bs(max_bs: int, speculative: bool) -> list[int]:
    """The decode batch sizes SGLang captures (``generate_decode_cuda_graph_batch_sizes``)."""
    if not speculative:
        sizes = [1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 512, 16), *range(512, max_bs + 1, 32)]
    else:
        sizes = [
            *range(1, 9),
            *range(10, 33, 2),
            *range(40, 65, 4),
            *range(72, 257, 8),
            *range(272, max_bs + 1, 16),
        ]
    sizes = [bs for bs in sizes if bs <= max_bs]
    if max_bs not in sizes:
        sizes.append(max_bs)
    return sizes


@dataclass(frozen=True)
class SimConfig:
    profile: Profile
    calibration: Calibration
    mode: SpecMode
    steps: int
    """Static steps, or the adaptive initial steps; 0 without speculation."""
    topk: int
    draft_tokens: int
    adaptive_config: dict[str, Any] | None
    reserve_per_decode: int
    pool_tokens: int
    max_running_requests: int
    chunked_prefill_size: int
    context_length: int
    cuda_graph_bs: list[int]
    decode_log_interval: int
    served_model_name: str
    skip_zero_step_draft_extend: bool = False
    """``speculation.skip_zero_step_draft_extend``: a 0-step round runs no draft-extend pass."""
    zero_step_plain: bool = False
    """``speculation.zero_step = "plain"`` with adaptive mode: patch 03's plain 0-step rounds at launch."""
    zero_step_reserve: int = 0
    """Per-request KV reserve of a batch planned at 0 steps on the plain path (``kv.zero_step_reserve``)."""
    api_key: str | None = None
    admin_api_key: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def speculative(self) -> bool:
        return self.mode != "none"

    @property
    def graph_max_bs(self) -> int:
        return max(self.cuda_graph_bs)


def _int_flag(profile: Profile, name: str) -> int | None:
    value = first_value(profile.server.extra_flags, name)
    return int(value) if value is not None and value.isdigit() else None


def sim_config(
    profile: Profile,
    *,
    api_key: str | None = None,
    admin_api_key: str | None = None,
    calibration: Calibration = CALIBRATION,
) -> SimConfig:
    server, spec = profile.server, profile.speculation
    notes: list[str] = []
    mode: SpecMode = "none"
    steps = topk = draft_tokens = 0
    adaptive_cfg: dict[str, Any] | None = None
    if profile.speculative and spec.num_steps is not None:
        steps = spec.num_steps
        topk = spec.eagle_topk or 1
        draft_tokens = steps + 1 if topk == 1 else (spec.num_draft_tokens or steps + 1)
        mode = "static"
        if spec.adaptive:
            reason = support.adaptive_unsupported_reason(profile)
            if reason is None:
                mode = "adaptive"
                adaptive_cfg = adaptive.adaptive_config(profile)
            else:
                notes.append(
                    f"speculative_adaptive disabled: {reason}. Falling back to static speculative params."
                )

    shape = kv.spec_shape_for_profile(profile) if mode != "none" else None
    reserve = kv.reserve_per_decode(shape, server.page_size) if shape is not None else 0

    # SGLang measures the budget after the draft is loaded: its weights come out of the pool.
    pool = kv.estimate_pool_tokens(profile, draft_weight_bytes=calibration.memory.draft_weight_bytes_per_rank)
    if server.max_total_tokens is not None:
        pool = min(pool, server.max_total_tokens)
    pool = max(server.page_size, pool // server.page_size * server.page_size)

    if server.max_running_requests is not None:
        max_running = server.max_running_requests
    elif mode != "none":
        max_running = EAGLE_DEFAULT_MAX_RUNNING
        notes.append("Max running requests is reset to 48 for speculative decoding.")
    else:
        max_running = DEFAULT_MAX_RUNNING_NO_SPEC
    max_running = max(1, min(max_running, pool // 2))

    graph_max = server.cuda_graph_max_bs or calibration.memory.default_graph_max_bs
    graph_bs = [bs for bs in decode_cuda_graph_bs(graph_max, mode != "none") if bs <= max_running] or [1]

    return SimConfig(
        profile=profile,
        calibration=calibration,
        mode=mode,
        steps=steps,
        topk=topk,
        draft_tokens=draft_tokens,
        adaptive_config=adaptive_cfg,
        reserve_per_decode=reserve,
        pool_tokens=pool,
        max_running_requests=max_running,
        chunked_prefill_size=server.chunked_prefill_size or calibration.memory.default_chunked_prefill_size,
        context_length=profile.model.context_length or DEFAULT_CONTEXT_LENGTH,
        cuda_graph_bs=graph_bs,
        decode_log_interval=_int_flag(profile, "--decode-log-interval") or DEFAULT_DECODE_LOG_INTERVAL,
        served_model_name=profile.model.served_name or profile.model.path,
        skip_zero_step_draft_extend=mode != "none" and spec.skip_zero_step_draft_extend,
        zero_step_plain=mode == "adaptive" and spec.zero_step == "plain",
        zero_step_reserve=kv.zero_step_reserve(reserve),
        api_key=api_key,
        admin_api_key=admin_api_key,
        notes=notes,
    )
