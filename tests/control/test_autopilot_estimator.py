"""The autopilot's estimator and policy on measurements made up from a known truth: what it estimates is
the truth within its stated uncertainty, and its crossover is where the truth's is."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from agent.control.autopilot.estimator import (
    MIN_CELL_S,
    Cell,
    Estimator,
    batch_bin,
    bin_batch,
    context_bin,
    geometric_accept,
    solve_p,
)
from agent.control.autopilot.policy import Crossover, Setting, candidates, crossover, score
from agent.control.autopilot.settings import settings_of
from agent.profile import load_profile

CTX = context_bin(1024)


def rounds_per_s(arm: int, batch: float) -> float:
    """A made-up engine: a round costs a fixed part plus a part per token in the verify pass."""
    tokens = batch * (arm + 1)
    return 1.0 / (0.010 + 0.00015 * tokens + 0.0015 * (arm > 0))


def feed(est: Estimator, arm: int, batches: list[float], *, accept: float, at: float = 0.0, seconds: int = 20,
         prefill_s_per_token: float = 0.0, rng: random.Random | None = None) -> float:  # fmt: skip
    """``seconds`` one-second segments of ``arm`` at each batch; returns the time after them."""
    rng = rng or random.Random(0)
    if arm > 0:
        est.accept.observe(at, arm, accept)
    t = at
    for batch in batches:
        for _ in range(seconds):
            t += 1.0
            prefill = rng.choice((0.0, 0.0, 600.0, 1500.0))
            decoding = 1.0 - prefill * prefill_s_per_token
            tokens = (
                rounds_per_s(arm, batch)
                * batch
                * (accept if arm else 1.0)
                * decoding
                * rng.uniform(0.98, 1.02)
            )
            assert est.add(t, CTX, arm, batch, 1.0, tokens, prefill)
    return t


def test_bins_are_quarter_octaves_of_batch_and_factors_of_four_of_context() -> None:
    assert [batch_bin(b) for b in (1, 2, 4, 64)] == [0, 4, 8, 24]
    assert bin_batch(batch_bin(48)) == pytest.approx(48, rel=0.1)
    # A 512-token prompt writing 1024 tokens reads 512 → 1536: one bin through its life; 4k is another.
    assert context_bin(520) == context_bin(1536) == context_bin(1024) != context_bin(4096)


def test_the_geometric_acceptance_model_inverts() -> None:
    for p in (0.0, 0.3, 0.8, 1.0):
        assert solve_p(geometric_accept(p, 3), 3) == pytest.approx(p, abs=1e-6)
    assert geometric_accept(1.0, 3) == 4.0 and geometric_accept(0.0, 2) == 1.0


def test_prefill_time_is_regressed_out_of_the_decode_rate() -> None:
    est = Estimator()
    feed(est, 0, [16, 32], accept=1.0, prefill_s_per_token=0.0002, rng=random.Random(3))
    assert est.prefill_cost(CTX) == pytest.approx(0.0002, rel=0.15)
    found = est.predict(CTX, 0, batch_bin(32), 40.0)
    assert found is not None and found.own
    truth = rounds_per_s(0, bin_batch(batch_bin(32))) * bin_batch(batch_bin(32))
    assert found.tok_s == pytest.approx(truth, rel=0.05)  # the decode rate, not the prefill-diluted one


def test_an_acceptance_shift_moves_every_drafting_prediction_at_once() -> None:
    est = Estimator()
    t = feed(est, 3, [16, 32], accept=2.8)
    before = est.predict(CTX, 3, batch_bin(16), t)
    assert before is not None
    for step in range(60):  # the accept length falls to 1.4, nothing else is measured
        est.accept.observe(t + step, 3, 1.4)
    after = est.predict(CTX, 3, batch_bin(16), t + 60)
    assert after is not None
    assert after.tok_s / before.tok_s == pytest.approx(1.4 / 2.8, rel=0.05)
    # The other step counts follow through the geometric model (1 step keeps less than 3 do).
    one = est.accept.length(1, t + 60)
    assert one is not None and 1.0 < one[0] < 1.4


def test_a_bin_without_its_own_cell_borrows_through_a_reference_arm_and_says_so() -> None:
    est = Estimator()
    feed(est, 3, [16, 24, 32], accept=2.5)
    feed(est, 0, [16], accept=1.0)
    borrowed = est.predict(CTX, 0, batch_bin(32), 100.0)
    assert borrowed is not None and not borrowed.own
    truth = rounds_per_s(0, bin_batch(batch_bin(32))) * bin_batch(batch_bin(32))
    assert abs(borrowed.tok_s - truth) / truth < 3 * borrowed.se_rel + 0.1
    assert borrowed.se_rel > est.predict(CTX, 0, batch_bin(16), 100.0).se_rel  # type: ignore[union-attr]
    assert est.predict(CTX, 0, batch_bin(256), 100.0) is None  # beyond two octaves: unknown, not guessed


def test_a_cell_stands_for_its_bin_only_after_enough_seconds() -> None:
    est = Estimator()
    feed(est, 0, [8], accept=1.0, seconds=int(MIN_CELL_S) - 1)
    assert est.predict(CTX, 0, batch_bin(8), 10.0) is None
    feed(est, 0, [8], accept=1.0, seconds=2, at=10.0)
    assert est.predict(CTX, 0, batch_bin(8), 12.0) is not None


def test_cell_regression_recovers_a_known_line() -> None:
    cell = Cell(last=0.0)
    for i in range(200):
        x = (i % 5) * 300.0
        cell.add(float(i), 1.0, 50.0 * (1 - 0.0003 * x), x)
    slope = cell.slope()
    assert slope is not None and slope[0] == pytest.approx(0.0003, rel=1e-6)
    assert cell.rounds(0.0003) == pytest.approx(50.0, rel=1e-9) and cell.se_rel(0.0003) < 0.01


def truth_crossover(steps: int, accept: float) -> float:
    """Where the made-up engine's drafting at ``steps`` stops paying (solved numerically)."""
    lo, hi = 1.0, 4096.0
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        wins = rounds_per_s(steps, mid) * accept > rounds_per_s(0, mid)
        lo, hi = (mid, hi) if wins else (lo, mid)
    return lo


