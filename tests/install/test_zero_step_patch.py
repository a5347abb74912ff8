"""Patch 03 (zero-step rounds as plain decodes): its decisions, from the patched wheel's own files.

The torch-free half of the patch (``k25_zero_step_policy``) is imported exactly as the patched
``internal_state.py`` imports it, and driven through SGLang's real ``set_internal_state``
dispatcher and read-back. The torch half is driven by ``bench/real/zero_step_preflight.py`` (it
needs torch, which this environment does not have) and proven on the real engine
(``bench/results/``).
"""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pytest
from test_patches import THRESHOLD_CONFIG, Rank

from agent.sglang import live_control


@pytest.fixture
def rank(patched_sglang: Any, tmp_path: Path) -> Rank:
    return Rank(patched_sglang, THRESHOLD_CONFIG, tmp_path)


@pytest.fixture
def policy(patched_sglang: Any) -> Any:
    module = patched_sglang.internal_state.k25_zero_step_policy
    yield module
    module.register(None)
    module.TIMING.start(0)


def server_state(rank: Rank) -> dict[str, Any]:
    """``/server_info``'s internal state as the two contributors concerned build it, in order; less the
    process's host figures (``zero_step.host``: memory and the collector move between any two reads)."""
    state: dict[str, Any] = {}
    rank.internal._add_speculative(state)
    rank.internal._add_k25_zero_step(state)
    zero = (state.get("adaptive_spec_live") or {}).get("zero_step")
    if isinstance(zero, dict):
        zero.pop("host", None)
    return state


class FakeController:
    """What the runtime registers: a config and counters (the policy reads nothing else)."""

    def __init__(self, policy: Any, built: bool) -> None:
        self.config = policy.ZeroStepConfig(policy.PLAIN)
        self.config.mark_built(None if built else "no graph")
        self.counters = policy.ZeroStepCounters()


def test_the_patch_uses_the_names_live_control_defines(policy: Any) -> None:
    assert policy.ZERO_STEP_KEY == live_control.ZERO_STEP_KEY
    assert policy.ROUND_TIMING_KEY == live_control.ROUND_TIMING_KEY
    assert policy.CONFIG_KEY == live_control.ZERO_STEP_CONFIG_KEY
    assert policy.READBACK_FIELD == live_control.ZERO_STEP_READBACK_FIELD
    assert policy.TIMING_FIELD == live_control.ROUND_TIMING_FIELD
    assert policy.PATHS == live_control.ZERO_STEP_PATHS
    assert {v: k for k, v in live_control.ZERO_STEP_VALUE.items()} == policy.PATH_OF_VALUE
    ctl = FakeController(policy, built=True)
    assert tuple(policy.readback(ctl.config, ctl.counters)) == live_control.ZERO_STEP_READBACK_KEYS


def test_the_path_switch_goes_through_sglangs_dispatcher(policy: Any, rank: Rank) -> None:
    assert not rank.set(adaptive_spec_zero_step_plain=0), "no controller: refused"
    ctl = FakeController(policy, built=True)
    rank.worker.k25_zero_step = ctl
    policy.register(ctl)
    assert rank.set(adaptive_spec_zero_step_plain=0)
    assert ctl.config.path == "verify"
    readback = server_state(rank)[live_control.READBACK_FIELD][live_control.ZERO_STEP_READBACK_FIELD]
    assert readback["path"] == "verify" and readback["launch_path"] == "plain"
    assert rank.set(adaptive_spec_zero_step_plain=1)
    assert ctl.config.plain
    json.dumps(server_state(rank))


