"""The benchmark end to end over real HTTP against a scripted engine whose every number is set.

The engine (``scripted_engine``) gives each running request a set number of tokens per step, so
what the window must find is known: the streams it paces, the tokens SGLang's counter shows, the
concurrency it holds, where on and off are apart and where they are the same.
"""

from __future__ import annotations

import pytest

from agent.bench.compare import run_compare
from agent.bench.options import BenchOptions
from agent.bench.report import compare_table, sweep_table
from agent.bench.sweep import run_sweep
from agent.bench.window import STARTED_BY_STREAMS
from agent.sglang.live_control import LIVE_THRESHOLD_KEY
from agent.wire.bench_result import BenchResult
from tests.bench.scripted_engine import Request, ScriptedEngine, serve

QUICK = BenchOptions(
    concurrency=(4,), input_len=16, output_len=8, repeats=1, min_window_s=0.0, sample_interval_s=0.02
)


async def test_a_sweep_measures_whole_cycles_at_the_asked_concurrency() -> None:
    engine = ScriptedEngine(tokens_per_step=lambda req, spec, batch: 1)
    async with serve(engine) as url:
        result = await run_sweep(url, QUICK.model_copy(update={"min_requests": 12}))
    [level] = result["levels"]
    [run] = level["runs"]
    window = run["window"]
    assert window["start_source"] == STARTED_BY_STREAMS and window["target"] == 4
    assert window["ramp_s"] > 0, "the ramp's first batch is not in the window"
    assert run["completed"] >= 12 and window["cycles"] >= 3
    # one token per step for everyone: the streams finish whole requests, and SGLang's counter
    # (advanced at each finish) agrees with the tokens the window delivered
    assert run["engine_generated_tokens"] % 8 == 0
    assert run["engine_stream_diff"] == pytest.approx(0.0, abs=0.005)
    assert level["engine_stream_mismatch"] is False
    # held = streams decoding (first token seen, not finished): an 8-token request waits one step of
    # its eight for its first token
    assert 3.0 < level["concurrency"] <= 4.0 and level["concurrency_reached"] is True
    assert level["max_concurrency"] == 4 and level["repeats"] == 1 and level["window_s"] > 0
    assert level["output_throughput_ci"] is not None, "a window of several cycles has slices"
    assert level["ttft_requests"] >= 1 and level["completed"] == run["completed"]
    assert "out tok/s" in sweep_table(BenchResult.model_validate(result).levels)


async def test_tokens_our_streams_never_saw_are_flagged_as_another_clients() -> None:
    # 4 foreign tokens a step beside our 4 streams' 1 each: the engine generates twice what we receive
    engine = ScriptedEngine(tokens_per_step=lambda req, spec, batch: 1, foreign_tokens_per_step=4)
    async with serve(engine) as url:
        result = await run_sweep(url, QUICK.model_copy(update={"min_requests": 12}))
    [level] = result["levels"]
    assert level["engine_stream_diff"] > 0.9 and level["engine_stream_mismatch"] is True
    [line] = [
        row
        for row in sweep_table(BenchResult.model_validate(result).levels).splitlines()
        if row.startswith("! ")
    ]
    measure, _, cause = line.partition(" tok/s): ")
    assert measure.startswith("! c=4 sweep: the engine generated ") and "× the tokens our streams" in measure
    assert cause.startswith("another client used the server during the run"), line


async def test_a_server_that_runs_fewer_than_asked_says_so() -> None:
    engine = ScriptedEngine(tokens_per_step=lambda req, spec, batch: 1, max_running=3)
    async with serve(engine) as url:
        result = await run_sweep(url, QUICK.model_copy(update={"min_requests": 6}))
    [level] = result["levels"]
    [run] = level["runs"]
    assert run["window"]["target"] == 3 and run["window"]["start_source"] == STARTED_BY_STREAMS
    assert level["concurrency_reached"] is False
    assert (
        "engine reached 3 running requests, not 4; the server caps running requests at 3"
        in (level["concurrency_note"])
    )
    assert 2.0 < level["concurrency"] <= 3.0


def _speed(req: Request, speculating: bool, batch: int) -> int:
    """Speculation triples a lone stream's tokens; from 4 running it gives nothing, and the requests'
    speeds alternate (1 or 2 tokens a step) in both arms alike: the same figure with noise."""
    if batch >= 4:
        return 1 + req.index % 2
    return 3 if speculating else 1


async def test_a_compare_interleaves_the_arms_and_says_which_levels_it_cannot_tell_apart() -> None:
    engine = ScriptedEngine(tokens_per_step=_speed, threshold=4)
    options = QUICK.model_copy(update={"concurrency": (1, 4), "repeats": 2, "min_requests": 8})
    async with serve(engine) as url:
        result = await run_compare(url, options)
    order = [(s["concurrency"], s["arm"]) for s in result["switches"]]
    forward = [(c, arm) for c in (1, 4) for arm in ("on", "off", "adaptive")]
    assert order == forward + forward[::-1], "a pass over the levels, then its mirror"
    assert [a[LIVE_THRESHOLD_KEY] for a in engine.set_calls if LIVE_THRESHOLD_KEY in a][-1] == 4, "restored"
    assert all(s["in_force_s"] is not None and s["set_s"] <= s["in_force_s"] for s in result["switches"])
    assert result["settling"]["switches"] == 12 and result["settling"]["in_force_not_seen"] == 0
    one, _ = result["levels"]
    assert one["on"]["output_throughput"] > 2 * one["off"]["output_throughput"]
    # adaptive at c=1 is "on" (threshold 4): their intervals overlap. (The adaptive interval holding
    # on's mean failed once on a loaded machine: this engine steps on the wall clock.)
    a_lo, a_hi = one["adaptive"]["output_throughput_ci"]
    on_lo, on_hi = one["on"]["output_throughput_ci"]
    assert a_lo <= on_hi and on_lo <= a_hi, (
        one["adaptive"]["output_throughput_ci"],
        one["on"]["output_throughput_ci"],
    )
    for arm in ("on", "off", "adaptive"):
        assert one[arm]["repeats"] == 2 and len(one[arm]["runs"]) == 2
        assert one[arm]["output_throughput_ci"] is not None
    rec = result["recommendation"]
    assert result["recommended_threshold"] == 0
    assert rec["indistinguishable_at"] == [4] and rec["confidence_label"] != "high"
    assert "The arms were indistinguishable at c=4 (c=4: on " in rec["reason"]
    assert "Noise seen: the arms' 95 % intervals were ±" in rec["reason"]
    checks = {c["concurrency"]: c["twin"] for c in result["summary"]["adaptive_vs_twin"]}
    assert checks == {1: "on", 4: "off"}
    table = compare_table(BenchResult.model_validate(result))
    assert "±" in table and "indistinguishable at c=4" in table
