"""A bench waits for other clients' requests to leave the engine before its first request, and says
how long it will take before it starts (issue 27)."""

from __future__ import annotations

from typing import Any

from agent.bench.drain import Busy, wait_for_drain
from agent.bench.estimate import estimate
from agent.bench.options import BenchOptions
from agent.sglang.reading import MetricsReading
from agent.wire.bench_result import BenchResult


class DrainingEngine:
    """Stands in for SGLang's /metrics: running and queued fall by a step per read."""

    def __init__(self, running: int, queued: int, step: int) -> None:
        self.running, self.queued, self.step = running, queued, step

    async def metrics(self) -> MetricsReading:
        reading = MetricsReading(source="metrics", gauges={"running": self.running, "queued": self.queued})
        self.queued = max(0, self.queued - self.step)
        self.running = max(0, self.running - self.step)
        return reading


async def test_it_waits_for_the_engine_to_drain_and_says_so() -> None:
    said: list[tuple[Busy, float]] = []
    engine: Any = DrainingEngine(running=250, queued=3, step=100)
    outcome = await wait_for_drain(engine, 30.0, lambda b, s: said.append((b, s)), poll_s=0.0)
    assert outcome.drained and outcome.at_start == Busy(250, 3) and outcome.at_end.idle
    assert [b.running for b, _ in said] == [250, 150, 50]
    assert said[0][0].words() == "250 running, 3 queued"


async def test_an_engine_that_does_not_drain_is_measured_after_the_limit() -> None:
    engine: Any = DrainingEngine(running=40, queued=0, step=0)
    outcome = await wait_for_drain(engine, 0.05, lambda b, s: None, poll_s=0.01)
    assert not outcome.drained and outcome.at_end.running == 40 and outcome.waited_s >= 0.05


def test_the_estimate_prefers_an_earlier_run_of_the_same_plan() -> None:
    options = BenchOptions(concurrency=(1, 2, 4), repeats=2)
    earlier = [BenchResult(bench_id="b-1", mode="compare", state="finished", duration_s=250.0,
                           options=options.public_dict())]  # fmt: skip
    same = estimate("compare", options, earlier=earlier)
    assert same.expected_s == 250.0 and "b-1" in same.basis and same.steps == 3 * 3 * 2
    other = estimate("compare", BenchOptions(concurrency=(1, 2), repeats=2), earlier=earlier, busy_now=12)
    assert "rough" in other.basis and other.drain_wait_s == options.drain_wait_s and other.expected_s > 0


def test_a_latency_seen_under_load_is_not_read_as_one_streams() -> None:
    """The demo's confirm said "about 4 h 50 m" for a run of about half an hour: the engine's recent
    latency (18.6 s a request, with 249 running) was taken for a request's time at one stream."""
    options = BenchOptions(concurrency=(1, 2, 4, 8, 16, 32, 64, 128, 250), repeats=2)
    loaded = estimate("compare", options, request_s=18.6, request_at=249, busy_now=249)
    alone = estimate("compare", options, request_s=18.6, request_at=1)
    assert "18.6 s a request at 249 running" in loaded.basis and "one stream" in alone.basis
    assert loaded.expected_s < alone.expected_s / 3
    # the slowest level costs what the engine showed at that load: about its request time per cycle
    assert loaded.expected_s > 18.6 * 3 * 2


async def test_an_engine_without_a_queue_gauge_is_idle_once_nothing_runs() -> None:
    """The scripted engine exports num_running_reqs only: every run against it waited 2 min first."""

    class NoQueueGauge:
        async def metrics(self) -> MetricsReading:
            return MetricsReading(source="metrics", gauges={"running": 0})

    engine: Any = NoQueueGauge()
    outcome = await wait_for_drain(engine, 30.0, lambda b, s: None, poll_s=0.0)
    assert outcome.drained and outcome.waited_s < 5 and outcome.at_end == Busy(0, None)
