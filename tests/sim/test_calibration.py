"""The engine model reproduces the measured deployment (``agent.sim.calibration``), on its virtual clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.profile.schema import Profile
from agent.sim import acceptance, costmodel
from agent.sim.calibration import (
    ANCHOR_TOLERANCE,
    ANCHORS,
    CALIBRATION,
    CROSSOVER_CONTEXT,
    Anchor,
)
from agent.sim.config import sim_config
from agent.sim.loadmodel import run_closed_loop

ROOT = Path(__file__).resolve().parents[2]


def _anchor_id(anchor: Anchor) -> str:
    return f"c{anchor.concurrency}-{'spec' if anchor.speculative else 'nospec'}"


@pytest.mark.parametrize("anchor", ANCHORS, ids=_anchor_id)
def test_anchor_within_tolerance(anchor: Anchor, tree_profile: Profile, baseline_profile: Profile) -> None:
    profile = tree_profile if anchor.speculative else baseline_profile
    result = run_closed_loop(sim_config(profile), anchor.concurrency, anchor.input_len, anchor.output_len)
    assert result.completed == max(4 * anchor.concurrency, 32)
    error = result.output_tok_s / anchor.output_tok_s - 1
    assert abs(error) <= ANCHOR_TOLERANCE, (
        f"{_anchor_id(anchor)}: model {result.output_tok_s:.1f} tok/s, measured {anchor.output_tok_s} ({error:+.1%})"
    )


@pytest.mark.parametrize("concurrency", [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192])
def test_no_speculation_ahead_from_two_up(
    concurrency: int, tree_profile: Profile, baseline_profile: Profile
) -> None:
    plain = run_closed_loop(sim_config(baseline_profile), concurrency)
    tree = run_closed_loop(sim_config(tree_profile), concurrency)
    assert plain.output_tok_s > tree.output_tok_s, (concurrency, plain.output_tok_s, tree.output_tok_s)


def test_chain_follows_from_the_same_parameters(eagle3_profile: Profile, baseline_profile: Profile) -> None:
    """Steps 3 / topk 1 is not calibrated: with fewer verify tokens it helps a single stream a lot more
    than the tree does, and its accept length looks like the public Kimi K2.5 drafters'."""
    static = eagle3_profile.model_copy(
        update={
            "speculation": eagle3_profile.speculation.model_copy(
                update={"adaptive": False, "threshold": None}
            )
        }
    )
    chain = run_closed_loop(sim_config(static), 1)
    plain = run_closed_loop(sim_config(baseline_profile), 1)
    assert chain.output_tok_s > 1.3 * plain.output_tok_s
    assert chain.accept_length is not None and 2.3 <= chain.accept_length <= 3.8
    acc = CALIBRATION.acceptance
    lowest = 1 + acceptance.expected_accepted_drafts(
        acceptance.position_probabilities(acc, acc.first_accept_min, 3, 1)
    )
    highest = 1 + acceptance.expected_accepted_drafts(
        acceptance.position_probabilities(acc, acc.first_accept_max, 3, 1)
    )
    assert 2.1 <= lowest < highest <= 3.8


def test_speculation_costs_kv_capacity(
    tree_profile: Profile, baseline_profile: Profile, eagle3_profile: Profile
) -> None:
    plain, tree, chain = sim_config(baseline_profile), sim_config(tree_profile), sim_config(eagle3_profile)
    assert tree.pool_tokens < plain.pool_tokens  # draft weights and draft KV share
    assert tree.reserve_per_decode == 32  # 2 x max(2*4, 16), page 1 (reference §3.5 A)
    assert chain.reserve_per_decode == 8  # adaptive: widest candidate 3 -> 4 draft tokens, reserved always
    assert plain.reserve_per_decode == 0


def test_shipped_threshold_is_the_models_crossover(eagle3_profile: Profile) -> None:
    """kimi-k25-eagle3 carries the model's per-step crossover; the demo profile carries what its own
    benchmark finds on its engine (tests/sim/test_demo_story.py)."""
    crossover = costmodel.crossover_batch(CALIBRATION, 3, 1, 4, CROSSOVER_CONTEXT)
    assert crossover is not None
    assert (
        costmodel.crossover_batch(CALIBRATION, 2, 4, 16, CROSSOVER_CONTEXT) == 2
    )  # the tree loses from 2 up
    assert eagle3_profile.speculation.threshold == crossover
    # The profile runs patch 03's plain path (the schema's default); with Kimi's plain estimate
    # (the H200's measured plain cost scaled by memory bandwidth) its crossover is one request lower.
    assert eagle3_profile.speculation.zero_step == "plain"
    plain = costmodel.crossover_batch(CALIBRATION, 3, 1, 4, CROSSOVER_CONTEXT, plain=True)
    assert plain is not None and abs(plain - crossover) <= 1, (plain, crossover)
