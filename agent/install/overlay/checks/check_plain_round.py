"""The 0-step round as a plain decode: what it forwards, what it returns, what it reserves."""

from __future__ import annotations

from .stand_ins import ForwardMode, Overlay
from .world import plain_rounds


def test_a_plain_round_forwards_in_decode_mode(zero: Overlay, cpu_lens: bool) -> None:
    """a plain round forwards in DECODE mode with the plain decode state bound"""
    w = plain_rounds(zero, cpu_lens).world
    forward_batch, backend, is_verify = w.forwards[-1]
    assert forward_batch.forward_mode is ForwardMode.DECODE
    assert backend == "plain decode backend", backend
    assert w.worker.target_worker.model_runner.attn_backend == "verify backend", "the backend is put back"
    assert is_verify


def test_one_token_per_request(zero: Overlay, cpu_lens: bool) -> None:
    """one token per request: its bonus token, at the committed length, into that KV slot"""
    story = plain_rounds(zero, cpu_lens)
    w = story.world
    assert w.last_round is not None
    batch = w.last_round[0]
    slots = batch.req_pool_indices.tolist()
    lens = [story.lens[s] - 1 for s in slots]
    forward_batch = w.forwards[-1][0]
    detail = f"{forward_batch.input_ids.tolist()} {forward_batch.seq_lens.tolist()}"
    assert forward_batch.input_ids.tolist() == [
        w.token_at(s, n - 1) for s, n in zip(slots, lens, strict=True)
    ], detail
    assert forward_batch.seq_lens.tolist() == [n + 1 for n in lens], detail
    assert forward_batch.out_cache_loc.tolist() == [
        int(w.req_to_token[s, n]) for s, n in zip(slots, lens, strict=True)
    ], detail


def test_the_result_is_what_the_scheduler_reads(zero: Overlay, cpu_lens: bool) -> None:
    """the result: sampled tokens, accept lengths 1, lengths + 1, published"""
    story = plain_rounds(zero, cpu_lens)
    w = story.world
    assert w.last_round is not None
    batch, out, published = w.last_round
    slots = batch.req_pool_indices.tolist()
    lens = [story.lens[s] - 1 for s in slots]
    detail = f"{out.accept_lens.tolist()} {out.new_seq_lens.tolist()}"
    assert out.next_token_ids.tolist() == [w.token_at(s, n) for s, n in zip(slots, lens, strict=True)], detail
    assert out.accept_lens.tolist() == [1] * len(slots), detail
    assert out.new_seq_lens.tolist() == [n + 1 for n in lens], detail
    assert out.speculative_num_draft_tokens == 1
    assert len(published) == 1 and published[0] is out.new_seq_lens


def test_the_next_draft_input_is_the_sampled_token(zero: Overlay, cpu_lens: bool) -> None:
    """the next draft input is the sampled token, with no top-k or hidden stubs"""
    w = plain_rounds(zero, cpu_lens).world
    assert w.last_round is not None
    out = w.last_round[1]
    assert out.next_draft_input.bonus_tokens is out.next_token_ids
    assert out.next_draft_input.topk_p is None and out.next_draft_input.hidden_states is None


def test_the_future_map_reads_all_unless_the_plain_round_takes_the_batch(
    zero: Overlay, cpu_lens: bool
) -> None:
    """the future map reads all of a draft input unless the plain round will take the batch"""
    story = plain_rounds(zero, cpu_lens)
    w = story.world
    slots = [2, 5, 0, 1]
    lens = [story.lens[s] for s in slots]
    unplanned = w.batch(slots[:2], lens[:2], ForwardMode.DECODE)
    grammar = w.batch(slots, lens, ForwardMode.DECODE)
    grammar._k25_zero_planned, grammar.has_grammar = True, True
    assert not zero.runtime.reads_bonus_only(unplanned)
    assert not zero.runtime.reads_bonus_only(grammar)


def test_the_reserve_after_an_extend(zero: Overlay, cpu_lens: bool) -> None:
    """reserve after an extend is 1 + a full step"""
    story = plain_rounds(zero, cpu_lens)
    assert story.first_reserve == 5, f"got {story.first_reserve}"


def test_the_steady_reserve(zero: Overlay, cpu_lens: bool) -> None:
    """steady 0-step reserve is 2 (a plain decode's)"""
    counters = plain_rounds(zero, cpu_lens).world.ctl.counters
    assert counters.last_reserve == 2, f"got {counters.last_reserve}"


def test_plain_rounds_are_counted(zero: Overlay, cpu_lens: bool) -> None:
    """plain rounds counted"""
    counters = plain_rounds(zero, cpu_lens).world.ctl.counters
    assert counters.plain_rounds == 6, str(counters.plain_rounds)


def test_the_path_switch_needs_the_built_state(zero: Overlay) -> None:
    """plain needs the built state"""
    assert zero.policy.check_path(1, False) is not None


def test_a_bad_path_is_refused(zero: Overlay) -> None:
    """a bad path is refused"""
    assert zero.policy.check_path("plain", True) is not None
    assert zero.policy.check_path(0, True) is None
