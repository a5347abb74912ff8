"""The recommendation in words: the levels it could not tell apart, what to run, the noise it saw."""

from __future__ import annotations

from typing import Any

from agent.bench.verdict import noise_seen, recommendation_from_levels


def arm(tok_s: float, rel: float, repeats: tuple[float, ...] = (), diff: float = 0.0) -> dict[str, Any]:
    return {
        "output_throughput": tok_s,
        "output_throughput_ci": [tok_s * (1 - rel), tok_s * (1 + rel)],
        "output_throughput_ci_rel": rel,
        "output_throughput_repeats": list(repeats) or [tok_s, tok_s],
        "engine_stream_diff": diff,
    }


def level(c: int, on: dict[str, Any], off: dict[str, Any]) -> dict[str, Any]:
    return {"concurrency": c, "on": on, "off": off}


def test_the_reason_names_what_it_could_not_tell_apart_and_what_to_run() -> None:
    levels = [
        level(1, arm(300, 0.01), arm(200, 0.01)),
        level(64, arm(1000, 0.03, (980, 1020)), arm(1040, 0.04, (1000, 1080), diff=-0.012)),
        level(250, arm(1000, 0.02), arm(1300, 0.02)),
    ]
    out = recommendation_from_levels(levels, repeats=2)
    rec = out["recommendation"]
    assert rec["indistinguishable_at"] == [64] and rec["confidence_label"] != "high"
    reason = rec["reason"]
    assert "The arms were indistinguishable at c=64 (c=64: on 1000.0 ± 3.0 %, off 1040.0 ± 4.0 %)." in reason
    assert "To separate them, run more repeats there: --concurrency 64 --repeats " in reason
    assert (
        "Noise seen: the arms' 95 % intervals were ±1.0 % to ±4.0 % of their figures (widest: off at c=64)"
        in reason
    )
    assert "the 2 repeats of one arm differed by up to 7.7 % (off at c=64)" in reason
    assert "the engine's counts and our streams' by up to 1.2 %" in reason
    assert out["recommended_threshold"] == rec["threshold"] and rec["threshold_range"] is not None


def test_a_clear_run_says_so_without_a_to_do() -> None:
    levels = [level(c, arm(100.0 * c, 0.01), arm(80.0 * c, 0.01)) for c in (1, 8, 64)]
    rec = recommendation_from_levels(levels)["recommendation"]
    assert rec["confidence_label"] == "high" and rec["threshold"] == 0
    assert "indistinguishable" not in rec["reason"] and "To separate" not in rec["reason"]
    assert rec["reason"].startswith("on is ahead beyond the intervals even at the highest level")


def test_equal_arms_are_said_to_be_equal_not_to_need_repeats() -> None:
    levels = [level(1, arm(300, 0.01), arm(200, 0.01)), level(64, arm(1000, 0.03), arm(1000.5, 0.03))]
    rec = recommendation_from_levels(levels)["recommendation"]
    assert (
        "At c=64 the arms differ by far less than the noise: either setting gives the same" in rec["reason"]
    )
    assert "--repeats" not in rec["reason"]


def test_no_level_with_both_arms_recommends_nothing() -> None:
    out = recommendation_from_levels([{"concurrency": 1, "on": arm(1, 0.1), "off": {"unavailable": "no"}}])
    assert out["recommended_threshold"] is None and "no level has both" in out["recommendation"]["reason"]


def test_the_noise_summary_finds_the_widest_and_the_largest_spread() -> None:
    noise = noise_seen([level(1, arm(100, 0.02, (95, 105)), arm(50, 0.005))])
    assert noise["ci_rel_max"] == 0.02 and noise["widest"] == {"arm": "on", "concurrency": 1}
    assert noise["repeat_spread_max"] == 0.1 and noise["ci_rel_min"] == 0.005


def test_another_client_on_the_server_is_named_not_given_as_a_percentage() -> None:
    """The demo's traffic overlapped a bench window: the engine generated 11.9x what our streams got.
    "by up to 1094.9 %" said nothing; the reason says what it means."""
    levels = [
        level(1, arm(132, 0.18, diff=10.949), arm(91, 0.001)),
        level(64, arm(886, 0.03), arm(703, 0.004)),
    ]
    reason = recommendation_from_levels(levels, repeats=2)["recommendation"]["reason"]
    assert (
        "the engine generated 11.9× the tokens our streams received: another client used the server" in reason
    )
    assert "1094.9 %" not in reason
