"""KV-cache allocation for speculative decoding, as SGLang 0.5.23 computes it.

Transcribed from ``srt/mem_cache/allocation_sizing.py`` of the 0.5.23 wheel (the contract tests run
that file's own functions against these on a table of cases), for the EAGLE family with decode
context parallelism 1 (the allocation page is the page size):

* per request and decode step a request may take ``alloc_len`` KV slots:
  1 without speculation; ``max(steps·topk, D)`` when the page is 1 or topk is 1; otherwise the
  page-aligned footprint of every topk branch, ``max(ceil((page-1+steps)/page)·page·topk, D)``,
  where D is the widest draft the server may ever use (SGLang's ``max_speculative_num_draft_tokens``);
* the scheduler keeps ``reserve = 2·alloc_len`` slots ahead of each request's committed length
  (a double buffer for overlap scheduling), rounded up to whole pages;
* each row of the request-to-token table is widened by ``4 + D`` (or ``reserve + page - 1`` when
  the page is larger than 1).

With adaptive speculation D is ``max(candidate steps) + 1`` at all times, so a server that has
dropped to 0 steps still reserves for its widest tier; that is why "speculation off" in the
what-if means a server launched without speculation, not the adaptive server at 0 steps.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from agent.profile.schema import Profile

SGLANG_SOURCE = "srt/mem_cache/allocation_sizing.py"

ROW_EXTRA_BASE = 4
"""SGLang's fixed req->token row headroom (``extra = 4 + D``)."""


@dataclass(frozen=True)
class SpecShape:
    """The speculation parameters the KV formulas read; ``None`` in their place means no speculation.

    ``max_draft_tokens`` is the launch-time widest draft (adaptive: max candidate steps + 1);
    SGLang uses the larger of it and the active ``draft_tokens``.
    """

    steps: int
    topk: int
    draft_tokens: int
    max_draft_tokens: int | None = None

    @property
    def widest_draft(self) -> int:
        """SGLang's ``max_speculative_num_draft_tokens()``: the max of the active and launch-time widths."""
        if self.max_draft_tokens is None:
            return self.draft_tokens
        return max(self.draft_tokens, self.max_draft_tokens)


def ceil_to_page(tokens: int, page_size: int) -> int:
    return (tokens + page_size - 1) // page_size * page_size


def alloc_len_per_decode(spec: SpecShape | None, page_size: int) -> int:
    """KV slots one request may take in one decode step (``get_alloc_len_per_decode``)."""
    if page_size < 1:
        raise ValueError("page_size must be at least 1")
    if spec is None:
        return 1
    steps = spec.steps or 1  # SGLang: ``speculative_num_steps or 1`` (an adaptive tier may be 0)
    topk = spec.topk or 1
    widest = spec.widest_draft
    if page_size == 1 or topk == 1:
        return max(steps * topk, widest)
    pages_per_branch = ((page_size - 1) + steps + page_size - 1) // page_size
    return max(pages_per_branch * page_size * topk, widest)


def reserve_per_decode(spec: SpecShape | None, page_size: int) -> int:
    """Slots kept ahead of each request's committed length (``get_alloc_reserve_per_decode``)."""
    return 2 * alloc_len_per_decode(spec, page_size)


def next_alloc_len(committed: int, allocated: int, reserve: int, page_size: int) -> int:
    """A request's allocated length after the next decode step's allocation (``page_aligned_decode_alloc_lens``)."""
    return max(allocated, ceil_to_page(committed + reserve, page_size))


def req_to_token_extra_context_len(spec: SpecShape | None, page_size: int) -> int:
    """Row headroom of the req->token table beyond the context length (``get_req_to_token_extra_context_len``)."""
    extra = ROW_EXTRA_BASE + (spec.widest_draft if spec is not None else 0)
    if spec is not None and page_size > 1:
        extra = max(extra, reserve_per_decode(spec, page_size) + page_size - 1)
    return extra


def spec_shape_for_profile(profile: Profile) -> SpecShape | None:
    """The shape SGLang 0.5.23 resolves for a profile, as far as KV sizing is concerned.

    * No speculation → None.
    * Adaptive (and supported): topk 1, draft tokens = steps + 1, and the widest candidate
      (max of the adaptive config's candidate steps + 1) reserved all the time.
    * topk 1 without adaptive: draft tokens forced to steps + 1 (SGLang adjusts them with a warning).
    * Otherwise the profile's steps, topk and draft tokens as given.
    """
    from agent.sglang import adaptive
    from agent.sglang.rules import adaptive_unsupported_reason

    spec = profile.speculation
    if not profile.speculative or spec.num_steps is None:
        return None
    steps = spec.num_steps
    topk = spec.eagle_topk or 1
    if spec.adaptive and adaptive_unsupported_reason(profile) is None:
        config = adaptive.adaptive_config(profile)
        assert config is not None  # adaptive and speculative
        widest_steps = max(adaptive.candidate_steps(config))
        return SpecShape(steps=steps, topk=1, draft_tokens=steps + 1, max_draft_tokens=widest_steps + 1)
    if topk == 1:
        return SpecShape(steps=steps, topk=1, draft_tokens=steps + 1)
    return SpecShape(steps=steps, topk=topk, draft_tokens=spec.num_draft_tokens or steps + 1)


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
"""KV budget per rank of Kimi K2.5 INT4 at mem_fraction_static 0.85 on a 96 GB card (reference §3.5 E)."""
ESTIMATE_PRE_LOAD_FREE_BYTES = 95 * GIB
"""Free memory of an RTX PRO 6000 before the model loads; SGLang's budget grows by this per unit of mem_fraction_static."""
DEFAULT_MEM_FRACTION_STATIC = 0.833
"""SGLang's heuristic on a 96 GB card at TP 8 (reference §8.5), used when the profile leaves it unset."""


