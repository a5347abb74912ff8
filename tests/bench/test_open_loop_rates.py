"""Arrivals in the open (issue 45 item 2): requests sent at a rate with bench_serving's gamma gaps,
each rate a level with the closed loop's figures; run by ``agent bench sweep --request-rate`` against
the simulated engine (real HTTP), and refused where it is not built (a compare, a stopping rule)."""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
from itertools import islice
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent.bench.arrivals import gaps, parse_rates
from agent.profile.store import load_profile
from agent.sim.server import run_sim
from agent.wire.bench_request import BenchRequest

EAGLE3 = Path(__file__).resolve().parents[2] / "profiles" / "kimi-k25-eagle3.toml"


@pytest.mark.parametrize("burstiness", [1.0, 0.25, 4.0])
def test_the_gaps_have_the_rates_mean_and_the_burstiness_spread(burstiness: float) -> None:
    drawn = list(islice(gaps(8.0, burstiness, seed=3), 20_000))
    mean = statistics.fmean(drawn)
    cv2 = statistics.pvariance(drawn) / mean**2
    assert mean == pytest.approx(1 / 8, rel=0.05)
    assert cv2 == pytest.approx(1 / burstiness, rel=0.1), "gamma shape B: CV² = 1/B (Poisson: 1)"
    assert list(islice(gaps(float("inf"), burstiness, seed=3), 5)) == [0.0] * 5


def test_rates_are_a_sweeps_bounded_and_worded() -> None:
    assert parse_rates("2, 8,inf") == [2.0, 8.0, "inf"]
    ok = BenchRequest(mode="sweep", request_rates=[2.0, "inf"], burstiness=0.5)
    assert ok.options.request_rates == (2.0, "inf") and ok.options.burstiness == 0.5
    for body, words in (
        ({"mode": "compare", "request_rates": [2.0]}, "a sweep's for now"),
        ({"mode": "sweep", "request_rates": [2.0], "until": 0.04}, "not a stopping rule"),
        ({"mode": "sweep", "request_rates": [0]}, "each above 0 and at most 100000, or inf"),
        ({"mode": "sweep", "request_rates": ["fast"]}, "each above 0 and at most 100000, or inf"),
        ({"mode": "sweep", "request_rates": [1.0] * 17}, "a list of 1 to 16 different rates"),
        ({"mode": "sweep", "burstiness": 0}, "burstiness: a number from 0.01 to 100"),
    ):
        with pytest.raises(ValidationError) as info:
            BenchRequest.model_validate(body)
        [error] = info.value.errors()
        assert words in error["msg"], (body, error["msg"])
        assert "fast" not in error["msg"]


async def _bench(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent.cli.main", "bench", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


async def test_a_rate_sweep_on_the_sim_gives_each_rate_its_figures_and_records_the_arrivals(
    tmp_path: Path,
) -> None:
    out = tmp_path / "rates.json"
    args = ["--request-rate", "3,inf", "--min-requests", "12", "--repeats", "2", "--input-len", "64",
            "--output-len", "16", "--dataset", "chat-small.jsonl", "--drain-wait-s", "0", "--json", str(out)]  # fmt: skip
    async with run_sim(load_profile(EAGLE3), port=0, speedup=50, seed=9) as sim:
        rc, stdout, stderr = await _bench("sweep", "--url", sim.url, *args)
        refused, _, said = await _bench("compare", "--url", sim.url, "--request-rate", "2")
    assert rc == 0, stderr
    result = json.loads(out.read_text())
    assert result["arrivals"] == {"request_rates": [3.0, "inf"], "burstiness": 1.0, "process": "poisson",
                                  "requests_per_window": 12}  # fmt: skip
    assert result["workload"]["file"] == "chat-small.jsonl"
    paced, burst = result["levels"]
    assert paced["request_rate"] == 3.0 and burst["request_rate"] == "inf"
    for level in (paced, burst):
        assert level["repeats"] == 2 and level["requests"] == 24 and level["completed"] == 24
        assert level["output_throughput"] > 0 and level["output_throughput_ci"] is not None
        assert level["median_ttft_ms"] > 0 and level["median_itl_ms"] > 0
    # Twelve requests at 3/s take about 11 gaps of 1/3 s to send (a loaded host only lengthens
    # them); all at once, every request is in flight together.
    assert paced["request_throughput"] < 6 and burst["max_concurrent_requests"] == 12
    assert burst["request_throughput"] > paced["request_throughput"]
    assert "all at once" in stdout and "3/s" in stdout and "workload: dataset chat-small.jsonl" in stdout
    assert refused == 2 and "--request-rate: a sweep's for now" in said, said
