"""An engine that counted more or fewer tokens than our streams received reads the same wherever it shows.

The compare result's per-level flag, the text report's ``!`` line and the recommendation's noise
come from one helper (``counters.stream_mismatch_words``): where the engine generated far more than
our streams received, all three say another client used the server, not a percentage of this run.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent.bench.compare import assemble_levels
from agent.bench.report import compare_table
from agent.bench.verdict import recommendation_from_levels
from agent.wire.bench_result import BenchResult


def arm(tok_s: float, diff: float) -> dict[str, Any]:
    return {
        "output_throughput": tok_s,
        "output_throughput_ci": [tok_s * 0.99, tok_s * 1.01],
        "output_throughput_ci_rel": 0.01,
        "output_throughput_repeats": [tok_s, tok_s],
        "engine_output_throughput": tok_s * (1 + diff),
        "engine_stream_diff": diff,
        "engine_stream_mismatch": diff != 0.0,
    }


@pytest.mark.parametrize(
    ("diff", "measure", "cause"),
    [
        (
            10.949,
            "the engine generated 11.9× the tokens our streams received",
            "another client used the server during the run, so its counters are not this run's "
            "(the figures are our streams')",
        ),
        (
            0.25,
            "the engine counted 25.0 % more tokens than our streams received",
            "another client on the server, or a stream miscounted",
        ),
        (-0.08, "the engine counted 8.0 % fewer tokens than our streams received", "a stream miscounted"),
    ],
)
def test_the_flag_and_the_report_line_give_the_same_reading(diff: float, measure: str, cause: str) -> None:
    levels = assemble_levels((4,), {"on": [arm(1000.0, diff)], "off": [arm(900.0, 0.0)]})
    [flag] = levels[0]["flags"]
    assert flag == f"on: {measure}: {cause}"
    assert ("another client" in flag) == (diff > 0), "fewer tokens than ours is no other client's traffic"
    table = compare_table(BenchResult.model_validate({"levels": levels, "live_control": {"available": True}}))
    [line] = [row for row in table.splitlines() if row.startswith("! ")]
    engine = f"{1000.0 * (1 + diff):.1f}"
    assert line == f"! c=4 on: {measure} ({engine} vs 1000.0 tok/s): {cause}"


def test_the_recommendation_names_another_client_in_the_flags_words() -> None:
    levels = assemble_levels(
        (1, 64), {"on": [arm(132.0, 10.949), arm(886.0, 0.0)], "off": [arm(91.0, 0.0), arm(703.0, 0.0)]}
    )
    [flag] = levels[0]["flags"]
    reason = recommendation_from_levels(levels, repeats=2)["recommendation"]["reason"]
    assert flag.removeprefix("on: ") in reason
    assert "1094.9 %" not in reason and "1094.9 %" not in flag
