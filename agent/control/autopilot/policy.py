"""Which live setting delivers the most on recent traffic, and where the crossover lies (pure).

A *setting* is the live threshold and the step count pinned below it. Judged on the batch histogram
(the time recent traffic spent at each batch size), a setting delivers, at each batch bin, what its arm
there delivers: 0 steps at or above the threshold, its steps below. A candidate is scored against the
setting in force only where the two differ, and only where both arms have an estimate; where one is
missing the bin counts as "unknown" (the probe scheduler's business), never as a gain.

The crossover of step count k is where drafting at k stops paying: the batch at which the estimated
tokens/s of 0 steps overtakes that of k. Its uncertainty is the span of batch bins around it where the
difference is within one standard error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from agent.control.autopilot.estimator import BINS_PER_OCTAVE, Estimate, Estimator, bin_batch
from agent.control.autopilot.settings import PilotSettings
from agent.sglang.live_control import NO_THRESHOLD, RELEASE_PINNED_STEPS


@dataclass(frozen=True)
class Setting:
    threshold: int
    """0: speculate at every batch size; 1: never."""
    steps: int
    """Pinned steps below the threshold; -1: SGLang's policy chooses."""

    def arm(self, batch: float, policy_steps: int | None) -> int | None:
        """The step count a batch of ``batch`` runs at (None: SGLang's policy, steps not yet seen)."""
        if self.threshold != NO_THRESHOLD and batch >= self.threshold:
            return 0
        return self.steps if self.steps != RELEASE_PINNED_STEPS else policy_steps

    def words(self) -> str:
        t = "no threshold" if self.threshold == NO_THRESHOLD else f"threshold {self.threshold}"
        s = "steps chosen by SGLang's policy" if self.steps == RELEASE_PINNED_STEPS else f"{self.steps} steps"
        return f"{t}, {s}"


@dataclass(frozen=True)
class Score:
    setting: Setting
    gain: float
    """Estimated tokens/s over the setting in force, minus 1, on the batch histogram."""
    sd: float
    unknown: float
    """Share of the histogram where the comparison needs an estimate that does not exist."""


@dataclass(frozen=True)
class Crossover:
    steps: int
    value: float | None
    """Running batch from which 0 steps delivers more; None when the estimate cannot say."""
    low: float | None
    high: float | None
    note: str | None = None
    """"above": drafting wins at every batch measured; "below": it loses at every one."""
    threshold: int | None = None
    """The threshold this crossover asks for (before the operator's bounds)."""


def _estimates(est: Estimator, ctx: int, arm: int | None, bins: list[int], now: float) -> dict[int, Estimate]:
    if arm is None:
        return {}
    found = {}
    for b in bins:
        e = est.predict(ctx, arm, b, now)
        if e is not None:
            found[b] = e
    return found


def score(
    est: Estimator, ctx: int, current: Setting, candidate: Setting, policy_steps: int | None, now: float
) -> Score | None:
    """``candidate`` against ``current`` on the batch histogram; None without any estimate of ``current``."""
    mass = est.mass()
    total_known = 0.0
    diff = var = unknown = 0.0
    total = sum(mass.values())
    if total <= 0:
        return None
    cache: dict[tuple[int | None, int], Estimate | None] = {}

    def get(arm: int | None, b: int) -> Estimate | None:
        if arm is None:
            return None
        if (arm, b) not in cache:
            cache[(arm, b)] = est.predict(ctx, arm, b, now)
        return cache[(arm, b)]

    for b, h in mass.items():
        batch = bin_batch(b)
        a_cur, a_new = current.arm(batch, policy_steps), candidate.arm(batch, policy_steps)
        cur = get(a_cur, b)
        if cur is None:
            unknown += h
            continue
        total_known += h * cur.tok_s
        if a_new == a_cur:
            continue
        new = get(a_new, b)
        if new is None:
            unknown += h
            continue
        diff += h * (new.tok_s - cur.tok_s)
        var += (h * new.tok_s * new.se_rel) ** 2 + (h * cur.tok_s * cur.se_rel) ** 2
    if total_known <= 0:
        return None
    return Score(candidate, diff / total_known, math.sqrt(var) / total_known, unknown / total)


def crossover(
    est: Estimator, ctx: int, steps: int, now: float, *, never_pays: bool = False, top_bin: int | None = None
) -> Crossover:
    """Where drafting at ``steps`` stops paying, from the bins where both sides have an estimate.

    "Above" (drafting wins at every batch measured) asks for no threshold only when the measurements
    reach the largest batch recent traffic ran (``top_bin``); below that nothing is known past them."""
    if never_pays:
        return Crossover(steps, 1.0, 1.0, 1.0, "below", 1)
    bins = est.bins(ctx)
    spec, plain = _estimates(est, ctx, steps, bins, now), _estimates(est, ctx, 0, bins, now)
    both = [b for b in bins if b in spec and b in plain]
    if not both:
        return Crossover(steps, None, None, None)
    d = {b: spec[b].tok_s - plain[b].tok_s for b in both}
    se = {b: math.hypot(spec[b].tok_s * spec[b].se_rel, plain[b].tok_s * plain[b].se_rel) for b in both}
    # The first bin from which drafting loses (and keeps losing at the next bin, if there is one).
    loses_from = None
    for i, b in enumerate(both):
        if d[b] < 0 and (i + 1 == len(both) or d[both[i + 1]] < 0):
            loses_from = i
            break
    if loses_from is None:
        low = _uncertain_edge(both, d, se, len(both) - 1, -1)
        covered = top_bin is None or both[-1] >= top_bin - 1
        return Crossover(steps, None, low, None, "above", NO_THRESHOLD if covered else None)
    if loses_from == 0:
        first = bin_batch(both[0])
        high = _uncertain_edge(both, d, se, 0, +1)
        return Crossover(steps, first, None, high, "below", math.ceil(first))
    b_win, b_lose = both[loses_from - 1], both[loses_from]
    # Interpolate the sign change in log batch between the last bin that wins and the first that loses.
    frac = d[b_win] / (d[b_win] - d[b_lose])
    value = 2.0 ** ((b_win + frac * (b_lose - b_win)) / BINS_PER_OCTAVE)
    low = _uncertain_edge(both, d, se, loses_from - 1, -1)
    high = _uncertain_edge(both, d, se, loses_from, +1)
    return Crossover(steps, round(value, 1), low, high, None, math.ceil(value))


def _uncertain_edge(
    both: list[int], d: dict[int, float], se: dict[int, float], start: int, step: int
) -> float:
    """From ``start``, walk while the difference is within one standard error: the uncertainty's edge."""
    i = start
    while 0 <= i + step < len(both) and abs(d[both[i]]) <= se[both[i]]:
        i += step
    return round(bin_batch(both[i]), 1)


def candidates(settings: PilotSettings, current: Setting, crossovers: dict[int, Crossover]) -> list[Setting]:
    """The settings worth scoring: each allowed step count at its own crossover, and at the threshold in
    force, both within the operator's bounds (the threshold in force may be the operator's own, outside
    them: a steps-only move must not carry it into a setting the autopilot chose)."""
    found: list[Setting] = []
    for k in settings.steps:
        cross = crossovers.get(k)
        if cross is not None and cross.threshold is not None:
            found.append(Setting(settings.clamp(cross.threshold), k))
        found.append(Setting(settings.clamp(current.threshold), k))
    unique: list[Setting] = []
    for s in found:
        if s not in unique and s != current:
            unique.append(s)
    return unique