def test_the_crossover_lands_where_the_truth_has_it_within_its_uncertainty() -> None:
    est = Estimator()
    batches = [bin_batch(b) for b in range(batch_bin(8), batch_bin(160) + 1)]
    t = feed(est, 2, batches, accept=2.2)
    feed(est, 0, batches, accept=1.0, at=t)
    cross = crossover(est, CTX, 2, t + 1)
    truth = truth_crossover(2, 2.2)
    assert cross.note is None and cross.value is not None and cross.low is not None and cross.high is not None
    assert cross.low <= truth * 1.1 and truth / 1.1 <= cross.high
    assert cross.value == pytest.approx(truth, rel=0.15)
    assert cross.threshold == math.ceil(cross.value)


def test_crossover_above_and_below_what_was_measured() -> None:
    est = Estimator()
    t = feed(est, 2, [4, 6, 8], accept=3.0)
    feed(est, 0, [4, 6, 8], accept=1.0, at=t)
    above = crossover(est, CTX, 2, t + 1, top_bin=batch_bin(8))
    assert above.note == "above" and above.threshold == 0  # the traffic never ran past what was measured
    assert crossover(est, CTX, 2, t + 1, top_bin=batch_bin(128)).threshold is None  # it did: unknown there
    never = crossover(est, CTX, 2, t + 1, never_pays=True)
    assert never.note == "below" and never.threshold == 1


def test_a_setting_is_scored_on_the_batches_the_traffic_runs_and_only_where_it_differs() -> None:
    est = Estimator()
    t = feed(est, 2, [8, 128], accept=2.2)
    t = feed(est, 0, [8, 128], accept=1.0, at=t)
    for _ in range(100):
        est.note_batch(t, 128, 1.0)  # the traffic runs at 128 only
    current, lower = Setting(0, 2), Setting(64, 2)
    found = score(est, CTX, current, lower, None, t)
    assert found is not None
    expected = (
        rounds_per_s(0, bin_batch(batch_bin(128))) / (rounds_per_s(2, bin_batch(batch_bin(128))) * 2.2) - 1
    )
    assert found.gain == pytest.approx(expected, abs=3 * found.sd + 0.02) and found.gain > 0
    same = score(est, CTX, current, Setting(256, 2), None, t)  # differs nowhere the traffic runs
    assert same is not None and same.gain == 0.0


def test_every_candidate_is_within_the_operators_bounds_even_from_the_operators_own_threshold() -> None:
    """The threshold in force may be the operator's, outside the autopilot's bounds (125 against 2-64):
    a steps-only candidate must not carry it (the engine-model run once moved to steps 3 at 125)."""
    settings = replace(
        settings_of(load_profile("profiles/kimi-k25-eagle3.toml")), threshold_min=2, threshold_max=64
    )
    operators = Setting(125, -1)
    crossing = {2: Crossover(2, 40.0, 30.0, 50.0, None, 40), 3: Crossover(3, 200.0, 150.0, 260.0, None, 200)}
    found = candidates(settings, operators, crossing)
    assert {s.steps for s in found} == set(settings.steps)
    assert all(2 <= s.threshold <= 64 for s in found), found
    assert Setting(40, 2) in found and Setting(64, 3) in found
