"""Zero-step rounds as plain decodes: the catch-up (k25console patch 03).

On the first drafting round after 0-step rounds, one draft extend over the last positions each
request decoded without the draft (at most the draft-extend width), through SGLang's own
``_draft_extend_for_decode`` and its graph, before the draft: the draft then drafts from current
state, so acceptance right after a resume is what it was before. The positions, tokens and hidden
states come from the ring (``k25_zero_step_ring``).

SGLang imports are local to the function: the runtime is imported by the scheduler's batch code,
which loads early.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import torch
from sglang.srt.speculative.k25_zero_step_ring import HiddenRing


def catch_up(worker: Any, ring: HiddenRing, batch: Any, width: int, ndt: int) -> torch.Tensor:
    """One draft extend of ``ndt`` rows per request, over the last positions each one missed; per
    request, how many positions it re-extended (0: none held).

    A request with nothing held that ends at s-1 (its draft state is current, or unknown) gets a
    1-token window at s, the scratch positions the draft overwrites this round, and keeps its
    own draft input: its row of the output is dropped.
    """
    from sglang.kernels.ops.speculative.cache_locs import assign_extend_cache_locs_uniform_func
    from sglang.srt.model_executor.forward_batch_info import ForwardMode
    from sglang.srt.speculative.eagle_info import EagleDraftInput

    device = batch.seq_lens.device
    bs = batch.seq_lens.shape[0]
    held = ring.run_lengths(batch.req_pool_indices, batch.seq_lens, width)
    lengths = held.clamp(min=1)
    start = batch.seq_lens - held.to(batch.seq_lens.dtype)
    tokens, hidden = ring.gather(batch.req_pool_indices, start, lengths, ndt)

    view = copy.copy(batch)
    view.forward_mode = ForwardMode.DECODE
    view.seq_lens = start
    view.seq_lens_sum = None
    view.return_logprob = False
    if batch.seq_lens_cpu is not None:  # keep the path the backend's metadata expects (one sync)
        view.seq_lens_cpu = start.cpu().to(batch.seq_lens_cpu.dtype)
    view.out_cache_loc = assign_extend_cache_locs_uniform_func(
        req_pool_indices=batch.req_pool_indices,
        req_to_token=worker.req_to_token_pool.req_to_token,
        start_offset=start,
        batch_size=bs,
        draft_token_num=ndt,
        device=device,
    )
    draft_input = batch.spec_info
    result = SimpleNamespace(
        prepared_draft_extend_inputs=None,
        accept_lens=lengths,
        next_token_ids=tokens,
        logits_output=SimpleNamespace(hidden_states=hidden),
        next_draft_input=EagleDraftInput(bonus_tokens=draft_input.bonus_tokens),
        new_seq_lens=batch.seq_lens,
    )
    worker.draft_worker._draft_extend_for_decode(view, result)
    caught = result.next_draft_input
    keep = (held > 0).unsqueeze(1)

    def pick(new: Any, old: Any) -> Any:
        if old is None or new is None or new.shape != old.shape:
            return new
        return torch.where(keep.to(new.device), new, old)

    draft_input.topk_p = pick(caught.topk_p, draft_input.topk_p)
    draft_input.topk_index = pick(caught.topk_index, draft_input.topk_index)
    draft_input.hidden_states = pick(caught.hidden_states, draft_input.hidden_states)
    if caught.draft_probs is not None:
        draft_input.draft_probs = pick(caught.draft_probs, draft_input.draft_probs)
    return held
