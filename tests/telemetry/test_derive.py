"""The derivation room, without HTTP: readings, the window and the profile in, Snapshot parts out."""

from __future__ import annotations

from typing import Any

import pytest

from agent.sglang.info_view import parse_server_info
from agent.sglang.live_control import READBACK_FIELD
from agent.sglang.reading import MetricsReading, read_page
from agent.telemetry import derive
from agent.telemetry.derive import ProfileFacts, Windows
from agent.telemetry.derive_spec import speculation
from agent.telemetry.window import CounterWindow

from .conftest import FIXTURES, profile

REPRO = FIXTURES / "repro"
L = 'engine_type="unified",model_name="kimi-k2.5",moe_ep_rank="0",pp_rank="0",tp_rank="0"'
T = 'engine_type="unified",model_name="kimi-k2.5"'
FACTS = ProfileFacts.of(profile("kimi-k25-eagle3"))
WINDOWS = Windows(rate_s=10.0, latency_s=30.0)


def page(decode: float = 0, generated: float = 0, verifies: float = 0, *, steps: int = 3, accept: float = 0.0,
         running: int = 4, ttft: tuple[float, ...] = ()) -> MetricsReading:  # fmt: skip
    """A 0.5.23-shaped page; ``ttft``: cumulative counts for buckets 0.1, 1.0, 30.0 and +Inf."""
    lines = [
        f"sglang:num_running_reqs{{{L}}} {running}",
        f"sglang:spec_num_steps{{{L}}} {steps}",
        f"sglang:spec_accept_length{{{L}}} {accept}",
        f'sglang:realtime_tokens_total{{{L},mode="decode"}} {decode}',
        f'sglang:generation_tokens_total{{{T},is_streaming="true"}} {generated}',
        f"sglang:spec_verify_calls_total{{{T}}} {verifies}",
    ]
    for le, count in zip(("0.1", "1.0", "30.0", "+Inf"), ttft, strict=False):
        lines.append(f'sglang:time_to_first_token_seconds_bucket{{{T},le="{le}"}} {count}')
    if ttft:
        lines.append(f"sglang:time_to_first_token_seconds_count{{{T}}} {ttft[-1]}")
    return read_page("\n".join(lines) + "\n")


def feed(readings: list[tuple[float, MetricsReading]]) -> CounterWindow:
    window = CounterWindow(WINDOWS.keep_s)
    for time, reading in readings:
        window.add(time, reading.counters, reading.histograms)
    return window


def info(**live: Any) -> Any:
    return parse_server_info(
        {
            "speculative_algorithm": "EAGLE3",
            "speculative_eagle_topk": 1,
            "speculative_adaptive": True,
            "internal_states": [{READBACK_FIELD: {"threshold": 64, "pinned_steps": -1, **live}}],
        }
    )


def test_throughput_is_smoothed_over_a_stated_window_and_the_raw_rate_is_beside_it() -> None:
    """SGLang advances its decode counter in bursts: 0 -> 1,730 -> 298 per tick under steady load."""
    counts = [0, 0, 1730, 1730, 2028, 2028, 3700, 3700, 4100, 4100, 5900, 5900]
    readings = [(float(t), page(decode=c)) for t, c in enumerate(counts)]
    window = feed(readings)
    tput = derive.throughput(readings[-1][1], window, WINDOWS)
    assert (tput.output_tok_s_raw, tput.raw_window_s) == (0.0, 1.0)  # the last tick: the counter stood still
    assert tput.output_tok_s == pytest.approx((5900 - 0) / 10, abs=0.1)  # 10 s back, not 1 s
    assert tput.window_s == 10.0 and tput.output_counter == "decode"
    fill = feed(readings[:4])
    assert derive.throughput(readings[3][1], fill, WINDOWS).window_s == 3.0  # while the window fills


def test_an_idle_server_is_0_tok_s_not_unknown() -> None:
    idle = read_page((REPRO / "idle.prom").read_bytes())
    window = feed([(0.0, idle), (1.0, idle)])
    tput = derive.throughput(idle, window, WINDOWS)
    assert (tput.output_tok_s, tput.output_tok_s_raw, tput.requests_per_s, tput.gauge_tok_s) == (
        0.0,
        0.0,
        0.0,
        0.0,
    )
    assert derive.throughput(idle, feed([(0.0, idle)]), WINDOWS).output_tok_s is None  # one reading: no rate


