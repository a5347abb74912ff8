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


def test_whatif_tree_page16_on_vs_no_drafter() -> None:
    text = _profile_text("kimi-k25-eagle3-tree.toml").replace("page_size = 1", "page_size = 16")
    profile = parse_profile(text)
    w = kv.kv_whatif(profile, running=48, context=1000, pool=200_000)
    assert w.pool_source == "given"
    assert w.on is not None
    assert w.on.alloc_len_per_decode == 128
    assert w.on.reserve_per_decode == 256
    # ceil16(1000 + 256) = 1264 per request
    assert w.on.tokens_per_request == 1264
    assert w.on.tokens_held == 48 * 1264
    assert w.on.tokens_reserved == 48 * 264
    assert w.on.requests_that_fit == 200_000 // 1264
    # a static tree server never runs at 0 steps, and says why
    assert w.off is None and w.off_unavailable is not None and "topk=1" in w.off_unavailable
    # without the drafter: one slot per step, a fresh page when the last is full → ceil16(1001) = 1008,
    # in a pool that has the drafter's memory back
    assert w.baseline.tokens_per_request == 1008
    assert w.baseline.alloc_len_per_decode == 1
    assert w.drafter is not None
    assert w.baseline.pool_tokens == w.drafter.pool_tokens_without_drafter > 200_000
    assert w.baseline.requests_that_fit == w.baseline.pool_tokens // 1008


def test_off_keeps_the_widest_reserve_and_the_drafters_memory() -> None:
    """The 3/1/4 adaptive profile at 0 steps: 8 slots reserved per request, not 2, in the smaller pool."""
    profile = load_profile(PROFILES / "kimi-k25-eagle3.toml")
    w = kv.kv_whatif(profile, running=48, context=1000, pool=100_000)
    assert w.zero_step == SpecShape(steps=0, topk=1, draft_tokens=1, max_draft_tokens=4)
    assert w.on is not None and w.off is not None
    assert (w.on.reserve_per_decode, w.off.reserve_per_decode, w.baseline.reserve_per_decode) == (8, 8, 2)
    assert w.off.tokens_per_request == 1008 and w.baseline.tokens_per_request == 1001
    assert w.off.pool_tokens == w.on.pool_tokens == 100_000
    d = w.drafter
    assert d is not None
    # the draft's layer is 1 of 62 in each cell; its weights come out of the same budget
    assert d.draft_share_of_cell == round(1 / 62, 6)
    assert d.cell_bytes == 71_424 and d.cell_bytes_without_draft == 70_272
    assert d.tokens_for_draft_kv == 100_000 * 71_424 // 70_272 - 100_000
    assert d.tokens_for_draft_weights == kv.DRAFT_WEIGHT_BYTES_PER_RANK // 70_272
    assert d.pool_tokens_without_drafter == (100_000 * 71_424 + kv.DRAFT_WEIGHT_BYTES_PER_RANK) // 70_272
    assert w.baseline.pool_tokens == d.pool_tokens_without_drafter


def test_no_threshold_means_no_off_state() -> None:
    profile = parse_profile(_profile_text("kimi-k25-eagle3.toml").replace(THRESHOLD_LINE + "\n", ""))
    w = kv.kv_whatif(profile, running=4, context=100)
    assert w.off is None and w.zero_step is None
    assert w.off_unavailable is not None and "threshold" in w.off_unavailable


def test_baseline_profile_has_only_the_baseline() -> None:
    profile = load_profile(PROFILES / "kimi-k25-baseline.toml")
    w = kv.kv_whatif(profile, running=4, context=100, pool=5_000)
    assert (w.on, w.off, w.drafter) == (None, None, None)
    assert w.baseline.pool_tokens == 5_000 and w.own is w.baseline


