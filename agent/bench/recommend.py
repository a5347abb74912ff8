"""The recommended speculation threshold from an on/off comparison, with its interval: pure arithmetic.

The threshold is the running batch size at or above which the server stops speculating. Per level
we have each arm's figure and 95 % interval (``interval.estimate``); we work on r(C) = ln(off/on)
(> 0: off is faster) and its interval from the arms' intervals, [ln(off_low/on_high),
ln(off_high/on_low)] (interval arithmetic: wider than a root-sum-square, never narrower).

* At a level off is *ahead* when the whole r interval is above 0 (the arms' intervals do not
  overlap, off's above), *behind* when it is below 0, and the two are *indistinguishable* otherwise.
* A threshold needs a level from which off is ahead at every higher level (one lucky point does
  not count); without one: threshold 0 (speculate at every batch size, ``NO_THRESHOLD``).
* The crossover is where r crosses 0, interpolated in log2(C) between the last level where r <= 0
  and the next; its interval is where the two ends of r's interval cross 0 (``None`` for the upper
  end: off may never win). The threshold and its interval are the crossover's, rounded up.
* Confidence is "high" only when the intervals at the chosen levels do not overlap: the level
  above the crossover (off ahead) and the one below it (on ahead); for threshold 0, the top level
  (on still ahead at the highest load). Otherwise the recommendation names the levels where the
  arms were indistinguishable and what to run to separate them (more repeats there: each interval
  narrows about as 1/sqrt(repeats)). ``confidence`` is the probability, under a normal reading of
  the intervals, that the chosen levels are on the sides they appear to be.

Arms given as bare figures (``on_ci``/``off_ci`` None) get an interval from ``*_rel_err`` and a
noise floor, so that a model with no measured noise (the demo's story) still reads as a figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

Z95 = 1.96
DEFAULT_NOISE_FLOOR = 0.01
MAX_SUGGESTED_REPEATS = 20


@dataclass(frozen=True)
class LevelPair:
    concurrency: int
    on: float
    off: float
    on_rel_err: float = 0.0
    off_rel_err: float = 0.0
    on_ci: tuple[float, float] | None = None
    off_ci: tuple[float, float] | None = None

    def intervals(self, floor: float) -> tuple[tuple[float, float], tuple[float, float]]:
        def derived(value: float, rel: float) -> tuple[float, float]:
            half = Z95 * math.sqrt(rel**2 + floor**2 / 2)
            return value * math.exp(-half), value * math.exp(half)

        on = self.on_ci if self.on_ci is not None else derived(self.on, self.on_rel_err)
        off = self.off_ci if self.off_ci is not None else derived(self.off, self.off_rel_err)
        return on, off


@dataclass(frozen=True)
class Recommendation:
    threshold: int
    """0 = speculate at every batch size; N = stop speculating at N running requests or more."""
    crossover: float | None
    """Refined concurrency where off starts to beat on (None: it never does)."""
    measured_crossover: int | None
    """Smallest sweep level from which off >= on at every higher level (unrefined)."""
    significant_from: int | None
    """Smallest sweep level from which off is ahead beyond the intervals at every higher level."""
    range: tuple[float, float | None] | None
    """The crossover's interval; None for the upper end: off may never win."""
    threshold_range: tuple[int, int | None] | None
    confidence: float
    confidence_label: str
    reason: str
    indistinguishable_at: list[int] = field(default_factory=list)
    chosen_levels: list[int] = field(default_factory=list)
    """The levels whose intervals decide the label."""
    to_separate: dict[str, Any] | None = None
    """What to run where the arms were indistinguishable: ``levels`` and ``repeats``."""

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["range"] = list(self.range) if self.range is not None else None
        data["threshold_range"] = list(self.threshold_range) if self.threshold_range is not None else None
        return data


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def log_ratio(pair: LevelPair) -> float:
    return math.log(max(pair.off, 1e-12) / max(pair.on, 1e-12))


@dataclass(frozen=True)
class _Level:
    c: int
    r: float
    low: float
    high: float
    sigma: float

    @property
    def off_ahead(self) -> bool:
        return self.low > 0

    @property
    def on_ahead(self) -> bool:
        return self.high < 0


def _level(pair: LevelPair, floor: float) -> _Level:
    (on_lo, on_hi), (off_lo, off_hi) = pair.intervals(floor)
    tiny = 1e-12
    low = math.log(max(off_lo, tiny) / max(on_hi, tiny))
    high = math.log(max(off_hi, tiny) / max(on_lo, tiny))
    half_on = math.log(max(on_hi, tiny) / max(on_lo, tiny)) / 2
    half_off = math.log(max(off_hi, tiny) / max(off_lo, tiny)) / 2
    sigma = math.sqrt(half_on**2 + half_off**2) / Z95
    return _Level(pair.concurrency, log_ratio(pair), low, high, max(sigma, 1e-9))


