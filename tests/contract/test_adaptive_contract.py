"""Our adaptive config and support rules, run through SGLang 0.5.23's own loader, router and checks."""

from __future__ import annotations

import json
import re
import types
from pathlib import Path

import pytest
from sglang_exec import adaptive_spec_params

from agent.profile import Profile, load_profile, parse_profile
from agent.sglang import adaptive, kv, rules, support
from agent.sglang.extra_flags import first_value, has_flag

pytestmark = pytest.mark.contract

PROFILES = Path(__file__).resolve().parents[2] / "profiles"

# The shipped threshold is the simulated engine's crossover and may move; tests edit whatever it is.
THRESHOLD_LINE = re.search(r"^threshold = \d+$", (PROFILES / "kimi-k25-eagle3.toml").read_text(), re.M)[0]  # type: ignore[index]


@pytest.fixture(scope="module")
def sgl(sglang_src: Path) -> types.SimpleNamespace:
    return adaptive_spec_params(sglang_src)


def _variant(threshold: str, live_steps: str, num_steps: int = 3, globals_: str = "") -> Profile:
    text = (PROFILES / "kimi-k25-eagle3.toml").read_text()
    text = text.replace(THRESHOLD_LINE + "\n", threshold).replace("live_steps = [1, 2, 3]", live_steps)
    text = text.replace("num_steps = 3", f"num_steps = {num_steps}") + globals_
    return parse_profile(text)


ADAPTIVE_PROFILES = {
    "shipped": lambda: load_profile(PROFILES / "kimi-k25-eagle3.toml"),
    "sim": lambda: load_profile(PROFILES / "local-sim.toml"),
    "threshold-32-steps-1-5": lambda: _variant("threshold = 32\n", "live_steps = [1, 2, 3, 4, 5]", 4),
    "no-threshold": lambda: _variant("", "live_steps = [2, 3]"),
    "single-step": lambda: _variant("threshold = 16\n", "live_steps = []", 2),
    "threshold-8-steps-1-3": lambda: _variant("threshold = 8\n", "live_steps = [1, 3]", 3),
}


@pytest.mark.parametrize("name", sorted(ADAPTIVE_PROFILES))
def test_sglang_reads_our_config_as_intended(name: str, sgl: types.SimpleNamespace, tmp_path: Path) -> None:
    profile = ADAPTIVE_PROFILES[name]()
    assert not rules.errors_of(rules.check_profile(profile, name))
    config = adaptive.adaptive_config(profile)
    assert config is not None
    path = tmp_path / "adaptive.json"
    path.write_text(json.dumps(config))

    union = sgl.resolve_candidate_steps_from_config(str(path))
    assert union == adaptive.candidate_steps(config) == support.prebuilt_steps(profile)
    shape = kv.spec_shape_for_profile(profile)
    assert shape is not None and shape.max_draft_tokens == max(union) + 1  # SGLang: max(candidates) + 1
    assert profile.speculation.num_steps in union  # else SGLang refuses to start

    params = sgl.AdaptiveSpeculativeParams(initial_steps=profile.speculation.num_steps, cfg_path=str(path))
    threshold = profile.speculation.threshold
    for batch in range(1, 300):
        steps = params.get_steps_for_batch(batch)
        if threshold is not None and batch >= threshold:
            assert steps == 0, (batch, steps)
        else:
            assert steps == profile.speculation.num_steps, (batch, steps)
        assert adaptive.route(config, batch) == sgl.AdaptiveSpeculativeParams._find_closest_bs(params, batch)
    # the slot below the threshold chooses among exactly the operator's live steps
    assert params._slots[1].candidate_steps == adaptive.live_step_choices(profile.speculation)


def test_global_ema_settings_reach_every_slot(sgl: types.SimpleNamespace, tmp_path: Path) -> None:
    text = (
        (PROFILES / "kimi-k25-eagle3.toml")
        .read_text()
        .replace(
            "live_steps = [1, 2, 3]",
            "live_steps = [1, 2, 3]\nema_alpha = 0.5\nupdate_interval = 3\nwarmup_batches = 2",
        )
    )
    config = adaptive.adaptive_config(parse_profile(text))
    assert config is not None
    path = tmp_path / "a.json"
    path.write_text(json.dumps(config))
    params = sgl.AdaptiveSpeculativeParams(initial_steps=3, cfg_path=str(path))
    for slot in params._slots.values():
        assert (slot.ema_alpha, slot.update_interval, slot.warmup_batches) == (0.5, 3, 2)


def test_our_slot_fields_are_the_ones_sglang_reads(sglang_src: Path) -> None:
    source = (sglang_src / "srt/speculative/adaptive_spec_params.py").read_text()
    for key in adaptive.SLOT_FIELDS:
        assert f'"{key}"' in source, key


def _server_args(profile: Profile) -> types.SimpleNamespace:
    """The fields SGLang's check reads, as 0.5.23's parser would set them from our argv."""
    flags = profile.server.extra_flags
    attn_dp = first_value(flags, "--attn-dp-size")
    return types.SimpleNamespace(
        speculative_algorithm=profile.speculation.algorithm if profile.speculative else None,
        speculative_eagle_topk=profile.speculation.eagle_topk if profile.speculative else None,
        attn_dp_size=int(attn_dp) if attn_dp else (8 if has_flag(flags, "--enable-dp-attention") else 1),
        enable_multi_layer_eagle=has_flag(flags, "--enable-multi-layer-eagle"),
        enable_two_batch_overlap=has_flag(flags, "--enable-two-batch-overlap"),
        enable_pdmux=has_flag(flags, "--enable-pdmux"),
    )


@pytest.mark.parametrize(
    "extra",
    [
        "",
        '["--attn-dp-size", "8"]',
        '["--attn-dp-size=2"]',
        '["--attn-dp-size", "1"]',
        '["--enable-multi-layer-eagle"]',
        '["--enable-two-batch-overlap"]',
        '["--enable-pdmux"]',
    ],
)
def test_unsupported_reasons_are_sglangs(extra: str, sgl: types.SimpleNamespace) -> None:
    text = (PROFILES / "kimi-k25-eagle3.toml").read_text()
    if extra:
        text = text.replace("[server]\n", f"[server]\nextra_flags = {extra}\n")
    for profile in (
        parse_profile(text),
        load_profile(PROFILES / "kimi-k25-eagle3-tree.toml"),
        load_profile(PROFILES / "kimi-k25-baseline.toml"),
    ):
        assert support.adaptive_unsupported_reason(profile) == sgl.adaptive_unsupported_reason(
            _server_args(profile)
        )
