"""A prefill that joins a batch decoding at 0 steps runs as a plain server's (issue 36, step 2).

The real engine (2026-12-06, one H100) showed an arrival at 0 steps paying for the draft's extend over
its prompt and for a stream sync in the ring put; neither is used while the batch decodes at 0 steps.
Such a prefill keeps only each request's last hidden state, leaves the draft's extend to the
catch-up, and the catch-up on the first drafting round makes the new request's draft state.
"""

from __future__ import annotations

import json

import torch

from .stand_ins import CaptureHiddenMode, ForwardMode, Overlay
from .world import World, plain_prefill_resume, plain_rounds


def test_a_prefill_joining_a_zero_step_batch_is_plain(zero: Overlay, cpu_lens: bool) -> None:
    """a prefill that joins a 0-step batch is a plain server's, and counted"""
    story = plain_prefill_resume(zero, cpu_lens)
    counters = story.world.ctl.counters
    assert counters.plain_prefills == 1, json.dumps(counters.as_dict())
    assert counters.errors == 0, json.dumps(counters.as_dict())


def test_its_draft_input_is_the_bonus_token_and_stubs(zero: Overlay, cpu_lens: bool) -> None:
    """its draft input: the bonus token, one token per request, SGLang's zero stubs"""
    story = plain_prefill_resume(zero, cpu_lens)
    draft = story.resume.next_draft_input
    w = story.world
    assert draft.bonus_tokens.tolist() == [w.token_at(6, 5)]
    assert (draft.num_tokens_per_req, draft.num_tokens_for_logprob_per_req) == (1, 1)
    assert draft.topk_p is not None and float(draft.topk_p.abs().sum()) == 0.0
    assert draft.hidden_states is not None and float(draft.hidden_states.abs().sum()) == 0.0


def test_the_catch_up_makes_the_new_requests_draft_state(zero: Overlay, cpu_lens: bool) -> None:
    """the first drafting round re-extends the new request over its prompt's end and its round"""
    story = plain_prefill_resume(zero, cpu_lens)
    w = story.world
    view, result = w.extends[-1]
    widths = result.accept_lens.tolist()
    assert widths[4] == 2, f"slot 6: the prompt's last position and one 0-step round, got {widths}"
    start = view.seq_lens.tolist()[4]
    tokens = result.next_token_ids.reshape(5, 4).tolist()[4][:2]
    hidden = result.logits_output.hidden_states.reshape(5, 4, -1)[4, :2, 0].tolist()
    assert start == 5 and tokens == [w.token_at(6, 5), w.token_at(6, 6)], f"{start} {tokens}"
    assert hidden == [float(6 * 100 + 5), float(6 * 100 + 6)], str(hidden)


def test_no_prefill_is_plain_before_a_zero_step_decode(zero: Overlay, cpu_lens: bool) -> None:
    """a prefill on a server that has not decoded at 0 steps is SGLang's, every position kept"""
    w = World(zero, cpu_lens)
    plain, out = w.hooked_prefill([3], [5], [5])
    assert not plain and out.next_draft_input == "the draft's extend"
    assert w.ctl.counters.plain_prefills == 0
    assert not w.ctl.streak.pending_in([3]), "the draft's extend made its draft state current"
    assert w.ctl.ring is not None and w.ctl.ring.tags[3].tolist().count(4) == 1, "the prompt's last position"


def test_a_prefill_that_asks_for_hidden_states_keeps_sglangs_path(zero: Overlay, cpu_lens: bool) -> None:
    """a prefill whose requests ask for hidden states is SGLang's (it needs them all)"""
    story = plain_rounds(zero, cpu_lens)
    w = story.world
    batch = w.batch([6], [6], ForwardMode.EXTEND)
    batch.return_hidden_states_mode = CaptureHiddenMode.FULL
    assert not w.ctl.plain_prefill(batch)


def test_the_last_rows_of_an_extend(zero: Overlay, cpu_lens: bool) -> None:
    """each request's last row of a flat extend, as a device index"""
    rows = zero.ring.LastRows()
    got = rows.of([3, 1, 4], torch.device(zero.device))
    assert got.tolist() == [2, 3, 7] and got.device.type == torch.device(zero.device).type
    assert rows.of([2], torch.device(zero.device)).tolist() == [1], "the buffer is used again"
