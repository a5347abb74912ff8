"""The recommended speculation threshold from an on/off sweep: pure arithmetic, no I/O.

The threshold is the running batch size at or above which the server stops speculating. We work on
r(C) = ln(off(C) / on(C)), the log of the throughput ratio (> 0: off is faster), and its noise
sigma(C) = sqrt(e_on² + e_off² + floor²) from each level's relative standard error (see
``stats.throughput_relative_error``) plus a floor for run-to-run drift that one level cannot see.

* Off "beats on by more than the noise" at C when r(C) > z·sigma(C).
* The recommendation needs a level from which that holds at every higher level (one lucky point
  does not count). Without one, speculation never loses beyond the noise: threshold 0 (speculate at
  every batch size, live_control.NO_THRESHOLD).
* The crossing is refined between sweep points: r is interpolated linearly in log2(C) between the
  last level where r <= 0 and the next, and the threshold is where r reaches 0.
* Confidence: the same crossing with r shifted by ±z·sigma gives a range; "high" when the range is
  within one doubling (one sweep step), plus the probability that the two bracketing points are on
  the sides they appear to be.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

DEFAULT_Z = 2.0
DEFAULT_NOISE_FLOOR = 0.01


@dataclass(frozen=True)
class LevelPair:
    concurrency: int
    on: float
    off: float
    on_rel_err: float = 0.0
    off_rel_err: float = 0.0


@dataclass(frozen=True)
class Recommendation:
    threshold: int
    """0 = speculate at every batch size; N = stop speculating at N running requests or more."""
    crossover: float | None
    """Refined concurrency where off starts to beat on (None: it never does)."""
    measured_crossover: int | None
    """Smallest sweep level from which off >= on at every higher level (unrefined)."""
    significant_from: int | None
    """Smallest sweep level from which off beats on by more than the noise at every higher level."""
    range: tuple[float, float | None] | None
    """Crossing with the curve shifted by ±z·sigma; None for the upper end: off may never win."""
    confidence: float
    confidence_label: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["range"] = list(self.range) if self.range is not None else None
        return data


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def log_ratio(pair: LevelPair) -> float:
    return math.log(max(pair.off, 1e-12) / max(pair.on, 1e-12))


def noise(pair: LevelPair, floor: float = DEFAULT_NOISE_FLOOR) -> float:
    return math.sqrt(pair.on_rel_err**2 + pair.off_rel_err**2 + floor**2)


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


def recommend(
    levels: Sequence[LevelPair], z: float = DEFAULT_Z, noise_floor: float = DEFAULT_NOISE_FLOOR
) -> Recommendation:
    if not levels:
        raise ValueError("recommend needs at least one level with both on and off measured")
    pairs = sorted(levels, key=lambda p: p.concurrency)
    cs = [p.concurrency for p in pairs]
    r = [log_ratio(p) for p in pairs]
    sig = [noise(p, noise_floor) for p in pairs]

    significant = None
    for i in range(len(pairs) - 1, -1, -1):
        if r[i] > z * sig[i]:
            significant = i
        else:
            break
    crossing = zero_crossing(cs, r)
    measured = (
        None if crossing is None else next(c for c, ri in zip(cs, r, strict=True) if c >= crossing and ri > 0)
    )
    early = zero_crossing(cs, [ri + z * s for ri, s in zip(r, sig, strict=True)])
    late = zero_crossing(cs, [ri - z * s for ri, s in zip(r, sig, strict=True)])

    if significant is None:
        losing = [c for c, ri in zip(cs, r, strict=True) if ri > 0]
        why = (
            "off never beats on by more than the noise"
            + (f" (ahead within the noise at c={losing})" if losing else "")
            + ": speculate at every batch size"
        )
        worst = max(r[i] / sig[i] for i in range(len(r)))
        return Recommendation(
            threshold=0,
            crossover=crossing if crossing is not None and losing else None,
            measured_crossover=measured,
            significant_from=None,
            range=None if early is None else (early, late),
            confidence=_phi(-worst) if worst > -math.inf else 1.0,
            confidence_label="high" if worst < -z else ("medium" if worst < 0 else "low"),
            reason=why,
        )

    assert crossing is not None  # r > z·sigma > 0 from `significant` on
    threshold = _threshold_from(crossing)
    bracket_hi = next(i for i, c in enumerate(cs) if c >= crossing)
    confidence = _phi(r[bracket_hi] / sig[bracket_hi])
    if bracket_hi > 0 and crossing > cs[0]:
        confidence *= _phi(-r[bracket_hi - 1] / sig[bracket_hi - 1])
    lo = early if early is not None else crossing
    spread = math.inf if late is None else late / max(lo, 1e-9)
    label = "high" if spread <= 2.0 else ("medium" if spread <= 4.0 else "low")
    reason = (
        f"off beats on by more than the noise (z={z:g}) from c={cs[significant]} up; the on/off ratio "
        f"crosses 1 at c≈{crossing:.1f}"
    )
    return Recommendation(
        threshold=threshold,
        crossover=crossing,
        measured_crossover=measured,
        significant_from=cs[significant],
        range=(lo, late),
        confidence=confidence,
        confidence_label=label,
        reason=reason,
    )