@pytest.mark.parametrize("value", ["plain", 2, -1, None, [1], True, 1.0])
def test_a_bad_path_is_refused_and_changes_nothing(
    policy: Any, rank: Rank, value: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ctl = FakeController(policy, built=True)
    rank.worker.k25_zero_step = ctl
    policy.register(ctl)
    before = server_state(rank)
    assert not rank.set(adaptive_spec_zero_step_plain=value)
    assert "must be 1 (plain decode) or 0 (SGLang's verify path)" in caplog.text
    assert server_state(rank) == before


def test_plain_is_refused_where_the_plain_state_was_not_built(policy: Any, rank: Rank) -> None:
    ctl = FakeController(policy, built=False)
    rank.worker.k25_zero_step = ctl
    policy.register(ctl)
    assert ctl.config.path == "verify", "a failed build falls back to SGLang's path"
    assert not rank.set(adaptive_spec_zero_step_plain=1)
    assert rank.set(adaptive_spec_zero_step_plain=0)
    readback = server_state(rank)[live_control.READBACK_FIELD][live_control.ZERO_STEP_READBACK_FIELD]
    assert readback["plain_built"] is False and readback["build_error"] == "no graph"


def test_round_timing_is_accepted_by_a_server_without_adaptive_and_read_back(
    policy: Any, patched_sglang: Any, tmp_path: Path
) -> None:
    rank = Rank(patched_sglang, THRESHOLD_CONFIG, tmp_path)
    rank.worker.adaptive_controller = None
    for bad in (-1, True, "5", 1.5, 100_001):
        assert not rank.set(k25_round_timing=bad)
    assert rank.set(k25_round_timing=3)
    assert policy.TIMING.remaining == 3
    policy.TIMING.add("decode", 64, [("target_forward", 9.0, 8.0), ("sample", 0.2, None)])
    policy.TIMING.add("decode", 62, [("target_forward", 11.0, 10.0), ("sample", 0.4, 0.1)])
    state: dict[str, Any] = {}
    rank.internal._add_k25_zero_step(state)
    table = state[live_control.ROUND_TIMING_FIELD]
    assert table["remaining"] == 3
    decode = table["kinds"]["decode"]
    assert decode["rounds"] == 2 and decode["mean_batch_size"] == 63.0
    assert decode["stages"]["target_forward"] == {"host_ms": 10.0, "gpu_ms": 9.0}
    assert decode["stages"]["sample"] == {"host_ms": pytest.approx(0.3), "gpu_ms": 0.1}
    assert rank.set(k25_round_timing=0)
    state = {}
    rank.internal._add_k25_zero_step(state)
    assert live_control.ROUND_TIMING_FIELD not in state, "0 clears the table"


@pytest.mark.parametrize(
    ("zero", "inflight", "want"),
    [
        (False, ("none",), 8),  # speculating: SGLang's own reserve
        (True, ("none",), 5),  # nothing known in flight: a full step may still commit
        (True, ("decode", True), 2),  # steady state: a plain decode's two slots
        (True, ("decode", False), 5),  # a speculating batch in flight
        (True, ("extend",), 5),  # after an extend, as SGLang assumes
        (False, ("decode", True), 8),
    ],
)
def test_the_reserve_of_a_decode_batch(policy: Any, zero: bool, inflight: tuple[Any, ...], want: int) -> None:
    planner = policy.ReservePlanner()
    if inflight[0] == "decode":
        planner.launched(True, inflight[1])
    elif inflight[0] == "extend":
        planner.launched(False, False)
    assert planner.reserve(zero, alloc_len_per_decode=4, default_reserve=8) == want
    assert planner.reserve(zero, alloc_len_per_decode=4, default_reserve=1) == 1, "never above SGLang's"


@pytest.mark.parametrize(
    "flag",
    ["idle", "has_grammar", "return_logprob", "hisparse", "mamba", "mrope", "watermark", "input_embeds"],
)
def test_what_keeps_a_batch_on_the_verify_path(policy: Any, flag: str) -> None:
    assert policy.plain_ineligible_reason({}) is None
    reason = policy.plain_ineligible_reason({flag: True})
    assert isinstance(reason, str) and reason and "_" not in reason, "words an operator reads"


def test_the_launch_path_comes_from_the_adaptive_config(policy: Any) -> None:
    assert policy.launch_path({"1": {"candidate_steps": [1]}}) == "plain"
    assert policy.launch_path({"k25_zero_step": "verify"}) == "verify"
    with pytest.raises(ValueError, match="k25_zero_step must be one of"):
        policy.launch_path({"k25_zero_step": "fast"})


def test_sglang_ignores_the_launch_key_as_a_slot_default(patched_sglang: Any, tmp_path: Path) -> None:
    """The key sits beside the slots; SGLang merges globals under each slot and reads only its own."""
    config = {**THRESHOLD_CONFIG, "k25_zero_step": "plain"}
    rank = Rank(patched_sglang, config, tmp_path)
    assert rank.steps_for(1) == 3 and rank.steps_for(4) == 0


def test_counters_read_back_as_plain_json(policy: Any) -> None:
    ctl = FakeController(policy, built=True)
    ctl.counters.plain_rounds = 3
    ctl.counters.last_fallback = "a request asking for logprobs"
    out = policy.readback(ctl.config, ctl.counters)
    assert json.loads(json.dumps(out)) == out
    assert out["plain_rounds"] == 3


def test_add_readback_leaves_a_server_without_the_patch_alone(policy: Any) -> None:
    state: dict[str, Any] = {"adaptive_spec_live": {"threshold": 4}}
    policy.add_readback(state, types.SimpleNamespace())
    assert state == {"adaptive_spec_live": {"threshold": 4}}


def test_only_requests_that_missed_something_are_caught_up(policy: Any) -> None:
    book = policy.StreakBook()
    assert not book.pending
    book.missed([1, 2])
    assert book.pending and book.pending_in([2, 7]) and not book.pending_in([7])
    book.caught_up([1])
    assert book.pending_in([2]) and not book.pending_in([1])
    book.caught_up([2])  # an extend of the slot (a new request) or its catch-up
    assert not book.pending


@pytest.mark.parametrize(
    ("threshold", "running", "running_zero", "arriving", "since_s", "want"),
    [
        (40, 60, True, 1, 0.01, True),  # joins a 0-step batch: a plain server's prefill
        (40, 39, True, 1, 0.01, True),  # the arrival brings the batch to the threshold
        (40, 30, True, 1, 0.01, False),  # the batch it joins drafts
        (40, 60, False, 1, 0.01, False),  # the last decode drafted (a pin, or the policy's choice)
        (0, 60, True, 1, 0.01, False),  # no threshold: speculation everywhere
        (40, 60, True, 1, 5.0, False),  # the last decode is long past: the server was idle
    ],
)
def test_a_prefill_joins_a_zero_step_batch(
    policy: Any, threshold: int, running: int, running_zero: bool, arriving: int, since_s: float, want: bool
) -> None:
    assert policy.prefill_joins_zero(threshold, running, running_zero, arriving, since_s) is want


def test_the_readback_carries_the_runtimes_sizes_and_the_processs_memory_and_collector(
    policy: Any, rank: Rank
) -> None:
    """Issue 46: what the runtime keeps across rounds, the scheduler's resident memory and the time its
    collector took are in ``zero_step`` (``state``, ``host``), and a failing size read names itself."""
    import gc

    from agent.sglang.zero_step_view import parse_zero_step

    ctl = FakeController(policy, built=True)
    ctl.state_sizes = lambda: {"missed_slots": 3, "ring_held": None}  # type: ignore[attr-defined]
    rank.worker.k25_zero_step = ctl
    policy.register(ctl)
    gc.collect()
    state: dict[str, Any] = {}
    rank.internal._add_speculative(state)
    rank.internal._add_k25_zero_step(state)
    zero = state["adaptive_spec_live"]["zero_step"]
    assert zero["state"] == {"missed_slots": 3, "ring_held": None}
    assert tuple(zero["host"]) == live_control.ZERO_STEP_HOST_KEYS
    host = zero["host"]
    assert host["gc_metered"] is True and host["gc_collections"][2] >= 1 and host["gc_total_s"] > 0
    assert host["rss_kib"] > 0 and host["rss_peak_kib"] >= host["rss_kib"]
    parsed = parse_zero_step(zero)
    assert parsed is not None and parsed.state is not None and parsed.state.get("missed_slots") == 3
    assert parsed.host is not None and parsed.host.rss_kib == host["rss_kib"]

    def broken() -> dict[str, Any]:
        raise RuntimeError("no ring")

    ctl.state_sizes = broken  # type: ignore[attr-defined]
    again: dict[str, Any] = {}
    rank.internal._add_speculative(again)
    rank.internal._add_k25_zero_step(again)
    assert again["adaptive_spec_live"]["zero_step"]["state"] == {"error": "RuntimeError: no ring"}
