"""Wasted drafts over the last minute: the share of drafted tokens rejected, and the decoding time
they took (issue 49's "wasted-draft ratio", which SGLang does not export).

Each tick that drafts with requests running adds its seconds and SGLang's acceptance rate of that
moment (accepted drafts over proposed drafts; ``Speculation.accept_rate``). The decode time a rejected
draft costs is not measured by anyone: a round drafts ``draft_tokens - 1`` tokens and verifies
``draft_tokens`` positions per request, so the round's time is shared over those positions and the
rejected ones' share counted as waste. It is an estimate, said so wherever it is shown; the share is
SGLang's own count.
"""

from __future__ import annotations

from collections import deque
from typing import Final

from agent.wire import Speculation

WINDOW_S: Final = 60.0
""""Per minute"."""
MAX_TICK_S: Final = 5.0
"""A gap longer than this between two ticks (a stopped agent, a stalled loop) counts as this long."""


class DraftWaste:
    def __init__(self) -> None:
        self._ticks: deque[tuple[float, float, float, float]] = deque()
        """(time, seconds drafting, rejected share, rejected positions' share of the round), oldest first."""
        self._last: float | None = None

    def clear(self) -> None:
        self._ticks.clear()
        self._last = None

    def observe(self, now: float, spec: Speculation, running: int | None) -> Speculation:
        """``spec`` with the minute's drafting seconds, rejected share and wasted seconds filled in."""
        dt = 0.0 if self._last is None else min(max(0.0, now - self._last), MAX_TICK_S)
        self._last = now
        rate, steps = spec.accept_rate, spec.steps
        # Only while requests finish (counters): SGLang's rate holds its last window when idle, and
        # reads 0 before its first one.
        counted = spec.accept_source == "counters"
        if spec.on is True and counted and (running or 0) > 0 and rate is not None and steps and dt > 0:
            rejected = 1.0 - min(1.0, max(0.0, rate))
            tokens = spec.draft_tokens if spec.draft_tokens and spec.draft_tokens > 1 else steps + 1
            self._ticks.append((now, dt, rejected, (tokens - 1) / tokens))
        while self._ticks and self._ticks[0][0] <= now - WINDOW_S:
            self._ticks.popleft()
        if not spec.configured:
            return spec
        drafting = sum(t[1] for t in self._ticks)
        if drafting <= 0:
            return spec.model_copy(update={"drafting_s_per_min": 0.0})
        share = sum(t[1] * t[2] for t in self._ticks) / drafting
        wasted = sum(t[1] * t[2] * t[3] for t in self._ticks)
        return spec.model_copy(
            update={
                "drafting_s_per_min": round(drafting, 2),
                "rejected_draft_share": round(share, 4),
                "wasted_draft_s_per_min": round(wasted, 2),
            }
        )
