"""The live threshold against a finished bench on this engine (issue 48, item 1): speculating above a
measured crossover, or not speculating well below one, is a finding that names the run, the
recommended threshold and the measured level, and offers the action."""

from __future__ import annotations

from agent.profile.schema import Health
from agent.telemetry.against_bench import threshold_against_bench
from agent.telemetry.health import HealthWatch
from agent.telemetry.moment import Moment
from agent.wire import Load, Snapshot, Speculation
from agent.wire.bench_evidence import BenchEvidence, MeasuredLevel
from agent.wire.snapshot import ActionOffer

BENCH = BenchEvidence(
    bench_id="20261207-031500-abc123",
    threshold=142,
    crossover=141.3,
    threshold_low=118,
    threshold_high=170,
    levels=[
        MeasuredLevel(concurrency=1, on=138, off=84),
        MeasuredLevel(concurrency=64, on=2610, off=2200),
        MeasuredLevel(concurrency=250, on=1953, off=2827),
    ],
)


def at(running: int, threshold: int, *, available: bool = True) -> Snapshot:
    spec = Speculation(configured=True, on=True, threshold_available=available, threshold=threshold)
    return Snapshot(seq=1, time=100.0, speculation=spec, load=Load(running=running, queued=0))


def judge(running: int, threshold: int, evidence: BenchEvidence | None = BENCH, **kw: bool) -> object:
    return threshold_against_bench(
        Moment(snap=at(running, threshold, **kw), limits=Health(), evidence=evidence)
    )


def test_no_threshold_at_250_with_the_bench_measuring_off_ahead_there_is_a_finding_with_the_action() -> None:
    found = judge(250, 0)
    assert found is not None
    assert found.code == "threshold_against_bench" and found.severity == "warning"  # type: ignore[attr-defined]
    assert "Drafting at 250 running" in found.title and BENCH.bench_id in found.title  # type: ignore[attr-defined]
    why = found.explanation  # type: ignore[attr-defined]
    assert "recommended threshold 142 (118–170)" in why and "c=250: on 1,953 tok/s, off 2,827" in why
    assert "none (speculate at every batch size)" in why
    assert found.offer == ActionOffer(kind="threshold", value=142)  # type: ignore[attr-defined]
    assert "agent control threshold 142" in found.action  # type: ignore[attr-defined]
    # A threshold above the batch drafts as well.
    assert judge(250, 300) is not None


def test_at_the_recommended_threshold_or_short_of_the_crossover_there_is_none() -> None:
    assert judge(250, 142) is None  # off above 142: what the bench says
    assert judge(120, 0) is None  # drafting below the crossover: right
    assert judge(250, 0, evidence=None) is None
    assert judge(250, 0, available=False) is None  # no live threshold: nothing to offer
    # No level near the batch measured off ahead: 170 running is 1.5x from 250, too far to speak for it.
    assert judge(170, 0) is None


def test_not_drafting_well_below_the_crossover_is_a_finding_too() -> None:
    found = judge(64, 1)  # threshold 1: never speculate, at 64 running where on was ahead
    assert found is not None and "Not drafting at 64 running" in found.title  # type: ignore[attr-defined]
    assert "c=64: on 2,610 tok/s, off 2,200" in found.explanation  # type: ignore[attr-defined]
    assert found.offer == ActionOffer(kind="threshold", value=142)  # type: ignore[attr-defined]
    assert judge(130, 120) is None  # just below the recommendation and within its interval: no finding


def test_the_health_watch_leaves_it_out_while_a_bench_runs() -> None:
    watch = HealthWatch()
    judged = watch.observe(at(250, 0), Health(), evidence=BENCH)
    assert [f.code for f in judged.findings] == ["threshold_against_bench"]
    running = HealthWatch().observe(at(250, 0), Health(), evidence=BENCH, bench="20261207-040000-def456")
    assert "threshold_against_bench" not in [f.code for f in running.findings]
