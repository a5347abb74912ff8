"""Zero-step rounds as plain decodes: the round timer (k25console patch 03).

``/set_internal_state`` key ``k25_round_timing`` asks for the next N rounds to be timed part by part
(``k25_zero_step_policy.RoundTimingBook`` keeps the table). SGLang's files mark the stage ends of a
round through ``k25_zero_step_runtime.TIMER`` and ``k25_zero_step_runtime.mark``, which are this
module's: the host clock at each mark, and a CUDA event when there is a GPU, read back rounds later
without ever blocking the scheduler.
"""

from __future__ import annotations

import collections
import itertools
import time

import torch
from sglang.srt.speculative import k25_zero_step_policy as policy

TIMING = policy.TIMING

Mark = tuple[str, float, "torch.cuda.Event | None"]
"""One stage end: its name, the host clock (``perf_counter``) and the CUDA event recorded there."""


class RoundTimer:
    """Marks stage ends of one round; reads the CUDA events back rounds later, never blocking."""

    def __init__(self) -> None:
        self.active = False
        self._marks: list[Mark] = []
        self._pending: collections.deque[tuple[str, int, list[Mark]]] = collections.deque()

    @property
    def pending(self) -> int:
        """Timed rounds whose CUDA events have not been read back yet."""
        return len(self._pending)

    def begin(self) -> None:
        self.active = TIMING.remaining > 0
        if self.active:
            self._marks = []
            self.mark("begin")

    def mark(self, name: str) -> None:
        if not self.active:
            return
        event = None
        if torch.cuda.is_available():
            event = torch.cuda.Event(enable_timing=True)
            event.record()
        self._marks.append((name, time.perf_counter(), event))

    def end(self, kind: str, batch_size: int) -> None:
        if not self.active:
            return
        self.mark("end")
        self.active = False
        TIMING.remaining = max(0, TIMING.remaining - 1)
        self._pending.append((kind, batch_size, self._marks))
        self._marks = []
        self._drain()

    def _drain(self) -> None:
        while self._pending:
            kind, bs, marks = self._pending[0]
            last = marks[-1][2]
            if last is not None and not last.query():
                return
            self._pending.popleft()
            stages = []
            for (_, t0, e0), (name, t1, e1) in itertools.pairwise(marks):
                gpu = e0.elapsed_time(e1) if e0 is not None and e1 is not None else None
                stages.append((name, (t1 - t0) * 1000.0, gpu))
            TIMING.add(kind, bs, stages)


TIMER = RoundTimer()


def mark(name: str) -> None:
    """A stage of the round in progress ended (no-op unless a round is being timed)."""
    if TIMER.active:
        TIMER.mark(name)
