"""A hook that raises never reaches the scheduler: it is counted, named, and the round goes on."""

from __future__ import annotations

import json
import types
from typing import Any

import torch

from .stand_ins import ForwardMode, Overlay
from .world import World


def _failed_extend(zero: Overlay) -> tuple[World, BaseException | None]:
    """An extend hook fed 0.5.22's request shape (no ``req.kv``): the ring hook raises inside."""
    w = World(zero, cpu_lens=False)
    batch = w.batch([2], [10], ForwardMode.EXTEND)
    batch.reqs = [types.SimpleNamespace(req_pool_idx=2)]
    batch.extend_lens = [10]
    out = types.SimpleNamespace(
        logits_output=types.SimpleNamespace(hidden_states=torch.zeros((10, w.HIDDEN), device=zero.device)),
        next_token_ids=torch.zeros(1, device=zero.device, dtype=torch.int32),
    )
    try:
        w.ctl.after_extend(batch, out)
    except Exception as exc:
        return w, exc
    return w, None


def test_an_extend_hook_that_fails_raises_nothing(zero: Overlay) -> None:
    """an extend hook that fails raises nothing"""
    _, raised = _failed_extend(zero)
    assert raised is None, repr(raised)


def test_the_ring_failure_is_counted_and_named(zero: Overlay) -> None:
    """the failure is counted and named, and the ring is off"""
    w, _ = _failed_extend(zero)
    counters = w.ctl.counters
    assert counters.errors == 1 and "AttributeError" in str(counters.last_error), str(counters.last_error)
    assert w.ctl.ring_off


def test_without_the_ring_zero_step_rounds_still_decode_plainly(zero: Overlay) -> None:
    """0-step rounds still decode plainly, and nothing more is counted"""
    w, _ = _failed_extend(zero)
    for rnd in range(3):
        w.zero_round([2, 0, 1, 3], [10 + rnd, 4, 4, 4])
    counters = w.ctl.counters
    assert counters.plain_rounds == 3 and counters.errors == 1, json.dumps(counters.as_dict())


def test_without_the_ring_a_resume_drafts_cold(zero: Overlay) -> None:
    """a resume drafts cold: no catch-up"""
    w, _ = _failed_extend(zero)
    for rnd in range(3):
        w.zero_round([2, 0, 1, 3], [10 + rnd, 4, 4, 4])
    w.ctl.maybe_catch_up(w.batch([2, 0, 1, 3], [13, 7, 7, 7], ForwardMode.DECODE))
    assert w.ctl.counters.catchups == 0 and not w.extends


def _failed_plain_round(zero: Overlay) -> tuple[World, Any, Any, BaseException | None]:
    w = World(zero, cpu_lens=False)

    def broken_forward(**_: Any) -> Any:
        raise RuntimeError("a shape the plain decode did not expect")

    w.worker.target_worker.forward_batch_generation = broken_forward
    batch = w.batch([2, 0, 1, 3], [10, 4, 4, 4], ForwardMode.DECODE)
    batch.spec_info.future_indices = batch.req_pool_indices
    zero.runtime.decode_reserve(batch, 8)
    w.ctl.activate(batch)
    try:
        out = w.ctl.plain_round(batch, lambda lens: None)
    except Exception as exc:
        return w, batch, None, exc
    return w, batch, out, None


def test_a_plain_round_that_raises_hands_the_round_to_the_verify_path(zero: Overlay) -> None:
    """a plain round that raises returns None (the verify path runs) and raises nothing"""
    _, _, out, raised = _failed_plain_round(zero)
    assert raised is None and out is None, repr(raised)


def test_after_a_plain_round_failed_zero_step_rounds_verify(zero: Overlay) -> None:
    """the failure is counted and named, and later 0-step rounds take the verify path"""
    w, batch, _, _ = _failed_plain_round(zero)
    counters = w.ctl.counters
    detail = json.dumps(counters.as_dict())
    assert counters.errors == 1 and "RuntimeError" in str(counters.last_error), detail
    assert not w.ctl.config.plain, detail
    assert w.ctl.plain_round(batch) is None and counters.verify_rounds == 1, detail
    assert not zero.runtime.reads_bonus_only(batch), detail
