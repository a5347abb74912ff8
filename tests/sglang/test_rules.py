"""SGLang 0.5.23's speculation rules on profiles, change classification and live-value validation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.profile import Profile, load_profile, parse_profile
from agent.sglang import live_control, rules

PROFILES = Path(__file__).resolve().parents[2] / "profiles"

# The shipped threshold is the simulated engine's crossover and may move; tests edit whatever it is.
THRESHOLD_LINE = re.search(r"^threshold = \d+$", (PROFILES / "kimi-k25-eagle3.toml").read_text(), re.M)[0]  # type: ignore[index]

EAGLE3 = (PROFILES / "kimi-k25-eagle3.toml").read_text()
TREE = (PROFILES / "kimi-k25-eagle3-tree.toml").read_text()


def _issues(text: str) -> list[tuple[str, str, str]]:
    return [(i.severity, i.key, i.rule) for i in rules.check_profile(parse_profile(text), "p.toml")]


def _errors(text: str) -> list[tuple[str, str]]:
    return [(k, r) for s, k, r in _issues(text) if s == "error"]


def _warnings(text: str) -> list[tuple[str, str]]:
    return [(k, r) for s, k, r in _issues(text) if s == "warning"]


def test_shipped_profiles_have_no_errors() -> None:
    for path in PROFILES.glob("*.toml"):
        issues = rules.check_profile(load_profile(path), str(path))
        assert not rules.errors_of(issues), issues
        assert all(i.file == str(path) for i in issues)


def test_tree_profile_warns_that_the_threshold_is_unavailable_and_why() -> None:
    warnings = _warnings(TREE)
    assert len(warnings) == 1
    key, rule = warnings[0]
    assert key == "speculation.eagle_topk"
    assert "threshold" in rule and "unavailable" in rule and "only topk=1 is supported" in rule


def test_adaptive_with_topk4_is_an_error_not_a_silent_fallback() -> None:
    text = TREE.replace("adaptive = false", "adaptive = true")
    errors = _errors(text)
    assert "speculation.adaptive" in {k for k, _ in errors}
    assert any("speculative_eagle_topk=4" in r for _, r in errors)


def test_threshold_without_adaptive_is_an_error() -> None:
    text = TREE.replace("adaptive = false", "adaptive = false\nthreshold = 8")
    assert any(k == "speculation.threshold" and "no effect" in r for k, r in _errors(text))


def test_threshold_and_steps_on_baseline_are_errors() -> None:
    text = (PROFILES / "kimi-k25-baseline.toml").read_text() + "threshold = 8\n"
    assert [k for k, _ in _errors(text)] == ["speculation.threshold"]


def test_threshold_one_is_refused() -> None:
    errors = _errors(EAGLE3.replace(THRESHOLD_LINE, "threshold = 1"))
    assert [k for k, _ in errors] == ["speculation.threshold"]


def test_num_steps_outside_live_steps_is_refused_like_sglang() -> None:
    errors = _errors(EAGLE3.replace("num_steps = 3", "num_steps = 4"))
    assert any(k == "speculation.num_steps" and "candidate steps" in r for k, r in errors)


def test_draft_tokens_forced_when_topk_is_one() -> None:
    static = EAGLE3.replace("adaptive = true", "adaptive = false").replace(THRESHOLD_LINE + "\n", "")
    static = static.replace("live_steps = [1, 2, 3]\n", "").replace(
        "num_draft_tokens = 4", "num_draft_tokens = 8"
    )
    warnings = _warnings(static)
    assert any(k == "speculation.num_draft_tokens" and "num_steps + 1 = 4" in r for k, r in warnings)
    # adaptive: the width follows the tier anyway, so a live step change does not leave a stale warning
    assert not _warnings(EAGLE3.replace("num_steps = 3", "num_steps = 2"))


def test_max_running_requests_unset_warns_about_48() -> None:
    text = EAGLE3.replace("max_running_requests = 256\n", "")
    assert any(k == "server.max_running_requests" and "48" in r for k, r in _warnings(text))


def test_cuda_graph_max_bs_below_max_running_warns() -> None:
    text = EAGLE3.replace("cuda_graph_max_bs = 256", "cuda_graph_max_bs = 64")
    assert any(k == "server.cuda_graph_max_bs" and "without CUDA graphs" in r for k, r in _warnings(text))


def test_page_tree_backends() -> None:
    paged = TREE.replace("page_size = 1", "page_size = 16")
    assert not _errors(paged)  # triton is allowed
    bad = paged.replace('attention_backend = "triton"', 'attention_backend = "flashmla"')
    assert any(k == "server.attention_backend" and "page_size > 1" in r for k, r in _errors(bad))
    unset = paged.replace('attention_backend = "triton"\n', "")
    assert any(k == "server.attention_backend" for k, _ in _warnings(unset))
    mha = TREE.replace('attention_backend = "triton"', 'attention_backend = "trtllm_mha"')
    assert any(k == "speculation.eagle_topk" and "trtllm_mha" in r for k, r in _errors(mha))


@pytest.mark.parametrize(
    "flags",
    ['["--enable-flashinfer-allreduce-fusion"]', '["--flashinfer-allreduce-fusion-backend", "auto"]'],
)
def test_sm120_allreduce_fusion_fails(flags: str) -> None:
    text = EAGLE3.replace("[server]\n", f"[server]\nextra_flags = {flags}\n")
    assert any(k == "server.extra_flags" and "SM120" in r for k, r in _errors(text))
    # the same flags are fine on a Hopper host
    hopper = text.replace('compute_capability = "12.0"', 'compute_capability = "9.0"')
    assert not _errors(hopper)


def test_sm120_refuses_fa3() -> None:
    text = EAGLE3.replace('attention_backend = "triton"', 'attention_backend = "fa3"')
    assert any(k == "server.attention_backend" and "SM120" in r for k, r in _errors(text))


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        ('["--cuda-graph-max-bs", "512"]', "--cuda-graph-max-bs-decode"),
        ('["--tp-size", "4"]', "server.tp_size"),
        ('["--api-key", "k"]', "api_key_file"),
        ('["--enable-metrics", "yes"]', "server.enable_metrics"),
        ('["--disable-overlap-schedule", "yes"]', "switch"),
        ('["--schedule-policy"]', "exactly one value"),
        ('["--no-such-flag"]', "not a flag of SGLang 0.5.23"),
    ],
)
def test_bad_extra_flags(flags: str, needle: str) -> None:
    text = EAGLE3.replace("[server]\n", f"[server]\nextra_flags = {flags}\n")
    assert any(k == "server.extra_flags" and needle in r for k, r in _errors(text)), _issues(text)


def test_extra_flags_that_disable_adaptive() -> None:
    text = EAGLE3.replace("[server]\n", '[server]\nextra_flags = ["--enable-two-batch-overlap"]\n')
    assert any(k == "speculation.adaptive" and "two_batch_overlap" in r for k, r in _errors(text))


def test_missing_draft_path_is_an_error() -> None:
    text = EAGLE3.replace('draft_path = "/models/kimi-k2.5-eagle3"\n', "")
    assert [k for k, _ in _errors(text)] == ["model.draft_path"]


def test_adaptive_without_threshold_warns_it_cannot_be_set_live() -> None:
    text = EAGLE3.replace(THRESHOLD_LINE + "\n", "")
    assert any(k == "speculation.threshold" for k, _ in _warnings(text))


# --- classify_change -----------------------------------------------------------------------------


def _with(profile: Profile, section: str, **changes: object) -> Profile:
    part = getattr(profile, section).model_copy(update=changes)
    return profile.model_copy(update={section: part})


@pytest.fixture
def running() -> Profile:
    return load_profile(PROFILES / "kimi-k25-eagle3.toml")


def test_same_profile_is_noop(running: Profile) -> None:
    assert rules.classify_change(running, running).mode == "noop"


def test_threshold_change_is_live(running: Profile) -> None:
    plan = rules.classify_change(running, _with(running, "speculation", threshold=16))
    assert plan.mode == "live"
    assert f"threshold {THRESHOLD_LINE.split(' = ')[1]} → 16" in plan.reasons[0]


def test_steps_among_built_is_live_else_restart(running: Profile) -> None:
    assert rules.classify_change(running, _with(running, "speculation", num_steps=2)).mode == "live"
    plan = rules.classify_change(running, _with(running, "speculation", num_steps=5, live_steps=[1, 2, 3, 5]))
    assert plan.mode == "restart"
    assert any("live_steps" in r and "built" in r for r in plan.reasons)
    assert any("num_steps" in r and "only 1, 2, 3 steps" in r for r in plan.reasons)
    assert not any("[" in r for r in plan.reasons), "a list's repr in an operator's reason"


@pytest.mark.parametrize(
    ("section", "changes", "words"),
    [
        ("speculation", {"eagle_topk": 4, "num_draft_tokens": 16}, "topk"),
        ("server", {"page_size": 16}, "KV cache layout"),
        ("server", {"tp_size": 4}, "next start"),
        ("model", {"path": "/models/other"}, "model is loaded"),
        ("speculation", {"adaptive": False}, "adaptive mode"),
    ],
)
def test_other_changes_need_a_restart(
    running: Profile, section: str, changes: dict[str, object], words: str
) -> None:
    plan = rules.classify_change(running, _with(running, section, **changes))
    assert plan.mode == "restart"
    assert any(words in r for r in plan.reasons), plan.reasons


def test_restart_wins_over_live_and_lists_both(running: Profile) -> None:
    new = _with(_with(running, "speculation", threshold=8), "server", max_running_requests=128)
    plan = rules.classify_change(running, new)
    assert plan.mode == "restart"
    assert any("threshold" in r and "live" in r for r in plan.reasons)


def test_console_only_changes_are_noop(running: Profile) -> None:
    new = _with(_with(running, "identity", description="night shift"), "telemetry", tick_interval_s=2.0)
    plan = rules.classify_change(running, new)
    assert plan.mode == "noop"
    assert len(plan.reasons) == 2


def test_threshold_on_tree_server_needs_restart() -> None:
    tree = load_profile(PROFILES / "kimi-k25-eagle3-tree.toml")
    new = _with(tree, "speculation", eagle_topk=1, num_draft_tokens=3, adaptive=True, threshold=8)
    plan = rules.classify_change(tree, new)
    assert plan.mode == "restart"
    assert any("no live threshold" in r for r in plan.reasons)


def test_adding_a_threshold_when_none_was_built_needs_restart(running: Profile) -> None:
    old = _with(running, "speculation", threshold=None)
    plan = rules.classify_change(old, running)
    assert plan.mode == "restart"
    assert any("0-step state was not built" in r for r in plan.reasons)
    # removing it is live: the patch's "no threshold" value
    assert rules.classify_change(running, old).mode == "live"


# --- validate_live_value -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "ok"),
    [
        (live_control.LIVE_THRESHOLD_KEY, 8, True),
        (live_control.LIVE_THRESHOLD_KEY, live_control.NO_THRESHOLD, True),
        (live_control.LIVE_THRESHOLD_KEY, 1, True),
        (live_control.LIVE_THRESHOLD_KEY, -1, False),
        (live_control.LIVE_THRESHOLD_KEY, 5000, False),
        (live_control.LIVE_THRESHOLD_KEY, 8.5, False),
        (live_control.LIVE_THRESHOLD_KEY, True, False),
        ("speculation.threshold", 32, True),
        (live_control.LIVE_STEPS_KEY, 2, True),
        (live_control.LIVE_STEPS_KEY, live_control.RELEASE_PINNED_STEPS, True),
        (live_control.LIVE_STEPS_KEY, 0, False),
        (live_control.LIVE_STEPS_KEY, 5, False),
        ("speculation.num_steps", 3, True),
        ("speculation.page_size", 16, False),
    ],
)
def test_validate_live_value(running: Profile, key: str, value: object, ok: bool) -> None:
    reason = rules.validate_live_value(running, key, value)
    assert (reason is None) == ok, reason
    if reason is not None and key != "speculation.page_size":
        assert reason.startswith("speculation.")


def test_live_values_refused_on_tree_server_with_the_reason() -> None:
    tree = load_profile(PROFILES / "kimi-k25-eagle3-tree.toml")
    reason = rules.validate_live_value(tree, live_control.LIVE_THRESHOLD_KEY, 8)
    assert reason is not None
    assert reason.startswith("speculation.threshold") and "only topk=1" in reason


def test_steps_reason_lists_the_built_steps(running: Profile) -> None:
    reason = rules.validate_live_value(running, live_control.LIVE_STEPS_KEY, 5)
    assert reason is not None and "built steps: 1, 2, 3" in reason and "[" not in reason


def test_adaptive_graph_memory_and_padding_warnings() -> None:
    unset = EAGLE3.replace("mem_fraction_static = 0.85\n", "")
    assert any(k == "server.mem_fraction_static" and "3 live step counts" in r for k, r in _warnings(unset))
    padded = EAGLE3.replace(
        "[server]\n", '[server]\nextra_flags = ["--cuda-graph-bs-decode", "1", "2", "4", "8"]\n'
    )
    assert any(k == "speculation.threshold" and "padded" in r for k, r in _warnings(padded))
    assert not _errors(padded)
