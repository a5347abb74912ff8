"""KV allocation formulas (SGLang 0.5.23 allocation_sizing.py) and the operator's what-ifs.

The numbers are the reference's worked examples (sglang-0.5.23.md §3.5); the contract tests run the
same table against the wheel's own functions.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.profile import load_profile, parse_profile
from agent.sglang import kv
from agent.sglang.kv import SpecShape

PROFILES = Path(__file__).resolve().parents[2] / "profiles"

# The shipped threshold is the simulated engine's crossover and may move; tests edit whatever it is.
THRESHOLD_LINE = re.search(r"^threshold = \d+$", (PROFILES / "kimi-k25-eagle3.toml").read_text(), re.M)[0]  # type: ignore[index]


@pytest.mark.parametrize(
    ("spec", "page", "alloc", "row_extra"),
    [
        (None, 1, 1, 4),
        (None, 16, 1, 4),
        (SpecShape(2, 4, 16), 1, 16, 20),  # example A
        (SpecShape(3, 1, 4), 16, 4, 23),  # example B
        (SpecShape(2, 4, 16), 16, 128, 271),  # example C
        (SpecShape(2, 4, 8), 16, 128, 271),  # example C with 8 draft tokens: 128 dominates
        (SpecShape(3, 1, 4, max_draft_tokens=8), 1, 8, 12),  # example D: default adaptive table
        (SpecShape(0, 1, 1, max_draft_tokens=8), 1, 8, 12),  # adaptive tier 0 still reserves the widest
        (SpecShape(5, 4, 8), 1, 20, 12),  # steps·topk dominates the draft tokens
        (SpecShape(3, 2, 6), 4, 16, 35),  # ((4-1)+3+4-1)//4 = 2 pages per branch, 2 branches
    ],
)
def test_alloc_len_and_row_extra(spec: SpecShape | None, page: int, alloc: int, row_extra: int) -> None:
    assert kv.alloc_len_per_decode(spec, page) == alloc
    assert kv.reserve_per_decode(spec, page) == 2 * alloc
    assert kv.req_to_token_extra_context_len(spec, page) == row_extra


def test_next_alloc_is_page_aligned_and_never_shrinks() -> None:
    # example B: committed 1,000 + 8 → 1,008 (already aligned); 1,001 + 8 → 1,024
    assert kv.next_alloc_len(1000, 1000, 8, 16) == 1008
    assert kv.next_alloc_len(1001, 1001, 8, 16) == 1024
    assert kv.next_alloc_len(1000, 1100, 8, 16) == 1100
    assert kv.next_alloc_len(1000, 1000, 32, 1) == 1032


def test_page_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        kv.alloc_len_per_decode(SpecShape(3, 1, 4), 0)


def _profile_text(name: str) -> str:
    return (PROFILES / name).read_text()


def test_adaptive_profile_reserves_its_widest_candidate() -> None:
    profile = load_profile(PROFILES / "kimi-k25-eagle3.toml")
    shape = kv.spec_shape_for_profile(profile)
    assert shape == SpecShape(steps=3, topk=1, draft_tokens=4, max_draft_tokens=4)
    # pinning the initial step low does not lower the reservation: the widest live step (3) decides
    low = profile.model_copy(update={"speculation": profile.speculation.model_copy(update={"num_steps": 1})})
    low_shape = kv.spec_shape_for_profile(low)
    assert low_shape is not None
    assert low_shape.draft_tokens == 2
    assert kv.alloc_len_per_decode(low_shape, 1) == 4


def test_tree_profile_keeps_its_draft_tokens() -> None:
    profile = load_profile(PROFILES / "kimi-k25-eagle3-tree.toml")
    assert kv.spec_shape_for_profile(profile) == SpecShape(steps=2, topk=4, draft_tokens=16)


def test_topk1_draft_tokens_forced_to_steps_plus_one() -> None:
    text = _profile_text("kimi-k25-eagle3.toml").replace("num_draft_tokens = 4", "num_draft_tokens = 9")
    text = text.replace("adaptive = true", "adaptive = false").replace(THRESHOLD_LINE + "\n", "")
    text = text.replace("live_steps = [1, 2, 3]\n", "")
    shape = kv.spec_shape_for_profile(parse_profile(text))
    assert shape == SpecShape(steps=3, topk=1, draft_tokens=4)


def test_baseline_profile_has_no_shape() -> None:
    assert kv.spec_shape_for_profile(load_profile(PROFILES / "kimi-k25-baseline.toml")) is None


def test_whatif_tree_page16_on_vs_off() -> None:
    text = _profile_text("kimi-k25-eagle3-tree.toml").replace("page_size = 1", "page_size = 16")
    profile = parse_profile(text)
    w = kv.kv_whatif(profile, running=48, context=1000, pool=200_000)
    assert w.pool_source == "given"
    assert w.on.alloc_len_per_decode == 128
    assert w.on.reserve_per_decode == 256
    # ceil16(1000 + 256) = 1264 per request
    assert w.on.tokens_per_request == 1264
    assert w.on.tokens_held == 48 * 1264
    assert w.on.tokens_reserved == 48 * 264
    assert w.on.requests_that_fit == 200_000 // 1264
    # without speculation: one slot per step, a fresh page when the last is full → ceil16(1001) = 1008
    assert w.off.tokens_per_request == 1008
    assert w.off.requests_that_fit == 200_000 // 1008
    assert w.off.alloc_len_per_decode == 1


def test_whatif_pool_from_profile_then_estimate() -> None:
    profile = load_profile(PROFILES / "kimi-k25-eagle3.toml")
    w = kv.kv_whatif(profile, running=1, context=100)
    assert w.pool_source == "estimate"
    # reference §3.5 E: 9.1 GiB / 71,424 B per token ≈ 136,803 tokens at mem_fraction_static 0.85
    assert w.pool == 136_803
    fixed = profile.model_copy(
        update={"server": profile.server.model_copy(update={"max_total_tokens": 50_000})}
    )
    w2 = kv.kv_whatif(fixed, running=1, context=100)
    assert (w2.pool, w2.pool_source) == (50_000, "profile")
    assert w2.on.requests_that_fit == 50_000 // 108


def test_estimate_follows_kv_dtype_and_mem_fraction() -> None:
    profile = load_profile(PROFILES / "kimi-k25-eagle3.toml")
    fp8 = profile.model_copy(
        update={"server": profile.server.model_copy(update={"kv_cache_dtype": "fp8_e4m3"})}
    )
    # reference §3.5 E: fp8 halves the cell (35,712 B/token) → ≈ 273,600 tokens
    assert kv.estimate_pool_tokens(fp8) == 9_771_050_598 // 35_712
    more = profile.model_copy(
        update={"server": profile.server.model_copy(update={"mem_fraction_static": 0.9})}
    )
    assert kv.estimate_pool_tokens(more) > kv.estimate_pool_tokens(profile)


def test_whatif_rejects_bad_numbers() -> None:
    profile = load_profile(PROFILES / "kimi-k25-eagle3.toml")
    with pytest.raises(ValueError, match="context"):
        kv.kv_whatif(profile, running=1, context=0)
    with pytest.raises(ValueError, match="running"):
        kv.kv_whatif(profile, running=-1, context=10)
    with pytest.raises(ValueError, match="pool"):
        kv.kv_whatif(profile, running=1, context=10, pool=0)


def test_whatif_round_trips_as_plain_data() -> None:
    profile = load_profile(PROFILES / "kimi-k25-eagle3.toml")
    data = kv.kv_whatif(profile, running=4, context=10, pool=1000).to_dict()
    for side in ("on", "off"):
        for key in (
            "alloc_len_per_decode",
            "reserve_per_decode",
            "tokens_held",
            "tokens_reserved",
            "requests_that_fit",
        ):
            assert isinstance(data[side][key], int)
