"""How long one forward pass of the modelled deployment takes, from the calibration's parameters.

Pure functions of the batch (query tokens, KV tokens read) and the speculation shape, so that the
engine, the calibration test and any what-if read the same numbers. ``agent.sim.calibration``
explains each parameter.
"""

from __future__ import annotations

from agent.sim.acceptance import mean_accept_length
from agent.sim.calibration import Calibration, TargetCosts


def experts_touched(cost: TargetCosts, tokens: int) -> float:
    """Expected fraction of routed experts a pass of ``tokens`` tokens reads (uniform routing)."""
    if tokens <= 0:
        return 0.0
    miss = 1.0 - cost.active_experts / cost.routed_experts
    return 1.0 - miss**tokens


def target_pass_s(cal: Calibration, query_tokens: int, kv_tokens: int, eager: bool = False) -> float:
    """One target forward pass over ``query_tokens`` tokens that together read ``kv_tokens`` KV slots."""
    t = cal.target
    # Roofline: a small pass is bound by reading the experts it touches, a large one by compute.
    moe = max(t.experts_read_s * experts_touched(t, query_tokens), t.token_s * query_tokens)
    seconds = t.fixed_s + moe + t.kv_token_s * kv_tokens
    return seconds * (t.eager_factor if eager else 1.0)


def draft_pass_s(cal: Calibration, tokens: int) -> float:
    return cal.draft.fixed_s + cal.draft.token_s * tokens


def decode_step_s(cal: Calibration, batch: int, kv_tokens: int, eager: bool = False) -> float:
    """A plain decode step of a server launched without speculation."""
    return target_pass_s(cal, batch, kv_tokens, eager)


def zero_step_s(
    cal: Calibration,
    batch: int,
    kv_tokens: int,
    eager: bool = False,
    skip_draft_extend: bool = False,
    plain: bool = False,
) -> float:
    """A round at 0 steps inside a speculative server: a plain decode step of the batch, plus the 0-step
    path (``ZeroStepCosts``). On SGLang's own path (``plain`` False: the one-node verify and its
    bookkeeping) the draft-extend pass over the batch's tokens follows unless the profile skips it
    (``SGLANG_SPEC_SKIP_ZERO_STEP_DRAFT_EXTEND``); patch 03's plain path runs none."""
    zero = cal.spec.plain_zero_step if plain else cal.spec.zero_step
    seconds = decode_step_s(cal, batch, kv_tokens, eager) + zero.round_s + zero.request_s * batch
    return seconds if (skip_draft_extend or plain) else seconds + draft_pass_s(cal, batch)


def spec_step_s(
    cal: Calibration,
    batch: int,
    kv_tokens: int,
    steps: int,
    topk: int,
    draft_tokens: int,
    eager: bool = False,
    skip_draft_extend: bool = False,
    plain: bool = False,
) -> float:
    """One EAGLE-3 round (spec v2): ``steps`` draft passes, one verify, one draft-extend pass; at
    ``steps == 0`` a 0-step round (``zero_step_s``, where ``skip_draft_extend`` and ``plain`` apply)."""
    if steps <= 0:
        return zero_step_s(cal, batch, kv_tokens, eager, skip_draft_extend, plain)
    verify_tokens = batch * draft_tokens
    verify_kv = kv_tokens * (1.0 + cal.target.verify_kv_factor * (draft_tokens - 1))
    drafting = sum(draft_pass_s(cal, batch * (1 if i == 0 else topk)) for i in range(steps))
    return (
        drafting
        + target_pass_s(cal, verify_tokens, int(verify_kv), eager)
        + draft_pass_s(cal, verify_tokens)
        + cal.spec.round_overhead_s
    )


def prefill_step_s(
    cal: Calibration,
    new_tokens: int,
    attention_pairs: int,
    speculative: bool,
    arrivals: int = 0,
    plain_zero_steps: bool = False,
) -> float:
    """A prefill (extend) pass over ``new_tokens`` tokens; ``attention_pairs`` = Σ new × visible keys.

    On a speculative server the draft extends over the same tokens, and each of the ``arrivals``
    (requests whose prefill this pass completes) costs ``ArrivalCosts.request_s`` more; neither when
    the batch they join runs at 0 steps on patch 03's plain path (``plain_zero_steps``) and the
    arrival path is the patched one (``ArrivalCosts.at_zero_steps`` False)."""
    t = cal.target
    moe = max(t.experts_read_s * experts_touched(t, new_tokens), t.prefill_token_s * new_tokens)
    fixed = t.fixed_s if t.prefill_fixed_s is None else t.prefill_fixed_s
    seconds = fixed + moe + t.prefill_pair_s * attention_pairs
    if speculative and not (plain_zero_steps and not cal.spec.arrival.at_zero_steps):
        seconds += cal.prefill_draft_factor * draft_pass_s(cal, new_tokens)
        seconds += cal.spec.arrival.request_s * arrivals
    return seconds


def crossover_batch(
    cal: Calibration,
    steps: int,
    topk: int,
    draft_tokens: int,
    context: int,
    max_batch: int = 4096,
    skip_draft_extend: bool = False,
    plain: bool = False,
) -> int | None:
    """The smallest running batch at which a speculative round delivers fewer tokens per second than a
    0-step round of the same server, at ``context`` tokens per request; None if it never does.

    This is the speculation threshold the model recommends for that configuration: at or above it
    the server should decode without drafting.
    """
    accept = mean_accept_length(cal.acceptance, steps, topk)
    for batch in range(1, max_batch + 1):
        kv_tokens = batch * context
        speculating = batch * accept / spec_step_s(cal, batch, kv_tokens, steps, topk, draft_tokens)
        off = batch / zero_step_s(cal, batch, kv_tokens, skip_draft_extend=skip_draft_extend, plain=plain)
        if speculating < off:
            return batch
    return None