def test_overfull_is_said_in_words() -> None:
    """Issue 14 item 10: 64 requests of 4,000 tokens do not fit in the estimated pool."""
    profile = load_profile(PROFILES / "kimi-k25-eagle3.toml")
    w = kv.kv_whatif(profile, running=64, context=4000)
    assert w.on is not None and w.on.tokens_held == 64 * 4008 > w.pool
    assert w.overfull
    summary = w.fit_summary()
    assert summary[0].startswith(
        "does not fit (speculation on, off (0 steps)): 64 requests of 4000 tokens hold 256,512"
    )
    assert f"SGLang runs {w.pool // 4008} of them at once" in summary[0]
    assert summary[1].startswith("does not fit (no drafter): 64 requests of 4000 tokens hold 256,064")
    # Issue 39: every state is named, those that fit too (32 fit only without the drafter)
    between = kv.kv_whatif(profile, running=32, context=4000).fit_summary()
    assert between[-1] == "fits (no drafter): the pool holds all 32 requests at once", between
    fits = kv.kv_whatif(profile, running=16, context=4000)
    assert not fits.overfull and fits.fit_summary() == [
        "fits (speculation on, off (0 steps), no drafter): the pool holds all 16 requests at once"
    ]


def test_whatif_pool_from_profile_then_estimate() -> None:
    profile = load_profile(PROFILES / "kimi-k25-eagle3.toml")
    w = kv.kv_whatif(profile, running=1, context=100)
    assert w.pool_source == "estimate"
    # reference §3.5 E: 9.1 GiB, here before the draft is loaded; the speculative server loses the
    # draft's weights from it, and each token costs 71,424 B with the draft's share
    assert w.pool == (9_771_050_598 - kv.DRAFT_WEIGHT_BYTES_PER_RANK) // 71_424
    assert w.baseline.pool_tokens == 9_771_050_598 // 70_272
    fixed = profile.model_copy(
        update={"server": profile.server.model_copy(update={"max_total_tokens": 50_000})}
    )
    w2 = kv.kv_whatif(fixed, running=1, context=100)
    assert (w2.pool, w2.pool_source) == (50_000, "profile")
    assert w2.on is not None and w2.on.requests_that_fit == 50_000 // 108
    assert w2.baseline.pool_tokens == 50_000  # --max-total-tokens caps a server without the drafter too


def test_estimate_follows_kv_dtype_and_mem_fraction() -> None:
    profile = load_profile(PROFILES / "kimi-k25-eagle3.toml")
    fp8 = profile.model_copy(
        update={"server": profile.server.model_copy(update={"kv_cache_dtype": "fp8_e4m3"})}
    )
    # reference §3.5 E: fp8 halves the cell (35,712 B/token)
    assert kv.estimate_pool_tokens(fp8) == (9_771_050_598 - kv.DRAFT_WEIGHT_BYTES_PER_RANK) // 35_712
    more = profile.model_copy(
        update={"server": profile.server.model_copy(update={"mem_fraction_static": 0.9})}
    )
    assert kv.estimate_pool_tokens(more) > kv.estimate_pool_tokens(profile)


def test_view_fields_for_the_collector() -> None:
    from agent.wire import KvView

    profile = load_profile(PROFILES / "kimi-k25-eagle3.toml")
    fields = kv.view_fields(profile, 1, 100_000)
    view = KvView(**fields)  # every key is a KvView field
    # patch 03's plain path (the profile's default): a plain decode's 2, not SGLang's 2 x 4
    assert view.reserve_per_request_zero_step == kv.PLAIN_DECODE_RESERVE == 2
    verify = profile.model_copy(
        update={"speculation": profile.speculation.model_copy(update={"zero_step": "verify"})}
    )
    assert kv.view_fields(verify, 1, 100_000)["reserve_per_request_zero_step"] == 8
    assert view.pool_tokens_without_drafter == kv.kv_whatif(profile, 1, 1, pool=100_000).baseline.pool_tokens
    assert view.draft_share_of_cell == round(1 / 62, 6)
    assert view.draft_weight_bytes == kv.DRAFT_WEIGHT_BYTES_PER_RANK
    assert kv.view_fields(profile, 1, None)["pool_tokens_without_drafter"] is None
    baseline = kv.view_fields(load_profile(PROFILES / "kimi-k25-baseline.toml"), 1, 100_000)
    assert set(baseline.values()) == {None}


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
    assert data["overfull"] is False and data["fit_summary"] == [
        "fits (speculation on, off (0 steps), no drafter): the pool holds all 4 requests at once"
    ]
    for side in ("on", "off", "baseline"):
        for key in (
            "alloc_len_per_decode",
            "reserve_per_decode",
            "tokens_held",
            "tokens_reserved",
            "requests_that_fit",
        ):
            assert isinstance(data[side][key], int)