def zero_crossing(concurrency: Sequence[int], r: Sequence[float]) -> float | None:
    """Smallest C (interpolated in log2 C) from which r stays > 0; None when r ends <= 0."""
    start = None
    for i in range(len(r) - 1, -1, -1):
        if r[i] > 0:
            start = i
        else:
            break
    if start is None:
        return None
    if start == 0:
        return float(concurrency[0])
    lo, hi = start - 1, start
    x_lo, x_hi = math.log2(concurrency[lo]), math.log2(concurrency[hi])
    x = x_lo + (0.0 - r[lo]) / (r[hi] - r[lo]) * (x_hi - x_lo)
    return float(2.0**x)


def _threshold_from(crossover: float) -> int:
    return max(1, math.ceil(crossover - 1e-9))


def _separate(levels: Sequence[_Level], repeats: int) -> dict[str, Any] | None:
    """Repeats that would make each indistinguishable level's r interval clear 0 (it narrows about
    as 1/sqrt(repeats)); levels whose gap is far inside the noise are said to be equal instead."""
    if not levels:
        return None
    needed = []
    equal = []
    for lv in levels:
        half = (lv.high - lv.low) / 2
        gap = abs(lv.r)
        if gap <= 0.2 * half:
            equal.append(lv.c)
            continue
        needed.append(math.ceil(repeats * (half / gap) ** 2 * 1.1))
    repeats_needed = min(MAX_SUGGESTED_REPEATS, max([repeats + 1, *needed])) if needed else None
    return {"levels": [lv.c for lv in levels], "repeats": repeats_needed, "equal_within_noise": equal}


def recommend(
    levels: Sequence[LevelPair], noise_floor: float = DEFAULT_NOISE_FLOOR, repeats: int = 2
) -> Recommendation:
    if not levels:
        raise ValueError("recommend needs at least one level with both on and off measured")
    pairs = sorted(levels, key=lambda p: p.concurrency)
    lv = [_level(p, noise_floor) for p in pairs]
    cs = [x.c for x in lv]
    r = [x.r for x in lv]
    significant = None
    for i in range(len(lv) - 1, -1, -1):
        if lv[i].off_ahead:
            significant = i
        else:
            break
    crossing = zero_crossing(cs, r)
    measured = (
        None if crossing is None else next(c for c, ri in zip(cs, r, strict=True) if c >= crossing and ri > 0)
    )
    early = zero_crossing(cs, [x.high for x in lv])
    late = zero_crossing(cs, [x.low for x in lv])
    unclear = [x for x in lv if not x.off_ahead and not x.on_ahead]
    separate = _separate(unclear, repeats)

    if significant is None:
        top = lv[-1]
        chosen = [top]
        confidence = _phi(-top.r / top.sigma)
        label = "high" if top.on_ahead else ("medium" if top.r <= 0 else "low")
        losing = [x.c for x in lv if x.r > 0]
        why = (
            "on is ahead beyond the intervals even at the highest level: speculate at every batch size"
            if top.on_ahead
            else "off is never ahead beyond the intervals"
            + (
                f" (ahead by its mean, within the noise, at c={', '.join(str(c) for c in losing)})"
                if losing
                else ""
            )
            + ": speculate at every batch size"
        )
        return Recommendation(
            threshold=0,
            crossover=crossing if crossing is not None and losing else None,
            measured_crossover=measured,
            significant_from=None,
            range=None if early is None else (early, late),
            threshold_range=None
            if early is None
            else (_threshold_from(early), None if late is None else _threshold_from(late)),
            confidence=confidence,
            confidence_label=label,
            reason=why,
            indistinguishable_at=[x.c for x in unclear],
            chosen_levels=[x.c for x in chosen],
            to_separate=separate,
        )

    assert crossing is not None  # off is ahead (r > 0) from `significant` on
    threshold = _threshold_from(crossing)
    hi = next(i for i, c in enumerate(cs) if c >= crossing)
    chosen = [lv[hi]] if hi == 0 or crossing <= cs[0] else [lv[hi - 1], lv[hi]]
    confidence = _phi(lv[hi].r / lv[hi].sigma)
    if len(chosen) == 2:
        confidence *= _phi(-chosen[0].r / chosen[0].sigma)
    clear = lv[hi].off_ahead and (len(chosen) == 1 or chosen[0].on_ahead)
    lo_end = early if early is not None else crossing
    spread = math.inf if late is None else late / max(lo_end, 1e-9)
    label = "high" if clear else ("medium" if spread <= 4.0 else "low")
    reason = (
        f"off is ahead beyond the intervals from c={cs[significant]} up; the on/off ratio crosses 1 at "
        f"c≈{crossing:.1f}"
    )
    return Recommendation(
        threshold=threshold,
        crossover=crossing,
        measured_crossover=measured,
        significant_from=cs[significant],
        range=(lo_end, late),
        threshold_range=(_threshold_from(lo_end), None if late is None else _threshold_from(late)),
        confidence=confidence,
        confidence_label=label,
        reason=reason,
        indistinguishable_at=[x.c for x in unclear],
        chosen_levels=[x.c for x in chosen],
        to_separate=separate,
    )
