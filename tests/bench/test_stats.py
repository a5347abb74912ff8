"""Per-level statistics follow bench_serving's formulas (benchmark/serving.py calculate_metrics)."""

from __future__ import annotations

import pytest

from agent.bench.stats import RequestRecord, level_metrics, percentile, throughput_relative_error


def test_percentile_is_numpys_linear_interpolation() -> None:
    # numpy.percentile([1, 2, 3, 4], 90) == 3.7, ([10], 99) == 10, (range(101), 99) == 99
    assert percentile([4, 1, 3, 2], 90) == pytest.approx(3.7)
    assert percentile([10.0], 99) == 10.0
    assert percentile(list(range(101)), 99) == pytest.approx(99.0)
    assert percentile([], 50) == 0.0


def _record(start: float, ttft: float, gaps: list[float], prompt: int = 100) -> RequestRecord:
    return RequestRecord(
        start=start,
        success=True,
        ttft=ttft,
        latency=ttft + sum(gaps),
        prompt_tokens=prompt,
        output_tokens=len(gaps) + 1,
        itl=gaps,
    )


def test_level_metrics_names_and_values() -> None:
    a = _record(0.0, 0.5, [0.1] * 9)  # 10 tokens, e2e 1.4 s
    b = _record(0.2, 0.3, [0.2] * 4)  # 5 tokens, e2e 1.1 s
    failed = RequestRecord(start=0.1, error="HTTP 500: boom")
    m = level_metrics([a, b, failed], duration_s=2.0)
    assert m["completed"] == 2 and m["failed"] == 1
    assert m["total_output_tokens"] == 15
    assert m["output_throughput"] == pytest.approx(7.5)
    assert m["request_throughput"] == pytest.approx(1.0)
    assert m["total_throughput"] == pytest.approx(107.5)
    assert m["mean_ttft_ms"] == pytest.approx(400.0)
    # TPOT per request = (latency - ttft) / (output_len - 1)
    assert m["mean_tpot_ms"] == pytest.approx((100.0 + 200.0) / 2)
    assert m["median_itl_ms"] == pytest.approx(100.0)
    assert m["p99_itl_ms"] == pytest.approx(200.0)
    assert m["mean_e2e_latency_ms"] == pytest.approx(1250.0)
    assert m["concurrency"] == pytest.approx((1.4 + 1.1) / 2.0)
    assert m["max_concurrent_requests"] == 2
    assert m["errors"] == ["HTTP 500: boom"]


def test_relative_error_shrinks_with_more_requests_and_grows_with_spread() -> None:
    tight = [_record(0, 0.1, [0.1] * (9 + i % 2)) for i in range(10)]
    wide = [_record(0, 0.1, [0.1] * (5 + 5 * (i % 2))) for i in range(10)]
    many = [_record(0, 0.1, [0.1] * (5 + 5 * (i % 2))) for i in range(40)]
    assert throughput_relative_error(tight) < throughput_relative_error(wide)
    assert throughput_relative_error(many) == pytest.approx(throughput_relative_error(wide) / 2, rel=0.1)
    assert throughput_relative_error(tight[:1]) == 1.0
