"""The round timer: a sampled round's stages land in the timing table, and only sampled rounds."""

from __future__ import annotations

import torch

from .stand_ins import Overlay


def _drained(zero: Overlay) -> None:
    if zero.device.startswith("cuda"):
        torch.cuda.synchronize()
        zero.timer.TIMER._drain()


def test_a_timed_round_records_its_stages(zero: Overlay) -> None:
    """a timed round records each stage, host and GPU time, by kind, and counts down"""
    timing = zero.policy.TIMING
    timing.start(0)
    timing.start(2)
    try:
        zero.runtime.TIMER.begin()
        zero.runtime.mark("prepare")
        zero.runtime.mark("target_forward")
        zero.runtime.TIMER.end("decode", 8)
        _drained(zero)
        table = timing.summary()
        assert timing.remaining == 1
        assert table["decode"]["rounds"] == 1 and table["decode"]["mean_batch_size"] == 8.0
        assert list(table["decode"]["stages"]) == ["prepare", "target_forward", "end"]
        gpu = [stage["gpu_ms"] for stage in table["decode"]["stages"].values()]
        assert all((g is not None) == zero.device.startswith("cuda") for g in gpu), gpu
    finally:
        timing.start(0)


def test_rounds_are_not_timed_unless_asked(zero: Overlay) -> None:
    """no round is timed while none is asked for; marks outside a timed round do nothing"""
    timing = zero.policy.TIMING
    timing.start(0)
    zero.runtime.TIMER.begin()
    zero.runtime.mark("prepare")
    zero.runtime.TIMER.end("decode", 8)
    assert not zero.runtime.TIMER.active and timing.summary() == {} and timing.remaining == 0
