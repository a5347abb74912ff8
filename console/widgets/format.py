"""How numbers look on screen; "unknown" is a dash, never a zero."""

from __future__ import annotations

from datetime import UTC, datetime

from agent.wire.actions import setting_words

DASH = "–"


def num(value: float | int | None, fmt: str = ",.0f", unit: str = "") -> str:
    return DASH if value is None else f"{value:{fmt}}{unit}"


THROTTLE_WORDS: dict[str, str] = {
    "gpu_idle": "idle",
    "applications_clocks_setting": "app clocks",
    "sw_power_cap": "power cap",
    "hw_slowdown": "HW slowdown",
    "sync_boost": "sync boost",
    "sw_thermal_slowdown": "hot (SW)",
    "hw_thermal_slowdown": "hot (HW)",
    "hw_power_brake_slowdown": "power brake",
    "display_clock_setting": "display clock",
}
"""NVML's clock-event reasons (the agent's ``telemetry.throttle`` names) in an operator's words, short
enough that the GPU table's last column fits 80 columns."""


def throttle(reasons: list[str]) -> str:
    """Why the clocks are held back, in words ("power cap, hot (HW)"); "none" when nothing holds them."""
    return ", ".join(THROTTLE_WORDS.get(r, r.replace("_", " ")) for r in reasons) or "none"


def ms(seconds: float | None) -> str:
    """A latency in one operator's unit: "62 ms" below a second, "66.2 s" from one (never "66,244 ms"
    beside a finding's "79.7 s")."""
    if seconds is None:
        return DASH
    if seconds >= 100:
        return f"{seconds:,.0f} s"
    if seconds >= 1:
        return f"{seconds:.1f} s"
    return f"{seconds * 1000:,.0f} ms"


def latency(seconds: float | None, above_top: bool = False) -> str:
    """A percentile: "62 ms"; one that fell in SGLang's ``+Inf`` bucket is a lower bound, written
    ">30 s" with the top bucket's bound, never as if the bound were the value."""
    if seconds is None:
        return DASH
    if above_top:
        return f">{seconds:g} s" if seconds >= 1 else f">{seconds * 1000:.0f} ms"
    return ms(seconds)


def span(seconds: float) -> str:
    """How long a window is: "10 s", "6.2 s" while it fills, "0.2 s", "2 m"."""
    if seconds < 9.95:
        return f"{seconds:.1f}".rstrip("0").rstrip(".") + " s"
    return duration(seconds)


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


def human(value: object) -> str:
    """A setting's value in an operator's words: never ``None``, ``True``, ``[]`` or ``{'k': v}``.

    None is "unset", booleans are "on"/"off", lists are joined ("1, 2, 3"; empty is "none"), maps
    read "key = value", numbers lose trailing zeros.
    """
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".") if value != int(value) else f"{value:.0f}"
    if isinstance(value, list | tuple | set | frozenset):
        items = [human(v) for v in value]
        return ", ".join(items) if items else "none"
    if isinstance(value, dict):
        if not value:
            return "none"
        return ", ".join(f"{k} = {human(v)}" for k, v in value.items())
    return str(value)


def human_setting(key: str, value: object) -> str:
    """``human`` for a setting the action catalogue knows in its words ("none (speculate at every
    batch size)", "not pinned (SGLang's policy chooses)"), any other as ``human`` says it."""
    said = setting_words(key, value, long=True)
    return said if said is not None else human(value)


def since(start: float, now: float) -> str:
    """ "since 12:03:05 UTC (4 m)": when something began and how long ago, both by the agent's clock."""
    return f"since {clock(start)} UTC ({duration(max(0.0, now - start))})"


def duration(seconds: float) -> str:
    """42 s, 4 m 10 s, 1 h 5 m: short and exact enough for an ETA or an age."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        m, rest = divmod(s, 60)
        return f"{m} m {rest} s" if rest and m < 10 else f"{m} m"
    h, rest = divmod(s, 3600)
    return f"{h} h {rest // 60} m" if rest >= 60 else f"{h} h"
