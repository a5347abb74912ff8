"""``agent.wire.bench_result.BenchResult``: every committed result reads, round-trips, and draws.

The committed results are the GPU host's runs (``bench/results/*/compare-*.json``, written by
``agent bench compare --json`` from 2026-12-01 on) and the real-engine fixture; each version of the
result format since the first real run is among them (whole-level figures, then windows and repeats,
then the baseline arm and where it ran).
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path
from typing import Any

import pytest

from agent.bench.runner import BenchRuns
from agent.bench.store import BenchStore, UnreadableBench, new_bench_id
from agent.wire.bench_result import BenchResult
from console.model.bench_result import parse_result

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = [
    *sorted(ROOT.glob("bench/results/*/compare-*.json")),
    ROOT / "tests/fixtures/sglang-0.5.23-real/bench-compare-oracle.json",
]


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, an integer and the float of it being the same figure."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        return math.isclose(a, b) or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


def test_the_committed_results_are_found() -> None:
    assert len(COMMITTED) >= 10 and all(p.is_file() for p in COMMITTED)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_committed_result_reads_round_trips_and_draws(path: Path) -> None:
    data = json.loads(path.read_text())
    result = BenchResult.model_validate(data)
    assert _same(result.stored(), data)  # nothing dropped, nothing added
    assert result.run_mode == "compare" and result.levels
    view = parse_result(result)
    assert [level.asked for level in view.levels] == [int(row["concurrency"]) for row in data["levels"]]
    first, row = view.levels[0], data["levels"][0]
    for arm in ("on", "off", "adaptive", "baseline"):
        if arm in row and "unavailable" not in row[arm]:
            assert first.arms[arm].tok_s == pytest.approx(row[arm]["output_throughput"])
    assert view.recommended_threshold == data.get("recommended_threshold")


def test_the_store_writes_through_the_model_and_refuses_a_malformed_file(tmp_path: Path) -> None:
    store = BenchStore(tmp_path)
    data = json.loads(COMMITTED[-1].read_text())
    bench_id = new_bench_id()
    store.save(BenchResult.model_validate({**data, "bench_id": bench_id, "state": "finished"}))
    assert _same(
        json.loads(store.path(bench_id).read_text()), {**data, "bench_id": bench_id, "state": "finished"}
    )
    bad = new_bench_id(1_700_000_000)
    store.path(bad).write_text(
        json.dumps({"bench_id": bad, "levels": [{"on": {"output_throughput": "fast"}}]})
    )
    with pytest.raises(UnreadableBench, match=r"levels\.0\.on\.output_throughput"):
        store.get(bad)
    listed = {r.bench_id: r for r in store.list()}
    assert listed[bad].state == "failed" and "levels.0.on.output_throughput" in str(listed[bad].error)


def test_the_console_reads_the_result_with_no_get() -> None:
    """console/model/bench_result.py reads attributes of the model, never keys of a dict."""
    source = (ROOT / "console/model/bench_result.py").read_text()
    gets = [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr == "get"
    ]
    assert gets == []


def test_a_result_that_does_not_fit_the_model_is_kept_and_the_run_says_why(tmp_path: Path) -> None:
    """A builder's bug must not lose a run's figures: the run fails naming the field, the figures stay."""
    runs = BenchRuns(BenchStore(tmp_path))
    record = BenchResult(bench_id=new_bench_id(), mode="sweep", state="running", url="http://e")
    final = runs._finish(record, "finished", None, {"levels": [{"output_throughput": "fast"}]})
    assert final.state == "failed" and "levels.0.output_throughput" in str(final.error)
    stored = json.loads(runs.store.path(record.bench_id).read_text())
    assert stored["state"] == "failed"
    assert stored["unchecked_result"]["levels"][0]["output_throughput"] == "fast"