def test_percentiles_come_from_the_window_and_above_the_top_bucket_is_flagged() -> None:
    old = page(ttft=(1000, 1000, 1000, 1000))  # a long, fast past
    new = page(ttft=(1000, 1002, 1050, 1100))  # now: 100 requests, 50 of them over 30 s
    latency = derive.latency(feed([(0.0, old), (5.0, new)]), WINDOWS)
    assert (latency.ttft_count, latency.window_s) == (100, 5.0)
    assert latency.ttft_p99_s == 30.0 and latency.ttft_p99_above_top  # ">30 s", not "30 s"
    assert latency.ttft_p50_s == 30.0 and not latency.ttft_p50_above_top  # exactly the 50th: in (1, 30]
    quiet = derive.latency(feed([(0.0, new), (5.0, new)]), WINDOWS)
    assert quiet.ttft_count == 0 and quiet.ttft_p50_s is None  # no observation in the window


def test_accept_length_is_one_number_from_one_window() -> None:
    first, second = (
        page(generated=1000, verifies=400, accept=1.73),
        page(generated=1300, verifies=500, accept=1.73),
    )
    window = feed([(0.0, first), (4.0, second)])
    spec = speculation(second, info(active_steps=3), window, WINDOWS, FACTS, "ready", 4, False)
    assert (spec.accept_length, spec.accept_source, spec.accept_window_s) == (3.0, "counters", 4.0)
    stalled = feed([(0.0, second), (4.0, second)])  # no request finished within the window
    spec = speculation(second, info(active_steps=3), stalled, WINDOWS, FACTS, "ready", 4, False)
    assert (spec.accept_length, spec.accept_source, spec.accept_window_s) == (1.73, "gauge", None)


def test_the_off_reason_quotes_the_fields_accept_length() -> None:
    off = page(generated=1000, verifies=1000, steps=0)
    later = page(generated=1100, verifies=1100, steps=0)
    window = feed([(0.0, off), (2.0, later)])
    spec = speculation(
        later, info(active_steps=0, ema_accept_len=1.73), window, WINDOWS, FACTS, "ready", 4, False
    )
    assert spec.on is False and spec.off_reason == "adaptive_chose_zero"
    assert spec.accept_length == 1.0 and "(accept length 1.00)" in (spec.off_detail or "")
    assert "1.73" not in (spec.off_detail or "")  # the policy's EMA counts drafts over another window
    above = speculation(later, info(active_steps=0), window, WINDOWS, FACTS, "ready", 70, False)
    assert above.off_reason == "above_threshold" and "threshold of 64" in (above.off_detail or "")


def test_data_parallel_load_and_capacity() -> None:
    dp = read_page((REPRO / "dp-ranks.prom").read_bytes())
    two = parse_server_info({"internal_states": [{"effective_max_running_requests_per_dp": 128}] * 2})
    load = derive.load(dp, two, FACTS.profile)
    assert (load.running, load.queued, load.max_running_requests) == (50, 12, 256)


def test_bad_values_cost_their_fields_and_nothing_else() -> None:
    bad = read_page((REPRO / "inf-gauge.prom").read_bytes())
    window = feed([(0.0, bad), (1.0, bad)])
    load = derive.load(bad, None, FACTS.profile)
    assert (load.running, load.queued) == (12, None)
    kv = derive.kv_view(bad, None, load.running, True, FACTS)
    assert kv.used_tokens is None and kv.pool_tokens == FACTS.profile.server.max_total_tokens
    assert kv.reserved_tokens == 12 * (kv.reserve_per_request_on or 0)
    assert derive.throughput(bad, window, WINDOWS).gauge_tok_s is None
    spec = speculation(bad, None, window, WINDOWS, FACTS, "ready", 12, False)
    assert spec.on is True and spec.steps == 3


def test_kv_used_falls_back_to_num_used_tokens_then_usage() -> None:
    used = read_page('sglang:num_used_tokens{tp_rank="0"} 500\nsglang:max_total_num_tokens{tp_rank="0"} 1000')
    assert derive.used_tokens(used, 1000) == (500, "num_used_tokens")
    usage = read_page('sglang:token_usage{tp_rank="0"} 0.25')
    assert derive.used_tokens(usage, 1000) == (250, "token_usage") and derive.used_tokens(usage, None) == (
        None,
        None,
    )
