"""How numbers look on screen; "unknown" is a dash, never a zero."""

from __future__ import annotations

from datetime import UTC, datetime

DASH = "–"


def num(value: float | int | None, fmt: str = ",.0f", unit: str = "") -> str:
    return DASH if value is None else f"{value:{fmt}}{unit}"


def ms(seconds: float | None) -> str:
    return DASH if seconds is None else f"{seconds * 1000:,.0f} ms"


def gib(n_bytes: int | None) -> str:
    return DASH if n_bytes is None else f"{n_bytes / 2**30:,.1f}G"


def clock(unix_time: float) -> str:
    """Snapshot times in UTC: the agent's clock, the same for every operator looking."""
    return datetime.fromtimestamp(unix_time, UTC).strftime("%H:%M:%S")


def age(seconds: float | None) -> str:
    if seconds is None:
        return "no data yet"
    if seconds < 90:
        return f"{seconds:.0f}s ago"
    return f"{seconds / 60:.0f}m ago"


_SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float | None], top: float) -> str:
    """A text sparkline for table cells; unknown samples are blanks."""
    out = []
    for value in values:
        if value is None or top <= 0:
            out.append(" ")
        else:
            out.append(_SPARK[min(len(_SPARK) - 1, max(0, int(value / top * (len(_SPARK) - 1) + 0.5)))])
    return "".join(out)
