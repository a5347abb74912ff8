"""The order a run measures its arms in, and how long it should take.

Order: ``repeats`` passes over every level (low to high, at each level on, off, adaptive), each
pass the mirror of the one before: on, off, adaptive at c=1, ... at the top level, then adaptive,
off, on at the top level, ... back to c=1. An arm's repeats at a level lie a run apart, so the
variance between them holds the drift a second run meets (measured back to back, a few seconds
apart, they missed drift that moved every arm of a level by 2-8 % between two real runs: issue 24);
and each arm-level's repeats are symmetric about the middle of the run, so a drift linear over the
run adds the same to every arm's mean at every level (the ABBA property, at the run's scale). A
run cut short after the first pass holds every level once.

Duration: each step (one arm's loop at one level: its ramp, whose batch is the discarded warm-up,
then its window) costs about ``overhead + one request + window``, the window being whole cycles of
about a request each, two of them at least (or ``min_window_s``). Before anything ran, the one
request the run sends first at c=1 (``probe_s``) stands in for a request's time at every level,
scaled by ``sqrt(C)``, a middle course between a decode-bound engine (request time flat in C) and a
saturated one (linear): the expected duration printed at the start is that rough. Each measured
step then replaces the guess at its level, and the request time of levels not yet reached grows
from the last two measured ones (per doubling of C, kept between 1 and 2), so the ETA tightens as
the run goes. With a probe batch at the top level (``probes``) the levels between are interpolated
(log-log) between the c=1 probe, what was measured, and it: a far better first guess.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.wire.bench import format_duration as format_duration  # a wire model's words use it too


@dataclass(frozen=True)
class Step:
    index: int
    level_index: int
    concurrency: int
    repeat: int
    arm: str


def plan(levels: Sequence[int], arms: Sequence[str], repeats: int) -> list[Step]:
    steps: list[Step] = []
    forward = [(li, arm) for li in range(len(levels)) for arm in arms]
    for repeat in range(repeats):
        for li, arm in forward if repeat % 2 == 0 else reversed(forward):
            steps.append(Step(len(steps), li, levels[li], repeat, arm))
    return steps


STEP_OVERHEAD_S = 0.15
"""Control calls of a step: set_live with its read-back, /flush_cache, /metrics, /server_info."""
CYCLES_PER_WINDOW = 2
"""A default window holds two completions per stream: about two request times."""


@dataclass
class DurationModel:
    min_window_s: float
    probe_s: float | None = None
    """One request alone, before the run (c=1)."""
    probes: dict[int, float] = field(default_factory=dict)
    """Concurrency → a request's time in a probe batch before the run (the top level's)."""
    requests: dict[int, list[float]] = field(default_factory=dict)
    """Concurrency → median request time of each finished step there."""
    steps: dict[int, list[float]] = field(default_factory=dict)
    """Concurrency → seconds each finished step there took."""

    def known(self) -> dict[int, float]:
        """Concurrency → a request's time, from what was measured, else the probes."""
        known = {c: float(statistics.median(v)) for c, v in self.requests.items() if v}
        if self.probe_s:
            known.setdefault(1, self.probe_s)
        for c, t in self.probes.items():
            known.setdefault(c, t)
        return known

    def request_s(self, concurrency: int) -> float:
        """A request's time at ``concurrency``: measured or probed; between two such levels,
        interpolated log-log; above them, grown per doubling as between the last two (kept between 1
        and 2); with a single one, scaled by sqrt(C)."""
        known = self.known()
        if concurrency in known:
            return known[concurrency]
        lower = sorted(c for c in known if c < concurrency)
        upper = sorted(c for c in known if c > concurrency)
        if lower and upper:
            a, b = lower[-1], upper[0]
            share = math.log(concurrency / a) / math.log(b / a)
            return known[a] * float((known[b] / known[a]) ** share)
        if len(lower) >= 2:
            a, b = lower[-2], lower[-1]
            per_doubling = float((known[b] / known[a]) ** (1 / math.log2(b / a)))
            growth = min(2.0, max(1.0, per_doubling))
            return known[b] * float(growth ** math.log2(concurrency / b))
        nearest = lower[-1] if lower else upper[0] if upper else None
        if nearest is None:
            return 0.5 * math.sqrt(concurrency)
        return known[nearest] * math.sqrt(concurrency / nearest)

    def guess(self, concurrency: int) -> float:
        """Seconds one step at ``concurrency`` should take: its own measured steps, else its ramp
        (a request) and a window of whole cycles (at least ``min_window_s``)."""
        if concurrency in self.steps:
            return float(statistics.fmean(self.steps[concurrency]))
        request = max(self.request_s(concurrency), 1e-3)
        window = max(self.min_window_s, CYCLES_PER_WINDOW * request)
        return STEP_OVERHEAD_S + request + math.ceil(window / request) * request

    def remaining(self, steps: Sequence[Step]) -> float:
        return sum(self.guess(s.concurrency) for s in steps)

    def record(self, concurrency: int, seconds: float, request_s: float | None = None) -> None:
        self.steps.setdefault(concurrency, []).append(seconds)
        if request_s is not None and request_s > 0:
            self.requests.setdefault(concurrency, []).append(request_s)