def mla_cell_bytes(kv_cache_dtype: str, speculative: bool) -> float:
    """Bytes of KV per token on one rank: MLA ``(kv_lora_rank + qk_rope) · layers · dtype``, plus the draft's share.

    MLA KV is not sharded across TP ranks; EAGLE adds ``cell · draft_layers / target_layers``
    (``pool_configurator.py``).
    """
    cell = (MLA_KV_LORA_RANK + MLA_QK_ROPE_HEAD_DIM) * TARGET_LAYERS * KV_DTYPE_BYTES[kv_cache_dtype]
    if speculative:
        cell += cell * DRAFT_LAYERS / TARGET_LAYERS
    return cell


def estimate_pool_tokens(profile: Profile) -> int:
    """An estimate of SGLang's ``max_total_num_tokens`` for a Kimi K2.5 INT4 profile on RTX PRO 6000s.

    SGLang measures the budget at start-up: ``rest = free_after_load − free_before_load · (1 − mem_fraction)``.
    Here it is anchored on the reference's 9.1 GiB at 0.85 and moved linearly with mem_fraction_static
    (the slope is the free memory before load), then divided by the MLA cell size and rounded down to
    a page. Real servers report the true value in ``/server_info`` (``max_total_num_tokens``); prefer
    ``server.max_total_tokens`` or ``--pool`` when it is known.
    """
    server = profile.server
    fraction = server.mem_fraction_static or DEFAULT_MEM_FRACTION_STATIC
    rest = ESTIMATE_REST_BYTES_AT_085 + (fraction - 0.85) * ESTIMATE_PRE_LOAD_FREE_BYTES
    cell = mla_cell_bytes(server.kv_cache_dtype, profile.speculative)
    tokens = max(0, math.floor(rest / cell))
    return tokens // server.page_size * server.page_size


# --- What-ifs ------------------------------------------------------------------------------------

PoolSource = Literal["given", "profile", "estimate"]


@dataclass(frozen=True)
class KvSide:
    """KV use of N requests of context L on one side (speculation on or off)."""

    alloc_len_per_decode: int
    reserve_per_decode: int
    lookahead_per_request: int
    """Slots a request holds beyond its context at a decode step (page rounding included)."""
    tokens_per_request: int
    tokens_held: int
    """All slots the N requests hold: context plus look-ahead."""
    tokens_reserved: int
    """The look-ahead part of ``tokens_held``."""
    requests_that_fit: int
    """How many such requests the pool holds at once."""
    row_extra: int


@dataclass(frozen=True)
class KvWhatIf:
    running: int
    context: int
    page_size: int
    pool: int
    pool_source: PoolSource
    spec: SpecShape | None
    on: KvSide
    off: KvSide

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _side(spec: SpecShape | None, page_size: int, running: int, context: int, pool: int) -> KvSide:
    alloc = alloc_len_per_decode(spec, page_size)
    reserve = 2 * alloc
    if spec is None:
        # Without speculation SGLang's decode takes one slot per step (a fresh page when the last is
        # full: ``ScheduleBatch.new_tokens_required_next_decode``); the reserve helper is not used.
        per_request = ceil_to_page(context + 1, page_size)
    else:
        per_request = next_alloc_len(context, ceil_to_page(context, page_size), reserve, page_size)
    return KvSide(
        alloc_len_per_decode=alloc,
        reserve_per_decode=reserve,
        lookahead_per_request=per_request - context,
        tokens_per_request=per_request,
        tokens_held=running * per_request,
        tokens_reserved=running * (per_request - context),
        requests_that_fit=pool // per_request,
        row_extra=req_to_token_extra_context_len(spec, page_size),
    )


def kv_whatif(profile: Profile, running: int, context: int, pool: int | None = None) -> KvWhatIf:
    """KV held and reserved by ``running`` requests of ``context`` tokens, speculation on and off.

    "On" is the profile as SGLang resolves it; "off" is the same server launched without speculation.
    Both use the same pool: ``pool`` when given, else ``server.max_total_tokens``, else
    :func:`estimate_pool_tokens`.
    """
    if running < 0:
        raise ValueError("running must be 0 or more")
    if context < 1:
        raise ValueError("context must be at least 1 token")
    source: PoolSource
    if pool is not None:
        if pool < 1:
            raise ValueError("pool must be at least 1 token")
        source = "given"
    elif profile.server.max_total_tokens is not None:
        pool, source = profile.server.max_total_tokens, "profile"
    else:
        pool, source = estimate_pool_tokens(profile), "estimate"
    page = profile.server.page_size
    spec = spec_shape_for_profile(profile)
    return KvWhatIf(
        running=running,
        context=context,
        page_size=page,
        pool=pool,
        pool_source=source,
        spec=spec,
        on=_side(spec, page, running, context, pool),
        off=_side(None, page, running, context, pool),
    )
