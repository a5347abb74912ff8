"""Per-level statistics follow bench_serving's formulas (benchmark/serving.py calculate_metrics)."""

from __future__ import annotations

import pytest

from agent.bench.stats import RequestRecord, percentile, spread


def test_percentile_is_numpys_linear_interpolation() -> None:
    # numpy.percentile([1, 2, 3, 4], 90) == 3.7, ([10], 99) == 10, (range(101), 99) == 99
    assert percentile([4, 1, 3, 2], 90) == pytest.approx(3.7)
    assert percentile([10.0], 99) == 10.0
    assert percentile(list(range(101)), 99) == pytest.approx(99.0)
    assert percentile([], 50) == 0.0


def test_spread_fields_are_bench_servings_names_in_milliseconds() -> None:
    fields = spread("ttft", [0.1, 0.2, 0.3, 0.4])
    assert sorted(fields) == sorted(f"{k}_ttft_ms" for k in ("mean", "median", "std", "p90", "p95", "p99"))
    assert fields["mean_ttft_ms"] == pytest.approx(250.0)
    assert fields["median_ttft_ms"] == pytest.approx(250.0)
    assert fields["p90_ttft_ms"] == pytest.approx(370.0)
    assert fields["std_ttft_ms"] == pytest.approx(111.803, rel=1e-4)  # population std, as numpy's
    assert spread("itl", [])["p99_itl_ms"] == 0.0


def test_a_records_tokens_by_a_time_come_from_its_chunks() -> None:
    r = RequestRecord(start=0.0, chunk_times=[0.5, 0.7, 1.0], chunk_counts=[1, 4, 6])
    assert [r.tokens_by(t) for t in (0.4, 0.5, 0.8, 2.0)] == [0, 1, 4, 6]
    assert r.token_times() == [0.5, 0.7, 0.7, 0.7, 1.0, 1.0]
    assert r.first_token_at == 0.5
