"""How many draft tokens a verify accepts, from per-position acceptance probabilities.

Each request draws how predictable its text is once (``first_accept``, seeded by its prompt's
digest when the server saw the prompt, so the same prompt is as predictable every time); the
probability that draft position ``i`` is accepted, given that the ones before it were, is
``first_accept · decay^(i-1)``; with ``topk`` candidates per position a miss needs every candidate
to miss. All draws come from the engine's seeded generators, so a run is repeatable.
"""

from __future__ import annotations

import random

from agent.sim.calibration import Acceptance


def position_probabilities(acc: Acceptance, first_accept: float, depth: int, topk: int) -> tuple[float, ...]:
    """Conditional acceptance probability of each draft position 1..depth."""
    probs = []
    for i in range(depth):
        p = first_accept * acc.depth_decay**i
        miss = (1.0 - p) * acc.topk_miss ** (max(topk, 1) - 1)
        probs.append(min(1.0, max(0.0, 1.0 - miss)))
    return tuple(probs)


def draw_first_accept(acc: Acceptance, rng: random.Random) -> float:
    return rng.uniform(acc.first_accept_min, acc.first_accept_max)


def draw_accepted_drafts(probs: tuple[float, ...], rng: random.Random) -> int:
    """Accepted draft tokens of one verify (the bonus token is not counted)."""
    accepted = 0
    rand = rng.random
    for p in probs:
        if rand() >= p:
            break
        accepted += 1
    return accepted


def expected_accepted_drafts(probs: tuple[float, ...]) -> float:
    total, reach = 0.0, 1.0
    for p in probs:
        reach *= p
        total += reach
    return total


def mean_accept_length(acc: Acceptance, steps: int, topk: int, samples: int = 400) -> float:
    """Expected tokens per verify (accepted drafts + the bonus token), averaged over requests."""
    if steps <= 0:
        return 1.0
    width = acc.first_accept_max - acc.first_accept_min
    total = 0.0
    for i in range(samples):
        first = acc.first_accept_min + width * (i + 0.5) / samples
        total += expected_accepted_drafts(position_probabilities(acc, first, steps, topk))
    return 1.0 + total / samples
