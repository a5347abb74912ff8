"""The steady-state window of one closed-loop level: when it starts, when it ends, what it holds.

A closed loop of C streams with fixed lengths runs in cycles: each stream's request is prefilled
(queued behind the other arrivals), decodes its L tokens, and the next one starts at once. Within
a cycle the output rate swings (an arrival's prefill stalls every stream's decoding), so a rate
measured over part of a cycle is off by the swing. A window here is made of whole cycles:

* it **starts** at the first completion once the engine holds the asked concurrency (the
  engine's ``num_running_reqs`` reads the target, or every one of our C streams has its first token:
  the scheduler has admitted all of them; SGLang refreshes the gauge only every 40 decode batches, so
  the streams usually say it first). The stream that completes there paces the window. The target
  is the asked level unless the server cannot hold that many (its running cap, its KV pool at the
  request shape: ``SweepSession._target``); if the engine still never holds it, the window starts
  once as many requests as the target have come and gone, and the level says it was not reached;
* it **ends** at a completion of the pacing stream once the window holds at least ``K`` completed
  requests and ``W`` seconds; from there no stream is replaced (the level drains, cut at once:
  ``loop``). Between the two every stream is replaced as soon as it finishes, so the engine stays
  at the asked concurrency.

Both ends are at the same phase of the pacing stream's cycle, so each cycle holds its prefill stall
and its decode in proportion. The loop's ramp is staggered (``loop.StaggeredRamp``) so that the
streams are spread over a cycle from the start, as they are in the loop's steady state.

``WindowTracker`` is fed the loop's events as they happen (pure: no clock, no I/O); ``Window`` is
what it decided, and the functions below compute what the window holds from the requests' chunks.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.bench.stats import RequestRecord
from agent.wire.bench import COMPLETIONS_PER_STREAM, MIN_COMPLETIONS

STARTED_BY_ENGINE = "engine num_running_reqs reached the target"
STARTED_BY_STREAMS = "every stream had its first token"
STARTED_UNREACHED = "first completion (the engine never held the target)"


@dataclass(frozen=True)
class WindowRule:
    target: int
    """The concurrency the window waits for (the asked one, capped at the server's running limit)."""
    min_window_s: float
    min_completions: int | None = None
    """K; None: ``max(MIN_COMPLETIONS, COMPLETIONS_PER_STREAM x target)``."""


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    pacer: int
    cycles: tuple[float, ...]
    """The pacing stream's completions from ``start`` to ``end`` (both included)."""
    start_source: str
    target: int
    target_reached: bool
    target_reached_at: float | None
    completions: int
    """Requests that completed successfully inside the window (after ``start``, up to ``end``)."""
    min_completions: int

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class WindowTracker:
    """Fed every first token, completion and engine running-count read of one level, in order."""

    rule: WindowRule
    running: int = 0
    """Our streams with a first token and not yet finished: what the engine runs of ours."""
    peak_running: int = 0
    target_reached_at: float | None = None
    target_source: str | None = None
    start: float | None = None
    pacer: int | None = None
    min_completions: int = 0
    early_completions: int = 0
    completions: int = 0
    cycles: list[float] = field(default_factory=list)
    end: float | None = None

    @property
    def started(self) -> bool:
        return self.start is not None

    @property
    def ended(self) -> bool:
        return self.end is not None

    def _reached(self, now: float, source: str) -> None:
        if self.target_reached_at is None:
            self.target_reached_at = now
            self.target_source = source

    def first_token(self, now: float) -> None:
        self.running += 1
        self.peak_running = max(self.peak_running, self.running)
        if self.running >= self.rule.target:
            self._reached(now, STARTED_BY_STREAMS)

    def engine_running(self, now: float, value: float) -> None:
        if value >= self.rule.target:
            self._reached(now, STARTED_BY_ENGINE)

    def finished(self, worker: int, now: float, success: bool, had_first_token: bool) -> bool:
        """One request ended; True when this ends the window (no stream is replaced after it)."""
        if had_first_token:
            self.running -= 1
        if self.end is not None:
            return False
        if self.start is None:
            if self.target_reached_at is None:
                # Still ramping; a server that never holds the target (more are queued than it runs)
                # starts its window once as many requests as the target have come and gone.
                self.early_completions += 1
                if self.early_completions < self.rule.target:
                    return False
            self.start, self.pacer = now, worker
            self.cycles.append(now)
            rule = self.rule
            self.min_completions = (
                rule.min_completions
                if rule.min_completions is not None
                else max(MIN_COMPLETIONS, COMPLETIONS_PER_STREAM * rule.target)
            )
            return False
        if success:
            self.completions += 1
        if worker != self.pacer:
            return False
        self.cycles.append(now)
        if now - self.start >= self.rule.min_window_s and self.completions >= self.min_completions:
            self.end = now
            return True
        return False

    def window(self) -> Window | None:
        if self.start is None or self.end is None or self.pacer is None:
            return None
        reached = self.target_reached_at is not None and self.target_reached_at <= self.start
        return Window(
            start=self.start,
            end=self.end,
            pacer=self.pacer,
            cycles=tuple(self.cycles),
            start_source=str(self.target_source) if reached else STARTED_UNREACHED,
            target=self.rule.target,
            target_reached=reached,
            target_reached_at=self.target_reached_at,
            completions=self.completions,
            min_completions=self.min_completions,
        )


def delivered(records: Sequence[RequestRecord], start: float, end: float) -> int:
    """Output tokens our streams delivered within (start, end]."""
    return sum(r.tokens_by(end) - r.tokens_by(start) for r in records if r.chunk_times)


@dataclass(frozen=True)
class Slice:
    """Consecutive whole cycles of the pacing stream within a window."""

    start: float
    end: float
    tokens: int

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def rate(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


def slices(records: Sequence[RequestRecord], window: Window, at_most: int) -> list[Slice]:
    """The window cut into at most ``at_most`` slices for its interval.

    Whole pacing cycles when it holds two or more (as equal as they come). A window of one cycle
    (more streams queued than the server runs: the pacing stream waits its turn, so one of its
    cycles holds several turns of every running slot) is cut into equal spans of at least one
    slot's turn (the median decode time of its requests): the staggered slots keep the rate even
    at that scale.
    """
    bounds = list(window.cycles)
    cycles = len(bounds) - 1
    if cycles >= 2:
        count = min(at_most, cycles)
        cuts = [bounds[round(i * cycles / count)] for i in range(count + 1)]
    else:
        turns = [
            r.latency - r.ttft for r in records if r.done and r.success and window.start < r.end <= window.end
        ]
        turn = statistics.median(turns) if turns else window.seconds
        count = max(1, min(at_most, int(window.seconds // max(turn, 1e-9))))
        cuts = [window.start + window.seconds * i / count for i in range(count + 1)]
    return [Slice(a, b, delivered(records, a, b)) for a, b in itertools.pairwise(cuts)]


def mean_running(records: Sequence[RequestRecord], start: float, end: float) -> float:
    """Time-average of our streams that were decoding (first token seen, not finished) in the window."""
    if end <= start:
        return 0.0
    busy = 0.0
    for r in records:
        first = r.first_token_at
        if first is None:
            continue
        stop = r.end if r.done else end
        busy += max(0.0, min(stop, end) - max(first, start))
    return busy / (end - start)
