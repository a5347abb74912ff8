"""The one-parameter model of acceptance across step counts: each draft position kept with one
probability ``p``, so that a reading at one step count says what another would keep.

The autopilot's estimator predicts the step counts that do not run with it; the acceptance findings
compare a reading with the server's recent level at its own step count (``acceptance``).
"""

from __future__ import annotations


def geometric_accept(p: float, steps: int) -> float:
    """Accept length (bonus token included) when each draft position is accepted with probability ``p``."""
    return float(sum(p**i for i in range(steps + 1)))


def solve_p(accept: float, steps: int) -> float:
    """The ``p`` for which ``geometric_accept(p, steps) == accept`` (clamped to [0, 1])."""
    if steps <= 0 or accept <= 1.0:
        return 0.0
    if accept >= steps + 1:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if geometric_accept(mid, steps) < accept else (lo, mid)
    return (lo + hi) / 2
