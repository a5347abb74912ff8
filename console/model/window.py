"""The charts' time window: one of a few an operator cycles through with a key, and keeps."""

from __future__ import annotations

CHART_WINDOWS_S: tuple[float, ...] = (60.0, 300.0, 900.0, 3600.0)
DEFAULT_WINDOW_S = 300.0


def next_window(current: float) -> float:
    """The next preset after ``current`` (wrapping); an unknown value goes to the first."""
    if current not in CHART_WINDOWS_S:
        return CHART_WINDOWS_S[0]
    return CHART_WINDOWS_S[(CHART_WINDOWS_S.index(current) + 1) % len(CHART_WINDOWS_S)]


def window_label(window_s: float) -> str:
    """ "1 m", "5 m", "15 m", "1 h": the words the footer and the chart legends use."""
    if window_s >= 3600 and window_s % 3600 == 0:
        return f"{window_s / 3600:.0f} h"
    if window_s >= 60:
        return f"{window_s / 60:.0f} m"
    return f"{window_s:.0f} s"
