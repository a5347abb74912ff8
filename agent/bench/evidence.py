"""Which stored benchmark speaks for the engine that runs now (``agent.wire.bench_evidence``).

A run is evidence for this engine when it finished, compared on and off, recommended a threshold,
and its provenance (``agent.bench.provenance``) names the same launched profile by its sha256 (a
profile names its model, its drafter and every launch flag) on the same kind of engine (simulated or
not). The newest such run is the one the finding and the autopilot use; a run on another profile,
or one that recommended nothing, is not.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.bench.provenance import profile_facts
from agent.profile.schema import Profile
from agent.wire.bench_evidence import BenchEvidence, MeasuredLevel
from agent.wire.bench_result import BenchResult


def evidence_of(result: BenchResult) -> BenchEvidence | None:
    """The run as evidence, or None when it recommended no threshold or measured no on/off level."""
    rec = result.recommendation
    threshold = result.recommended_threshold if rec is None or rec.threshold is None else rec.threshold
    if result.state != "finished" or result.run_mode != "compare" or threshold is None:
        return None
    levels = []
    for level in result.levels:
        on, off = level.on, level.off
        if on is None or off is None or on.output_throughput is None or off.output_throughput is None:
            continue
        levels.append(
            MeasuredLevel(concurrency=level.asked, on=on.output_throughput, off=off.output_throughput)
        )
    if not levels:
        return None
    span = rec.threshold_range if rec is not None else None
    return BenchEvidence(
        bench_id=result.bench_id,
        finished_at=result.finished_at,
        profile=result.profile,
        threshold=threshold,
        crossover=rec.crossover if rec is not None else None,
        threshold_low=span[0] if span else None,
        threshold_high=span[1] if span else None,
        levels=levels,
    )


def ran_on(result: BenchResult, profile_sha256: str, simulated: bool) -> bool:
    """Whether the run's provenance is this engine's: the launched profile's sha256, and simulated or not."""
    env = result.environment
    if env is None or env.profile is None or env.profile.sha256 != profile_sha256:
        return False
    return env.gpus is None or (env.gpus.source == "simulated") == simulated


def newest_evidence(runs: Iterable[BenchResult], launched: Profile, engine_kind: str) -> BenchEvidence | None:
    """The newest run (``runs`` newest first, as the store lists them) that is evidence for this engine."""
    sha = profile_facts(launched, None).sha256
    if sha is None:
        return None
    for result in runs:
        if ran_on(result, sha, engine_kind == "sim"):
            found = evidence_of(result)
            if found is not None:
                return found
    return None
