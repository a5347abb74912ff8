"""The ramp's arithmetic: each arm's total over the ramp, the ratios between arms, and their noise.

Pure functions over the windows ``autopilot_ramp.py`` measured (dicts with ``level_index``,
``concurrency``, ``arm``, ``threshold`` and a figure per key, ``client_tps`` or ``engine_tps``):

* **An arm's ramp total** is the mean of its figures over the ramp's levels: every level is held
  for the same time, so this is the tokens/s the arm would deliver over the whole ramp alone.
* **A ratio** of two arms is the ratio of their totals over the levels both measured.
* **Its noise** is the spread of one window's figure, measured on the ramp itself: a fixed arm
  measured twice at one concurrency with one threshold (the climb and the descent pass every level
  but the top twice) is a repeat of the same setting minutes apart, so the pooled variance of the
  log figures within those groups is one window's variance, drift between the two passes included.
  The spread of equal slices within each window is the floor (it misses the drift); the larger of
  the two is used. With relative standard deviation s per window, ln(ΣA/ΣB) has variance
  s²·(ΣA²/(ΣA)² + ΣB²/(ΣB)²), and the 95 % interval is the ratio times exp(± t·sd), t with the
  repeats' degrees of freedom. Windows of the three arms at one level share that level's conditions,
  which this treats as independent: the interval is, if anything, too wide.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.bench.interval import T975, Z975

ARMS = ("autopilot", "best", "profile")
FIXED_ARMS = ("best", "profile")

Window = Mapping[str, Any]


def t975(df: int) -> float:
    """Student's t 97.5 % quantile for ``df`` >= 1 degrees of freedom (the bench's table, then an expansion)."""
    return T975[df - 1] if df <= len(T975) else Z975 + 2.4 / df


@dataclass(frozen=True)
class Noise:
    """One window's relative standard deviation, and where it comes from."""

    sigma: float | None
    df: int
    source: str
    between: float | None
    between_df: int
    within: float | None
    within_df: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "sigma": self.sigma,
            "df": self.df,
            "source": self.source,
            "between_windows": self.between,
            "between_windows_df": self.between_df,
            "within_windows": self.within,
            "within_windows_df": self.within_df,
        }


def _between(windows: Iterable[Window], key: str) -> tuple[float | None, int, int]:
    """(pooled sd of ln(figure) over repeated fixed settings, its degrees of freedom, the groups)."""
    groups: dict[tuple[Any, int], list[float]] = defaultdict(list)
    for w in windows:
        value = w.get(key)
        if w["arm"] in FIXED_ARMS and value is not None and value > 0:
            groups[(w["threshold"], w["concurrency"])].append(math.log(value))
    squares, df, used = 0.0, 0, 0
    for values in groups.values():
        if len(values) < 2:
            continue
        mean = statistics.fmean(values)
        squares += sum((v - mean) ** 2 for v in values)
        df += len(values) - 1
        used += 1
    return (math.sqrt(squares / df) if df else None), df, used


def _within(windows: Iterable[Window]) -> tuple[float | None, int]:
    """(rms over windows of the relative sd of a window's mean from its slices, degrees of freedom)."""
    weighted, df = 0.0, 0
    for w in windows:
        rates = [t / s for t, s in w.get("slices") or [] if s > 0]
        if len(rates) < 2 or statistics.fmean(rates) <= 0:
            continue
        rel = statistics.stdev(rates) / statistics.fmean(rates) / math.sqrt(len(rates))
        weighted += (len(rates) - 1) * rel**2
        df += len(rates) - 1
    return (math.sqrt(weighted / df) if df else None), df


def window_noise(windows: Sequence[Window], key: str) -> Noise:
    between, between_df, groups = _between(windows, key)
    within, within_df = _within(windows) if key == "client_tps" else (None, 0)
    if between is not None:
        sigma = between if within is None else max(between, within)
        source = (
            f"repeats: the fixed arms' windows at one concurrency and threshold ({groups} settings "
            f"measured more than once, {between_df} degrees of freedom)"
        )
        if within is not None and within > between:
            source += "; the slices within the windows spread more, and that is used"
        return Noise(sigma, between_df, source, between, between_df, within, within_df)
    if within is not None:
        source = (
            "the slices within each window only (no fixed setting was measured twice): "
            "it misses the drift between windows, so the interval is likely too narrow"
        )
        return Noise(within, within_df, source, None, 0, within, within_df)
    return Noise(None, 0, "nothing to tell the noise from", None, 0, None, 0)


def by_level(windows: Iterable[Window], arm: str, key: str) -> dict[int, float]:
    return {
        int(w["level_index"]): float(w[key]) for w in windows if w["arm"] == arm and w.get(key) is not None
    }


def ramp_total(windows: Sequence[Window], arm: str, key: str, levels: int) -> float | None:
    """The arm's mean figure over the ramp's levels; None unless it has a figure at every level."""
    figures = by_level(windows, arm, key)
    if len(figures) < levels or not figures:
        return None
    return statistics.fmean(figures.values())


def ratio(windows: Sequence[Window], a: str, b: str, key: str, noise: Noise) -> dict[str, Any] | None:
    """Arm ``a``'s total over arm ``b``'s, over the levels both measured, with a 95 % interval."""
    first, second = by_level(windows, a, key), by_level(windows, b, key)
    common = sorted(set(first) & set(second))
    if not common:
        return None
    xs, ys = [first[i] for i in common], [second[i] for i in common]
    total_a, total_b = sum(xs), sum(ys)
    if total_a <= 0 or total_b <= 0:
        return None
    value = total_a / total_b
    out: dict[str, Any] = {"ratio": value, "low": None, "high": None, "levels": len(common), "per_level": []}
    t = t975(noise.df) if noise.sigma is not None and noise.df >= 1 else None
    if t is not None and noise.sigma is not None:
        spread = noise.sigma * math.sqrt(
            sum(x * x for x in xs) / total_a**2 + sum(y * y for y in ys) / total_b**2
        )
        out["low"], out["high"] = value * math.exp(-t * spread), value * math.exp(t * spread)
    concurrency = {int(w["level_index"]): int(w["concurrency"]) for w in windows}
    for i, x, y in zip(common, xs, ys, strict=True):
        level: dict[str, Any] = {
            "level_index": i,
            "concurrency": concurrency[i],
            "ratio": x / y if y else None,
        }
        if t is not None and noise.sigma is not None and y:
            half = t * noise.sigma * math.sqrt(2)
            level["low"], level["high"] = x / y * math.exp(-half), x / y * math.exp(half)
        out["per_level"].append(level)
    return out


def verdict(found: Mapping[str, Any] | None, goal: float) -> str:
    """Whether a ratio reaches ``goal``, in words that say how sure that is."""
    if found is None:
        return "not measured"
    value, low, high = found["ratio"], found.get("low"), found.get("high")
    if value >= goal:
        if low is None:
            return f"met by the figure (≥ {goal:g}); no interval to say how sure"
        if low >= goal:
            return f"met (≥ {goal:g}), beyond the noise: the whole interval is above"
        return f"met by the figure (≥ {goal:g}), within the noise: the interval reaches {low:.3f}"
    short = (goal - value) / goal * 100
    if high is not None and high < goal:
        return f"short of {goal:g} by {short:.1f} %, beyond the noise: the whole interval is below"
    if high is None:
        return f"short of {goal:g} by {short:.1f} %; no interval to say how sure"
    return f"short of {goal:g} by {short:.1f} %, within the noise: the interval reaches {high:.3f}"
