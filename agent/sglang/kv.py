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
dropped to 0 steps ("off") still reserves for its widest tier, and it keeps the drafter's weights
and its share of every KV cell. The what-if therefore has three states: speculating, at 0 steps,
and the same server launched without the drafter (the baseline).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from agent.profile.schema import Profile
from agent.sglang import adaptive
from agent.sglang.kv_pool import (
    DEFAULT_MEM_FRACTION_STATIC,
    DRAFT_LAYERS,
    DRAFT_WEIGHT_BYTES_PER_RANK,
    ESTIMATE_PRE_LOAD_FREE_BYTES,
    ESTIMATE_REST_BYTES_AT_085,
    GIB,
    KV_DTYPE_BYTES,
    MLA_KV_LORA_RANK,
    MLA_QK_ROPE_HEAD_DIM,
    TARGET_LAYERS,
    DrafterCost,
    drafter_cost,
    estimate_pool_tokens,
    mla_cell_bytes,
)
from agent.sglang.support import adaptive_unsupported_reason, threshold_unavailable_reason
from agent.wire.api import KV_STATES

# kv is the one name callers know: the pool estimate and the drafter cost live in kv_pool.
__all__ = [
    "DEFAULT_MEM_FRACTION_STATIC",
    "DRAFT_LAYERS",
    "DRAFT_WEIGHT_BYTES_PER_RANK",
    "ESTIMATE_PRE_LOAD_FREE_BYTES",
    "ESTIMATE_REST_BYTES_AT_085",
    "GIB",
    "KV_DTYPE_BYTES",
    "MLA_KV_LORA_RANK",
    "MLA_QK_ROPE_HEAD_DIM",
    "TARGET_LAYERS",
    "DrafterCost",
    "drafter_cost",
    "estimate_pool_tokens",
    "mla_cell_bytes",
]

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


PLAIN_DECODE_RESERVE = 2
"""Patch 03: a batch planned at 0 steps reserves 1 slot for its token plus what the batch in flight may
commit (1 when it too ran at 0 steps): 2 in steady state, as a plain decode."""


def zero_step_reserve(reserve: int) -> int:
    """The per-request reserve of a steady 0-step batch on patch 03's plain path (never above SGLang's)."""
    return min(reserve, PLAIN_DECODE_RESERVE) if reserve > 0 else 0


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


def zero_step_shape_for_profile(profile: Profile) -> SpecShape | None:
    """The shape of this profile's server while it runs at 0 steps ("off" inside the speculative server).

    SGLang's 0-step tier is ``speculative_num_steps = 0`` with one draft token, while
    ``max_speculative_num_draft_tokens`` keeps the widest candidate: the KV formulas then give the
    widest candidate's reserve (``max(1, D)``), exactly as when speculating. None when the server
    never runs at 0 steps: no speculation, no adaptive mode, or no 0-step candidate (no threshold).
    """
    on = spec_shape_for_profile(profile)
    if on is None or on.max_draft_tokens is None:
        return None
    config = adaptive.adaptive_config(profile)
    if config is None or adaptive.NO_SPECULATION_STEPS not in adaptive.candidate_steps(config):
        return None
    return SpecShape(steps=0, topk=1, draft_tokens=1, max_draft_tokens=on.max_draft_tokens)


def zero_step_unavailable_reason(profile: Profile) -> str | None:
    """Why this profile's server never runs at 0 steps, in an operator's words; None when it does."""
    if zero_step_shape_for_profile(profile) is not None:
        return None
    unavailable = threshold_unavailable_reason(profile)
    if unavailable is not None:
        return unavailable
    return "no speculation.threshold is set, so the 0-step state is not built"


PoolSource = Literal["given", "profile", "estimate"]


@dataclass(frozen=True)
class KvSide:
    """KV use of N requests of context L in one server state (speculating, at 0 steps, or no drafter)."""

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
    pool_tokens: int
    """The pool of this server (a server without the drafter has a larger one)."""
    fits: bool
    """Whether the N requests fit in the pool at once; when not, SGLang runs ``requests_that_fit`` of them."""


