"""What the server delivers per running batch, with drafting at each step count and without (pure).

Throughput factors into what the hardware costs and what the traffic accepts:
``tokens/s = batch × tokens per round × rounds per second``. Rounds per second at a batch size depend
on the step count and on the context the batch reads (attention over each verified token's KV), not
on the acceptance; tokens per round is the accept length, which moves with what users ask. So the
estimator keeps the two apart:

* **Cells**: per *arm* (0 = no drafting, k = k draft steps), *context bin* (factors of 4 of KV slots
  per running request) and *batch bin* (quarter octaves), the measured rounds per second (tokens/s per
  running request over the accept length in force), weighted by the seconds of decoding measured and
  forgotten with ``COST_MEMORY_S``. A context shift lands in another bin: what was measured at
  1k-token contexts is not used at 4k, and is there again when the traffic comes back.
* **Acceptance**: the accept length of the step count that runs, and a one-parameter (geometric)
  model that turns it into the accept length of the others. A prediction is rounds per second times
  the accept length *now*, so an acceptance shift moves every prediction at once, without new
  measurements.

A batch bin without its own measurement borrows from the nearest bin (within two octaves) measured for
that arm, scaled by a reference arm measured at both bins; its uncertainty grows with the distance.
The batch histogram (time at each batch bin, forgotten over ``HISTORY_S``) says which batch sizes the
traffic runs, which is what a setting is judged on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from agent.telemetry.accept_model import geometric_accept, solve_p

BINS_PER_OCTAVE = 4
COST_MEMORY_S = 900.0
"""Cells forget with this time constant: costs depend on the hardware and the context, which move slowly."""
HISTORY_S = 300.0
"""The batch histogram forgets with this time constant: "recent traffic" is the last few minutes."""
ACCEPT_MEMORY_S = 20.0
"""The accept length is smoothed over this long (a window over finished requests already)."""
MIN_CELL_S = 3.0
"""Seconds of measurement before a cell stands for its bin."""
SEGMENT_NOISE = 0.04
"""Relative noise of one measured tick at least (prefill passes, acceptance draws, counter bursts)."""
REACH_BINS = 8
"""Borrow from at most two octaves away."""
DRIFT_PER_OCTAVE = 0.04
"""Extra relative uncertainty per octave of borrowing."""
ACCEPT_AGING_PER_MIN = 0.03
"""Relative uncertainty the accept length gains per minute without a measurement."""
MAX_PREFILL_S = 0.01
"""A prompt token taking longer than this to prefill is not a believable estimate."""
NEVER_PAYS_ACCEPT = 1.02
"""At an accept length this close to 1 drafting cannot pay at any batch: a round yields what a plain
decode yields (one token per request), and a verify pass costs at least a decode pass."""


def batch_bin(batch: float) -> int:
    return max(0, round(BINS_PER_OCTAVE * math.log2(max(batch, 1.0))))


def bin_batch(index: int) -> float:
    return float(2.0 ** (index / BINS_PER_OCTAVE))


CONTEXT_OCTAVES_PER_BIN = 2
"""Context bins span a factor of 4 (512-2048, 2048-8192, ...): the mean context of a batch moves as
its requests age (a 512-token prompt with 1024 tokens to write reads 512 → 1536), and a bin must hold
one kind of traffic through that."""


def context_bin(context: float | None) -> int:
    if context is None or context < 1:
        return 0
    return max(1, math.floor(math.log2(context) / CONTEXT_OCTAVES_PER_BIN + 0.5))


def context_tokens(ctx_bin: int) -> float | None:
    return None if ctx_bin <= 0 else float(2.0 ** (ctx_bin * CONTEXT_OCTAVES_PER_BIN))


@dataclass
class Cell:
    """Forgotten sums of one (context, arm, batch) bin's measurements, for the regression of rounds per
    second on prefill load: ``y = a · (1 − c · x)``, where ``y`` is a segment's rounds per second over
    its whole time, ``x`` the prompt tokens it prefilled per second, ``c`` the seconds one prompt token
    takes (one number per context bin, pooled over its cells: ``Estimator.prefill_cost``) and ``a`` the
    rounds per second of decoding alone, what the cell stands for."""

    last: float
    w: float = 0.0
    w2: float = 0.0
    wx: float = 0.0
    wy: float = 0.0
    wxx: float = 0.0
    wxy: float = 0.0
    wyy: float = 0.0

    def _decay(self, now: float) -> None:
        f = math.exp(-max(0.0, now - self.last) / COST_MEMORY_S)
        self.w, self.w2, self.wx, self.wy = self.w * f, self.w2 * f * f, self.wx * f, self.wy * f
        self.wxx, self.wxy, self.wyy = self.wxx * f, self.wxy * f, self.wyy * f
        self.last = now

    def add(self, now: float, seconds: float, rounds: float, prefill_per_s: float) -> None:
        self._decay(now)
        x, y, w = prefill_per_s, rounds, seconds
        self.w += w
        self.w2 += w * w
        self.wx += w * x
        self.wy += w * y
        self.wxx += w * x * x
        self.wxy += w * x * y
        self.wyy += w * y * y

    def weight(self, now: float) -> float:
        return self.w * math.exp(-max(0.0, now - self.last) / COST_MEMORY_S)

    def rounds(self, c: float) -> float:
        """Rounds per second of decoding alone, given the seconds ``c`` one prompt token takes."""
        den = self.w - 2 * c * self.wx + c * c * self.wxx
        return (self.wy - c * self.wxy) / den if den > 0 else self.wy / self.w

    def slope(self) -> tuple[float, float] | None:
        """(``c`` this cell alone says, its information) from the spread of its prefill load."""
        sxx = self.wxx - self.wx * self.wx / self.w
        if sxx <= 1e-9 * max(self.wxx, 1e-12):
            return None
        b = (self.wxy - self.wx * self.wy / self.w) / sxx
        a0 = (self.wy - b * self.wx) / self.w
        if a0 <= 0:
            return None
        return -b / a0, sxx * a0 * a0

    def se_rel(self, c: float) -> float:
        """Relative standard error of ``rounds`` (Kish's effective count of the weighted segments)."""
        a = self.rounds(c)
        if a <= 0:
            return 1.0
        fitted = self.w - 2 * c * self.wx + c * c * self.wxx
        resid = (self.wyy - 2 * a * (self.wy - c * self.wxy) + a * a * fitted) / self.w
        var = max(0.0, resid) + (SEGMENT_NOISE * a) ** 2
        n_eff = self.w * self.w / self.w2 if self.w2 > 0 else 1.0
        return math.sqrt(var / max(n_eff, 1.0)) / a


@dataclass
class AcceptanceTracker:
    """The accept length of each step count as measured, and the geometric model for the others."""

    lengths: dict[int, tuple[float, float]] = field(default_factory=dict)
    """steps → (smoothed accept length, time of the last measurement)."""
    _memo: dict[tuple[int, float], tuple[float, float] | None] = field(default_factory=dict)

    def observe(self, now: float, steps: int, accept: float) -> None:
        self._memo.clear()
        found = self.lengths.get(steps)
        if found is None:
            self.lengths[steps] = (accept, now)
            return
        value, at = found
        alpha = 1.0 - math.exp(-max(0.0, now - at) / ACCEPT_MEMORY_S)
        self.lengths[steps] = (value + alpha * (accept - value), now)

    def freshest(self) -> tuple[int, float, float] | None:
        if not self.lengths:
            return None
        steps, (value, at) = max(self.lengths.items(), key=lambda kv: kv[1][1])
        return steps, value, at

    def length(self, steps: int, now: float) -> tuple[float, float] | None:
        """(accept length, its relative uncertainty) of ``steps`` now; None before any measurement."""
        if steps <= 0:
            return 1.0, 0.0
        key = (steps, now)
        if key not in self._memo:
            if len(self._memo) > 256:
                self._memo.clear()
            self._memo[key] = self._length(steps, now)
        return self._memo[key]

    def _length(self, steps: int, now: float) -> tuple[float, float] | None:
        fresh = self.freshest()
        if fresh is None:
            return None
        k, value, at = fresh
        aging = ACCEPT_AGING_PER_MIN * max(0.0, now - at) / 60.0
        own = self.lengths.get(steps)
        if own is not None and now - own[1] <= 2 * ACCEPT_MEMORY_S:
            return own[0], aging
        return geometric_accept(solve_p(value, k), steps), aging + (0.0 if k == steps else 0.05)

    def never_pays(self, steps: tuple[int, ...], now: float) -> bool:
        """Every allowed step count accepts (as good as) nothing: drafting cannot pay at any batch."""
        fresh = self.freshest()
        if fresh is None or now - fresh[2] > 120.0:
            return False
        found = [self.length(k, now) for k in steps]
        return all(f is not None and f[0] <= NEVER_PAYS_ACCEPT for f in found)

    def clear(self) -> None:
        self.lengths.clear()
        self._memo.clear()


@dataclass(frozen=True)
class Estimate:
    tok_s: float
    """Tokens/s at the bin's batch size."""
    se_rel: float
    own: bool
    """Measured in this bin (not borrowed from a neighbour)."""
    age_s: float


class Estimator:
    def __init__(self) -> None:
        self.cells: dict[tuple[int, int, int], Cell] = {}
        self.accept = AcceptanceTracker()
        self.history: dict[int, float] = {}
        self._history_at = 0.0
        self._prefill_cost: dict[int, float] = {}
        self._memo: dict[tuple[int, int, int], Estimate | None] = {}
        self._memo_now: float | None = None
        self._own_memo: dict[tuple[int, int, int, float], Estimate | None] = {}
        self._arms_of: dict[int, set[int]] = {}
        self._bins_of: dict[int, list[int]] = {}

    def _forget_predictions(self) -> None:
        self._memo.clear()
        self._own_memo.clear()

    def reset(self) -> None:
        """A new engine process: nothing measured on the old one is known to hold."""
        self.cells.clear()
        self.accept.clear()
        self.history.clear()
        self._prefill_cost.clear()
        self._arms_of.clear()
        self._bins_of.clear()
        self._forget_predictions()

    def prefill_cost(self, ctx: int) -> float:
        """Seconds one prompt token takes to prefill at these contexts, pooled over the cells' slopes
        (0 until the prefill load has varied enough to tell: prefill time then only adds noise)."""
        found = self._prefill_cost.get(ctx)
        if found is None:
            num = den = 0.0
            for (c, _, _), cell in self.cells.items():
                slope = cell.slope() if c == ctx else None
                if slope is not None:
                    num += slope[0] * slope[1]
                    den += slope[1]
            found = self._prefill_cost[ctx] = min(MAX_PREFILL_S, max(0.0, num / den)) if den > 0 else 0.0
        return found

    # ---- measuring ------------------------------------------------------------------------------

    def note_batch(self, now: float, batch: float, seconds: float) -> None:
        f = math.exp(-max(0.0, now - self._history_at) / HISTORY_S)
        self._history_at = now
        for key in list(self.history):
            self.history[key] *= f
            if self.history[key] < 1e-3:
                del self.history[key]
        b = batch_bin(batch)
        self.history[b] = self.history.get(b, 0.0) + seconds

    def add(
        self,
        now: float,
        ctx: int,
        arm: int,
        batch: float,
        seconds: float,
        tokens: float,
        prefill: float = 0.0,
    ) -> bool:
        """One measured segment: ``tokens`` decoded and ``prefill`` prompt tokens prefilled in ``seconds``
        by a batch of ``batch`` running at ``arm``; False when it cannot be used (no accept length known
        for a drafting arm)."""
        if batch < 1 or seconds <= 0:
            return False
        found = self.accept.length(arm, now)
        if found is None or found[0] <= 0:
            return False
        key = (ctx, arm, batch_bin(batch))
        cell = self.cells.get(key)
        if cell is None:
            cell = self.cells[key] = Cell(last=now)
        cell.add(now, seconds, tokens / seconds / batch / found[0], prefill / seconds)
        self._prefill_cost.pop(ctx, None)
        self._arms_of.pop(ctx, None)
        self._bins_of.pop(ctx, None)
        self._forget_predictions()
        return True

    # ---- predicting -----------------------------------------------------------------------------

    def _own(self, ctx: int, arm: int, b: int, now: float) -> Estimate | None:
        key = (ctx, arm, b, now)
        if key in self._own_memo:
            return self._own_memo[key]
        found = self._own_memo[key] = self._own_cell(ctx, arm, b, now)
        return found

    def _own_cell(self, ctx: int, arm: int, b: int, now: float) -> Estimate | None:
        cell = self.cells.get((ctx, arm, b))
        if cell is None or cell.weight(now) < MIN_CELL_S:
            return None
        accept = self.accept.length(arm, now)
        if accept is None:
            return None
        c = self.prefill_cost(ctx)
        se = math.hypot(cell.se_rel(c), accept[1])
        return Estimate(cell.rounds(c) * accept[0] * bin_batch(b), se, True, now - cell.last)

    def predict(self, ctx: int, arm: int, b: int, now: float) -> Estimate | None:
        """Tokens/s of ``arm`` at batch bin ``b`` in context bin ``ctx``: measured, else borrowed.

        Remembered until the next measurement or another ``now``: one decision asks for the same
        prediction many times."""
        if now != self._memo_now:
            self._forget_predictions()
            self._memo_now = now
        key = (ctx, arm, b)
        if key not in self._memo:
            self._memo[key] = self._predict(ctx, arm, b, now)
        return self._memo[key]

    def _predict(self, ctx: int, arm: int, b: int, now: float) -> Estimate | None:
        own = self._own(ctx, arm, b, now)
        if own is not None:
            return own
        best: Estimate | None = None
        for distance in range(1, REACH_BINS + 1):
            for near in (b - distance, b + distance):
                source = self._own(ctx, arm, near, now)
                if source is None:
                    continue
                for ref in self._arms(ctx):
                    if ref == arm:
                        continue
                    here, there = self._own(ctx, ref, b, now), self._own(ctx, ref, near, now)
                    if here is None or there is None:
                        continue
                    se = math.sqrt(
                        source.se_rel**2
                        + here.se_rel**2
                        + there.se_rel**2
                        + (DRIFT_PER_OCTAVE * distance / BINS_PER_OCTAVE) ** 2
                    )
                    found = Estimate(source.tok_s * here.tok_s / there.tok_s, se, False, source.age_s)
                    if best is None or found.se_rel < best.se_rel:
                        best = found
            if best is not None:
                return best
        return None

    def arms(self, ctx: int) -> set[int]:
        """Arms with any measurement in this context bin."""
        return self._arms(ctx)

    def _arms(self, ctx: int) -> set[int]:
        found = self._arms_of.get(ctx)
        if found is None:
            found = self._arms_of[ctx] = {arm for (c, arm, _) in self.cells if c == ctx}
        return found

    def bins(self, ctx: int) -> list[int]:
        """Batch bins with a measurement of any arm in this context bin."""
        found = self._bins_of.get(ctx)
        if found is None:
            found = self._bins_of[ctx] = sorted({b for (c, _, b) in self.cells if c == ctx})
        return found

    def mass(self) -> dict[int, float]:
        """Recent time at each batch bin (the traffic a setting is judged on)."""
        return dict(self.history)
