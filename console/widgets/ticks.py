"""Round axis ticks with units: 0 / 500 / 1k / 1.5k tok/s, 50 ms, 25 %, "−5m … now", 1 2 4 … 256.

plotext picks ticks by dividing the axis range evenly (4367.8, −139.2); an operator reads round
numbers in the unit of the label. These functions choose the ticks; the chart hands them to plotext.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

Formatter = Callable[[float], str]

_MANTISSAS = (1.0, 2.0, 2.5, 5.0, 10.0)
_TIME_STEPS_S = (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)


def nice_step(span: float, count: int = 4) -> float:
    """The round step (1, 2, 2.5 or 5 times a power of ten) that cuts ``span`` into about ``count``."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(1, count)
    power = 10.0 ** math.floor(math.log10(raw))
    for mantissa in _MANTISSAS:
        if mantissa * power >= raw - 1e-12:
            return mantissa * power
    return 10.0 * power


def nice_ticks(low: float, high: float, count: int = 4) -> list[float]:
    """Round ticks from a multiple of the step at or below ``low`` to one at or above ``high``."""
    if high <= low:
        high = low + 1.0
    step = nice_step(high - low, count)
    first = math.floor(low / step + 1e-9) * step
    last = math.ceil(high / step - 1e-9) * step
    n = round((last - first) / step)
    return [round(first + i * step, 10) for i in range(n + 1)]


def even_ticks(
    low: float, high: float, rows: int, count: int = 4, min_step: float = 0.0
) -> tuple[list[float], float]:
    """Round ticks that fall on rows ``rows`` apart evenly, and the axis top that puts them there.

    A chart of ``rows`` canvas rows maps ``low`` to the bottom row and the axis top to the top row;
    ticks ``step`` apart land on whole rows only when the rows between two of them are the same
    number. So the number of intervals is chosen (``count`` at most) to divide the rows, and where
    none does, the axis runs on above the last tick by the few rows left over (0 → 2.5k → 5k drawn
    2 rows and 1 row apart is what this avoids). ``min_step``: 1 for counts (no "0.25 requests")."""
    if high <= low:
        high = low + max(1.0, min_step)
    span = rows - 1
    best: tuple[int, int, list[float], float] | None = None
    for k in range(max(1, count), 0, -1):
        step = max(nice_step(high - low, k), min_step)
        first = math.floor(low / step + 1e-9) * step
        n = max(1, math.ceil((high - first) / step - 1e-9))
        ticks = [round(first + i * step, 10) for i in range(n + 1)]
        if span < n:
            if best is None:
                best = (10**6, 0, ticks, ticks[-1])
            continue
        per = span // n
        left = span - n * per
        # A row or two left over above the last tick costs less than a tick fewer.
        candidate = (left - 2 * n, -n, ticks, round(first + step * span / per, 10))
        if best is None or candidate[:2] < best[:2]:
            best = candidate
    assert best is not None
    return best[2], best[3]


def axis_labels(fmt: Formatter, ticks: list[float]) -> list[str]:
    """Tick labels in one unit for the whole axis, with as many decimals as the step needs: "0 s,
    0.5 s, 1 s", never "0 ms" beside "1 s"; "0, 2.5k, 5k"."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    top = max(abs(t) for t in ticks) if ticks else 0.0
    if fmt is fmt_ms:
        scale, unit = (1000.0, " s") if top >= 1000 else (1.0, " ms")
        return [f"{_fixed(t / scale, step / scale)}{unit}" for t in ticks]
    if fmt is fmt_count:
        if top >= 1000:
            return ["0" if t == 0 else f"{_fixed(t / 1000, step / 1000)}k" for t in ticks]
        return [_fixed(t, step) for t in ticks]
    if fmt is fmt_pct:
        return [f"{_fixed(t, step)}%" for t in ticks]
    if fmt is fmt_plain:
        return [_fixed(t, step) for t in ticks]
    return [fmt(t) for t in ticks]


def _fixed(value: float, step: float) -> str:
    """``value`` with the decimals ``step`` needs (2.5 → one, 0.25 → two, at most three)."""
    digits = 0
    while digits < 3 and abs(step * 10**digits - round(step * 10**digits)) > 1e-6:
        digits += 1
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _trim(value: float, digits: int = 1) -> str:
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def fmt_count(value: float) -> str:
    """1,234 → "1.2k"; small values as they are (a queue of 3 is "3")."""
    if abs(value) >= 1000:
        return f"{_trim(value / 1000)}k"
    return _trim(value)


def fmt_ms(value: float) -> str:
    if abs(value) >= 1000:
        return f"{_trim(value / 1000)} s"
    return f"{_trim(value)} ms"


def fmt_pct(value: float) -> str:
    return f"{_trim(value)}%"


def fmt_plain(value: float) -> str:
    return _trim(value, 2)


def time_label(seconds_before: float) -> str:
    """−300 → "−5m", −45 → "−45s", 0 → "now"."""
    if abs(seconds_before) < 0.5:
        return "now"
    s = abs(seconds_before)
    if s >= 3600 and s % 3600 == 0:
        return f"−{s / 3600:.0f}h"
    if s >= 60 and s % 60 == 0:
        return f"−{s / 60:.0f}m"
    if s >= 60:
        return f"−{s / 60:.1f}m"
    return f"−{s:.0f}s"


def time_ticks(window_s: float, count: int = 5) -> list[tuple[float, str]]:
    """Ticks at round times before now across a window (x is negative seconds, now is 0)."""
    step = next((s for s in _TIME_STEPS_S if window_s / s <= count), _TIME_STEPS_S[-1])
    ticks = []
    x = 0.0
    while x >= -window_s - 1e-9:
        ticks.append((x, time_label(x)))
        x -= step
    return list(reversed(ticks))


def log2_ticks(levels: Sequence[int]) -> list[tuple[float, str]]:
    """Bench levels on a log axis: x is log2(level), the label the level itself."""
    return [(math.log2(level), str(level)) for level in sorted(set(levels)) if level > 0]