@dataclass(frozen=True)
class KvWhatIf:
    """N requests of L tokens in three states: the profile's server speculating ("on") and at 0 steps
    ("off", None when it never runs at 0 steps), and the same server launched without the drafter
    ("baseline"). ``on`` and ``drafter`` are None for a profile without speculation."""

    running: int
    context: int
    page_size: int
    pool: int
    """The pool of the profile's own server."""
    pool_source: PoolSource
    spec: SpecShape | None
    zero_step: SpecShape | None
    on: KvSide | None
    off: KvSide | None
    baseline: KvSide
    drafter: DrafterCost | None
    off_unavailable: str | None
    """Why there is no "off" state, when ``off`` is None."""

    @property
    def own(self) -> KvSide:
        """The profile's own server (speculating, or the baseline when it does not speculate)."""
        return self.on if self.on is not None else self.baseline

    @property
    def overfull(self) -> bool:
        return not self.own.fits

    def fit_summary(self) -> list[str]:
        """Whether the requests fit, in words: one line per pool that cannot hold them all at once, and
        one naming the states that can (every state the answer has is named: "no drafter" too)."""
        groups: dict[tuple[int, int], list[tuple[str, KvSide]]] = {}
        fitting: list[str] = []
        states = (
            (KV_STATES["on"], self.on),
            (KV_STATES["off"], self.off),
            (KV_STATES["baseline"], self.baseline),
        )
        for label, side in states:
            if side is None:
                continue
            if side.fits:
                fitting.append(label)
            else:
                groups.setdefault((side.tokens_held, side.pool_tokens), []).append((label, side))
        lines = [
            f"does not fit ({', '.join(label for label, _ in group)}): {self.running} requests of "
            f"{self.context} tokens hold {held:,} tokens, the pool has {pool:,}; SGLang runs "
            f"{group[0][1].requests_that_fit} of them at once and queues the rest (and retracts running "
            "requests when decoding runs out of KV)"
            for (held, pool), group in groups.items()
        ]
        if fitting:
            lines.append(f"fits ({', '.join(fitting)}): the pool holds all {self.running} requests at once")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "overfull": self.overfull, "fit_summary": self.fit_summary()}


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
        pool_tokens=pool,
        fits=running * per_request <= pool,
    )


def kv_whatif(profile: Profile, running: int, context: int, pool: int | None = None) -> KvWhatIf:
    """KV held and reserved by ``running`` requests of ``context`` tokens: speculating, at 0 steps, no drafter.

    The pool is the profile's server's: ``pool`` when given, else ``server.max_total_tokens``, else
    :func:`estimate_pool_tokens`. "On" and "off" share it (the 0-step state keeps the drafter's
    memory and the widest candidate's reserve); the baseline has it plus what the drafter takes
    (:func:`drafter_cost`).
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
    zero = zero_step_shape_for_profile(profile)
    drafter: DrafterCost | None = None
    baseline_pool = pool
    if spec is not None:
        estimated = estimate_pool_tokens(profile, with_drafter=False) if source == "estimate" else None
        drafter = drafter_cost(profile, pool, cap=profile.server.max_total_tokens, baseline_pool=estimated)
        baseline_pool = drafter.pool_tokens_without_drafter
    return KvWhatIf(
        running=running,
        context=context,
        page_size=page,
        pool=pool,
        pool_source=source,
        spec=spec,
        zero_step=zero,
        on=_side(spec, page, running, context, pool) if spec is not None else None,
        off=_side(zero, page, running, context, pool) if zero is not None else None,
        baseline=_side(None, page, running, context, baseline_pool),
        drafter=drafter,
        off_unavailable=zero_step_unavailable_reason(profile),
    )


def _zero_step_reserve_of(profile: Profile, zero: SpecShape | None, page_size: int) -> int | None:
    """What a 0-step batch reserves per request: SGLang's full reserve, or a plain decode's (patch 03)."""
    if zero is None:
        return None
    full = reserve_per_decode(zero, page_size)
    return zero_step_reserve(full) if profile.speculation.zero_step == "plain" else full


def view_fields(profile: Profile, page_size: int, pool: int | None) -> dict[str, Any]:
    """The ``KvView`` fields (``agent.wire``) about "off" against no drafter, for a server running ``profile``.

    ``pool`` is the server's ``max_total_num_tokens`` when known. Keys: ``reserve_per_request_zero_step``
    (None when the server never runs at 0 steps), ``pool_tokens_without_drafter``,
    ``draft_share_of_cell`` and ``draft_weight_bytes`` (None without speculation).
    """
    zero = zero_step_shape_for_profile(profile)
    fields: dict[str, Any] = {
        "reserve_per_request_zero_step": _zero_step_reserve_of(profile, zero, page_size),
        "pool_tokens_without_drafter": None,
        "draft_share_of_cell": None,
        "draft_weight_bytes": None,
    }
    if not profile.speculative:
        return fields
    cost = drafter_cost(profile, pool or 0, cap=profile.server.max_total_tokens)
    fields["draft_share_of_cell"] = cost.draft_share_of_cell
    fields["draft_weight_bytes"] = cost.draft_weight_bytes
    if pool:
        fields["pool_tokens_without_drafter"] = cost.pool_tokens_without_drafter
    return fields
