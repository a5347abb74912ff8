"""A finished benchmark on the engine that runs now, as evidence: what it recommended and measured.

The agent picks the newest finished compare whose provenance is this engine's (the same launched
profile, by the sha256 of its TOML, which names the model; simulated or not: ``agent.bench.evidence``)
and hands it to the parts that judge the live setting: the health finding that says when the live
threshold goes against it (``agent.telemetry.against_bench``) and the autopilot, which starts from it
(``agent.control.autopilot``). One model for both, so they name the same run and the same numbers.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class MeasuredLevel(_Wire):
    """One concurrency level of the run: output tok/s with drafting (on) and without (off)."""

    concurrency: int
    on: float
    off: float

    @property
    def off_ahead(self) -> bool:
        return self.off > self.on


class BenchEvidence(_Wire):
    bench_id: str
    finished_at: float | None = None
    profile: str | None = None
    threshold: int = Field(description="The recommended threshold; 0: speculate at every batch size")
    crossover: float | None = Field(None, description="Where off overtakes on (concurrency), if it does")
    threshold_low: int | None = Field(None, description="The recommendation's interval, lower end")
    threshold_high: int | None = Field(None, description="Its upper end; None: off may never win")
    levels: list[MeasuredLevel] = Field(default_factory=list)

    def threshold_words(self) -> str:
        return "none" if self.threshold == 0 else str(self.threshold)

    def interval_words(self) -> str:
        """ "118–170", "from 118" (no upper end), or nothing when the run gave none."""
        if self.threshold_low is None:
            return ""
        if self.threshold_high is None:
            return f"from {self.threshold_low}"
        return f"{self.threshold_low}–{self.threshold_high}"

    def words(self) -> str:
        """ "bench run 20261207-031500-abc123 recommended threshold 142 (118–170)"."""
        span = self.interval_words()
        return f"bench run {self.bench_id} recommended threshold {self.threshold_words()}" + (
            f" ({span})" if span else ""
        )

    def nearest(self, running: float, *, off_ahead: bool) -> MeasuredLevel | None:
        """The measured level closest to ``running`` where off (or on) was ahead."""
        found = [lv for lv in self.levels if lv.off_ahead == off_ahead]
        return min(found, key=lambda lv: abs(lv.concurrency - running), default=None)
