"""The KV pool's size for Kimi K2.5 INT4, and what the drafter costs in it (SGLang 0.5.23).

Split from ``agent.sglang.kv`` (which re-exports these names): the per-request allocation rule lives
there, the pool it is spent from here. A running server reports its true pool in ``/server_info``
(``max_total_num_tokens``); these estimates are for planning before it runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from agent.profile.schema import Profile

# --- Pool size -----------------------------------------------------------------------------------

MLA_KV_LORA_RANK = 512
MLA_QK_ROPE_HEAD_DIM = 64
TARGET_LAYERS = 61
DRAFT_LAYERS = 1
"""Kimi K2.5's DeepSeek-V3-style attention (reference §3.5 E; check the model's config.json)."""

KV_DTYPE_BYTES: dict[str, float] = {
    "auto": 2,
    "bf16": 2,
    "bfloat16": 2,
    "fp8_e5m2": 1,
    "fp8_e4m3": 1,
    "mxfp8": 1,
    "nvfp4": 0.5,
    "fp4_mx_block16": 0.5,
}
"""Bytes per KV element (block-scale overhead of the fp4/mx formats ignored)."""

GIB = 1024**3
ESTIMATE_REST_BYTES_AT_085 = int(9.1 * GIB)
"""KV budget per rank of Kimi K2.5 INT4 at mem_fraction_static 0.85 on a 96 GB card, before a draft is
loaded (reference §3.5 E's 9.1 GiB; the simulated engine is calibrated on the same budget)."""
ESTIMATE_PRE_LOAD_FREE_BYTES = 95 * GIB
"""Free memory of an RTX PRO 6000 before the model loads; SGLang's budget grows by this per unit of mem_fraction_static."""
DEFAULT_MEM_FRACTION_STATIC = 0.833
"""SGLang's heuristic on a 96 GB card at TP 8 (reference §8.5), used when the profile leaves it unset."""
DRAFT_WEIGHT_BYTES_PER_RANK = 700 * 1024**2
"""The EAGLE-3 draft's weights on one rank (one dense layer and its share of the LM head), an estimate.

SGLang measures the KV budget after the target *and* the draft are loaded
(``KVCacheConfigurator._profile_available_bytes``), so these bytes come out of the pool."""


def mla_cell_bytes(kv_cache_dtype: str, speculative: bool) -> float:
    """Bytes of KV per token on one rank: MLA ``(kv_lora_rank + qk_rope) · layers · dtype``, plus the draft's share.

    MLA KV is not sharded across TP ranks; EAGLE adds ``cell · draft_layers / target_layers``
    (``pool_configurator.py``).
    """
    cell = (MLA_KV_LORA_RANK + MLA_QK_ROPE_HEAD_DIM) * TARGET_LAYERS * KV_DTYPE_BYTES[kv_cache_dtype]
    if speculative:
        cell += cell * DRAFT_LAYERS / TARGET_LAYERS
    return cell


def estimate_pool_tokens(
    profile: Profile,
    draft_weight_bytes: int = DRAFT_WEIGHT_BYTES_PER_RANK,
    *,
    with_drafter: bool | None = None,
) -> int:
    """An estimate of SGLang's ``max_total_num_tokens`` for a Kimi K2.5 INT4 profile on RTX PRO 6000s.

    SGLang measures the budget at start-up: ``rest = free_after_load − free_before_load · (1 − mem_fraction)``.
    Here it is anchored on the reference's 9.1 GiB at 0.85 and moved linearly with mem_fraction_static
    (the slope is the free memory before load); a speculative server loses the draft's weights from
    it. It is divided by the MLA cell size (the draft's share included) and rounded down to a page.
    Real servers report the true value in ``/server_info`` (``max_total_num_tokens``); prefer
    ``server.max_total_tokens`` or ``--pool`` when it is known. ``with_drafter=False`` estimates the
    same server launched without the drafter.
    """
    server = profile.server
    drafter = profile.speculative if with_drafter is None else with_drafter
    fraction = server.mem_fraction_static or DEFAULT_MEM_FRACTION_STATIC
    rest = ESTIMATE_REST_BYTES_AT_085 + (fraction - 0.85) * ESTIMATE_PRE_LOAD_FREE_BYTES
    if drafter:
        rest -= draft_weight_bytes
    cell = mla_cell_bytes(server.kv_cache_dtype, drafter)
    tokens = max(0, math.floor(rest / cell))
    return tokens // server.page_size * server.page_size


@dataclass(frozen=True)
class DrafterCost:
    """What the drafter takes from the KV pool of one rank: its share of every KV cell, and its weights.

    A server launched without the drafter has the speculative server's budget plus the draft's
    weights, divided by a cell without the draft's share.
    """

    cell_bytes: float
    """KV bytes per token with the draft's layer."""
    cell_bytes_without_draft: float
    draft_share_of_cell: float
    """The draft's fraction of each KV cell: draft layers / (target + draft layers)."""
    draft_weight_bytes: int
    """An estimate (``DRAFT_WEIGHT_BYTES_PER_RANK``); SGLang does not report target and draft apart."""
    pool_tokens: int
    """The speculative server's pool."""
    pool_tokens_without_drafter: int
    tokens_for_draft_kv: int
    """Tokens the pool would hold more without the draft's share of each cell."""
    tokens_for_draft_weights: int
    """Tokens the draft's weights take from the budget."""


def drafter_cost(
    profile: Profile,
    pool: int,
    cap: int | None = None,
    draft_weight_bytes: int = DRAFT_WEIGHT_BYTES_PER_RANK,
    baseline_pool: int | None = None,
) -> DrafterCost:
    """The drafter's share of ``pool`` (the speculative server's pool) and the pool a server without it would have.

    ``cap`` is ``--max-total-tokens`` when the profile sets it: it would cap the other server too.
    ``baseline_pool``, when known (an estimate made the same way), replaces the one derived from ``pool``.
    """
    server = profile.server
    with_draft = mla_cell_bytes(server.kv_cache_dtype, speculative=True)
    without = mla_cell_bytes(server.kv_cache_dtype, speculative=False)
    budget = pool * with_draft
    for_kv = math.floor(budget / without) - pool
    for_weights = math.floor(draft_weight_bytes / without)
    baseline = math.floor((budget + draft_weight_bytes) / without) // server.page_size * server.page_size
    if baseline_pool is not None:
        baseline = baseline_pool
    if cap is not None:
        baseline = min(baseline, cap)
    return DrafterCost(
        cell_bytes=with_draft,
        cell_bytes_without_draft=without,
        draft_share_of_cell=round(DRAFT_LAYERS / (TARGET_LAYERS + DRAFT_LAYERS), 6),
        draft_weight_bytes=draft_weight_bytes,
        pool_tokens=pool,
        pool_tokens_without_drafter=baseline,
        tokens_for_draft_kv=for_kv,
        tokens_for_draft_weights=for_weights,
    )


# --- What-ifs ------------------------------------------------------------------------------------
