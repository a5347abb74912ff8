"""Reconnect delays: exponential with a cap and jitter, so many consoles do not retry in lockstep."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    base_s: float = 0.5
    cap_s: float = 15.0
    jitter: float = 0.5
    """Fraction of the delay that is random: 0.5 draws from [delay/2, delay]."""

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        raw = min(self.cap_s, self.base_s * 2 ** max(0, attempt - 1))
        draw: float = rng.random() if rng is not None else random.random()
        return float(raw * (1.0 - self.jitter * draw))
