"""Reconnect delays: exponential with a cap and jitter, so many consoles do not retry in lockstep.

A failure marked ``slow`` (a host name that does not resolve) starts at seconds and grows to
minutes, and after ``slow_give_up`` tries in a row the console stops and says so: a typo in a host
name must not become a retry loop that runs all night.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    base_s: float = 0.5
    cap_s: float = 15.0
    jitter: float = 0.5
    """Fraction of the delay that is random: 0.5 draws from [delay/2, delay]."""
    slow_base_s: float = 5.0
    slow_cap_s: float = 300.0
    slow_give_up: int = 8
    """Slow failures in a row after which the console stops retrying (about 15 minutes of tries)."""

    def delay(self, attempt: int, rng: random.Random | None = None, *, slow: bool = False) -> float:
        base, cap = (self.slow_base_s, self.slow_cap_s) if slow else (self.base_s, self.cap_s)
        raw = min(cap, base * 2 ** max(0, attempt - 1))
        draw: float = rng.random() if rng is not None else random.random()
        return float(raw * (1.0 - self.jitter * draw))

    def gives_up(self, attempt: int, *, slow: bool) -> bool:
        return slow and attempt >= self.slow_give_up
