"""The hidden-state ring alone: what it holds, how far back a request can be re-extended, what it gives."""

from __future__ import annotations

import torch

from .stand_ins import Overlay


def _ring(zero: Overlay, width: int = 4, hidden: int = 3) -> object:
    template = torch.zeros((1, hidden), device=zero.device)
    return zero.ring.HiddenRing(4, width, template, zero.device)


def _put(zero: Overlay, ring: object, slot: int, positions: list[int]) -> None:
    dev = zero.device
    n = len(positions)
    ring.put(  # type: ignore[attr-defined]
        torch.tensor([slot] * n, device=dev),
        torch.tensor(positions, device=dev),
        torch.tensor([100 + p for p in positions], device=dev),
        torch.tensor([[float(p)] * 3 for p in positions], device=dev),
    )


def test_the_ring_keeps_the_last_width_positions_of_a_slot(zero: Overlay) -> None:
    """the ring holds the last positions put, by position mod width, tagged with the position"""
    ring = _ring(zero)
    for p in range(10, 16):
        _put(zero, ring, 2, [p])
    assert sorted(ring.tags[2].tolist()) == [12, 13, 14, 15]  # type: ignore[attr-defined]
    assert ring.tags[0].tolist() == [-1] * 4, "other slots untouched"  # type: ignore[attr-defined]


def test_run_lengths_count_back_from_the_length_without_a_gap(zero: Overlay) -> None:
    """a request can be re-extended over the positions held right before its length, no further"""
    ring = _ring(zero)
    _put(zero, ring, 1, [7, 8, 9])
    _put(zero, ring, 3, [4, 6])  # 5 missing: only 6 is a run ending at 6
    dev = zero.device
    held = ring.run_lengths(
        torch.tensor([1, 3, 0, 1], device=dev), torch.tensor([10, 7, 5, 12], device=dev), 4
    )  # type: ignore[attr-defined]
    assert held.tolist() == [3, 1, 0, 0]


def test_gather_gives_tokens_and_hiddens_zero_padded(zero: Overlay) -> None:
    """gather gives each row's positions from its start, zero after its length"""
    ring = _ring(zero)
    _put(zero, ring, 1, [7, 8, 9])
    dev = zero.device
    tokens, hidden = ring.gather(  # type: ignore[attr-defined]
        torch.tensor([1], device=dev), torch.tensor([7], device=dev), torch.tensor([2], device=dev), 4
    )
    assert tokens.tolist() == [107, 108, 0, 0]
    assert hidden[:, 0].tolist() == [7.0, 8.0, 0.0, 0.0]


def test_slots_come_from_the_requests_kv_record(zero: Overlay) -> None:
    """a batch's slots are read off each request's KV record (req.kv.req_pool_idx)"""
    import types

    batch = types.SimpleNamespace(
        reqs=[types.SimpleNamespace(kv=types.SimpleNamespace(req_pool_idx=s)) for s in (3, 1)]
    )
    assert zero.ring.slots_of(batch) == [3, 1]
