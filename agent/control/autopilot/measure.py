"""Turning ticks into measurements: segments of decoding at one step count, with prefill time removed.

A *segment* is a run of ticks at one step count and one context bin that ends when the decode counter
moves (every tick on the simulated engine; every ``--decode-log-interval`` batches on SGLang, which
advances it in bursts). Its tokens over its seconds of *decoding* is one measurement for its batch bin.

Prefill passes run between decode passes and take time no step count saves; each segment carries the
prompt tokens prefilled in it, and the estimator separates the two (``estimator.Cell``: rounds per
second against prefill load). A prefill pass that began in one tick and ended in the next is reported
in the second, so a segment is held one tick and merged with the next when that one prefilled.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.control.autopilot.estimator import Estimator, context_bin
from agent.control.autopilot.sample import Sample
from agent.control.autopilot.settings import ACCEPT_SETTLE_COUNTERS_S, ACCEPT_SETTLE_S, SETTLE_S
from agent.sglang.live_control import RELEASE_PINNED_STEPS

SEGMENT_MAX_S = 30.0
"""A segment waiting this long for the decode counter to move is dropped (idle, or a stall)."""


@dataclass
class Segment:
    arm: int
    ctx: int
    seconds: float = 0.0
    batch_s: float = 0.0
    tokens: float = 0.0
    prefill: float = 0.0
    end: float = 0.0

    @property
    def batch(self) -> float:
        return self.batch_s / self.seconds

    def merge(self, other: Segment) -> None:
        self.seconds += other.seconds
        self.batch_s += other.batch_s
        self.tokens += other.tokens
        self.prefill += other.prefill
        self.end = other.end


class Meter:
    """Feeds one engine's samples into the estimator."""

    def __init__(self, est: Estimator) -> None:
        self.est = est
        self.segment: Segment | None = None
        self.held: Segment | None = None
        self.arm_since: tuple[int | None, float] = (None, 0.0)
        self.policy_steps: int | None = None
        """The step count SGLang's own policy ran last (when no steps are pinned)."""
        self.settle_until = -1e18
        self.ctx = 0
        self.running: int | None = None

    def reset(self) -> None:
        self.segment = self.held = None
        self.policy_steps = None
        self.arm_since = (None, 0.0)

    def changed(self, now: float) -> None:
        """The live setting changed at ``now``: the batch is in transition for ``SETTLE_S``."""
        self.settle_until = now + SETTLE_S
        self.segment = None
        self._finish_held()

    def feed(self, s: Sample) -> None:
        if s.running is None or s.steps is None:
            self.segment = None
            return
        self.running = s.running
        if s.context is not None:
            self.ctx = context_bin(s.context)
        if s.span_s and s.running >= 1:
            self.est.note_batch(s.time, s.running, s.span_s)
        arm = s.steps
        self._acceptance(s, arm)
        if s.time < self.settle_until or s.running < 1 or not s.span_s:
            self.segment = None
            return
        seg = self.segment
        if seg is None or seg.arm != arm or seg.ctx != self.ctx:
            seg = self.segment = Segment(arm, self.ctx)
        seg.seconds += s.span_s
        seg.batch_s += s.running * s.span_s
        seg.prefill += s.prefill_tokens or 0.0
        seg.end = s.time
        if s.tokens is not None and s.tokens > 0:
            seg.tokens = s.tokens
            self.segment = None
            self._close(seg)
        elif seg.seconds > SEGMENT_MAX_S:
            self.segment = None

    def _acceptance(self, s: Sample, arm: int) -> None:
        if self.arm_since[0] != arm:
            self.arm_since = (arm, s.time)
        ran = s.time - self.arm_since[1]
        if arm > 0 and s.accept_recent is not None and s.accept_recent > 0 and ran >= ACCEPT_SETTLE_S:
            self.est.accept.observe(s.time, arm, s.accept_recent)
        elif arm > 0 and s.accept_recent is None and s.accept_length and ran >= ACCEPT_SETTLE_COUNTERS_S:
            self.est.accept.observe(s.time, arm, s.accept_length)
        if arm > 0 and s.pinned == RELEASE_PINNED_STEPS:
            self.policy_steps = arm

    def _close(self, seg: Segment) -> None:
        held = self.held
        if held is not None and seg.prefill > 0 and held.arm == seg.arm and held.ctx == seg.ctx:
            held.merge(seg)  # the prefill that ended now may have begun in the held tick
            self.held = None
            self._use(held)
            return
        self._finish_held()
        if seg.prefill > 0:
            self._use(seg)
        else:
            self.held = seg

    def _finish_held(self) -> None:
        if self.held is not None:
            self._use(self.held)
            self.held = None

    def _use(self, seg: Segment) -> None:
        self.est.add(seg.end, seg.ctx, seg.arm, seg.batch, seg.seconds, seg.tokens, seg.prefill)
