"""Resuming: the catch-up re-extends exactly the positions the draft missed, once."""

from __future__ import annotations

import json

from .stand_ins import Overlay
from .world import first_resume, gap_resume, late_prefill_resume


def test_one_catch_up_ran(zero: Overlay, cpu_lens: bool) -> None:
    """one catch-up ran"""
    w = first_resume(zero, cpu_lens).world
    assert w.ctl.counters.catchups == 1 and len(w.extends) == 1, json.dumps(w.ctl.counters.as_dict())


def test_the_widths(zero: Overlay, cpu_lens: bool) -> None:
    """widths: 4 for the long streak, 3 for the late prefill (prompt end + 2 rounds)"""
    w = first_resume(zero, cpu_lens).world
    widths = w.extends[0][1].accept_lens.tolist()
    assert widths[:2] == [4, 3], str(widths)


def test_the_extend_starts_where_the_missed_positions_start(zero: Overlay, cpu_lens: bool) -> None:
    """the extend starts W positions before the committed length"""
    story = first_resume(zero, cpu_lens)
    view, result = story.world.extends[0]
    widths = result.accept_lens.tolist()
    starts = view.seq_lens.tolist()
    slots = [2, 5, 0, 1]
    assert starts == [story.lens[s] - n for s, n in zip(slots, widths, strict=True)], f"{starts}"


def test_tokens_and_hiddens_are_those_of_the_missed_positions(zero: Overlay, cpu_lens: bool) -> None:
    """tokens and hiddens are those of the missed positions, zero-padded"""
    story = first_resume(zero, cpu_lens)
    w = story.world
    view, result = w.extends[0]
    slots = [2, 5, 0, 1]
    widths = result.accept_lens.tolist()
    starts = view.seq_lens.tolist()
    tokens = result.next_token_ids.reshape(len(slots), 4).tolist()
    hidden = result.logits_output.hidden_states.reshape(len(slots), 4, -1)[:, :, 0].tolist()
    for row, (slot, start, n) in enumerate(zip(slots, starts, widths, strict=True)):
        for col in range(4):
            pos = start + col
            want_tok = w.token_at(slot, pos) if col < n else 0
            want_hid = float(slot * 100 + pos) if col < n else 0.0
            assert (tokens[row][col], hidden[row][col]) == (want_tok, want_hid), f"slot {slot} position {pos}"


def test_the_extend_writes_the_draft_kv_of_those_positions(zero: Overlay, cpu_lens: bool) -> None:
    """the extend writes the draft KV of exactly those positions"""
    w = first_resume(zero, cpu_lens).world
    view = w.extends[0][0]
    starts = view.seq_lens.tolist()
    want = [
        int(w.req_to_token[s, p])
        for s, st in zip([2, 5, 0, 1], starts, strict=True)
        for p in range(st, st + 4)
    ]
    assert view.out_cache_loc.tolist() == want


def test_the_draft_input_took_the_catch_ups_output(zero: Overlay, cpu_lens: bool) -> None:
    """the draft input took the catch-up's output"""
    story = first_resume(zero, cpu_lens)
    assert int(story.resume.spec_info.topk_index[0, 0]) == 7


def test_a_second_drafting_round_does_not_catch_up_again(zero: Overlay, cpu_lens: bool) -> None:
    """a second drafting round does not catch up again"""
    story = first_resume(zero, cpu_lens)
    story.world.ctl.maybe_catch_up(story.resume)
    assert story.world.ctl.counters.catchups == 1


def test_a_request_prefilled_after_the_plain_rounds_is_caught_up_with_the_rest(
    zero: Overlay, cpu_lens: bool
) -> None:
    """a resume batch with a request prefilled after the 0-step rounds: all caught up"""
    story = late_prefill_resume(zero, cpu_lens)
    kept = [int(x) for x in story.resume.spec_info.topk_index[:, 0].tolist()]
    assert kept == [7] * 5, f"{kept}"


def test_a_request_prefilled_last_catches_up_over_its_prompts_end(zero: Overlay, cpu_lens: bool) -> None:
    """a request prefilled last catches up over its prompt's end only"""
    w = late_prefill_resume(zero, cpu_lens).world
    held = [int(x) for x in w.ctl.last_caught.tolist()]
    assert held[4] == 1, f"{held}"


def test_rows_with_nothing_held_keep_their_draft_input(zero: Overlay, cpu_lens: bool) -> None:
    """rows with nothing held before s keep their draft input"""
    story = gap_resume(zero, cpu_lens)
    kept = [int(x) for x in story.resume.spec_info.topk_index[:, 0].tolist()]
    assert kept == [3, 3], f"{kept}"
    assert story.world.ctl.counters.catchups_skipped >= 2, json.dumps(story.world.ctl.counters.as_dict())


def test_no_ring_hook_failed(zero: Overlay, cpu_lens: bool) -> None:
    """no ring hook failed"""
    w = gap_resume(zero, cpu_lens).world
    assert w.ctl.counters.errors == 0 and not w.ctl.ring_off, str(w.ctl.counters.last_error)


def test_without_the_future_map_the_draft_input_gets_zero_stubs(zero: Overlay, cpu_lens: bool) -> None:
    """without the overlap scheduler's future map, the draft input gets SGLang's zero stubs"""
    story = gap_resume(zero, cpu_lens)
    w, lens = story.world, story.lens
    w.zero_round([2, 5, 0, 1], [lens[s] for s in (2, 5, 0, 1)], overlap=False)
    assert w.last_round is not None
    stubbed = w.last_round[1].next_draft_input
    assert stubbed.topk_p is not None and stubbed.hidden_states is not None
