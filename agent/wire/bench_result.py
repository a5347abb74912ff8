"""A benchmark result as the agent stores it and serves it (``GET /v1/bench/{id}``): typed models.

The agent writes every stored result through ``BenchResult`` and the console reads it back into the
same model, so neither walks the JSON with ``.get``. The fields are the ones somebody reads (the
Bench screen, ``agent bench show``, the recommendation); every other figure of a level or an arm
(latency percentiles, engine counters, ratios...) is kept as it came (``extra="allow"``), so a stored
result round-trips unchanged and a newer agent's figures survive an older console.

Old results stay readable: a result written before a field existed simply lacks it (None), the
results of ``agent bench`` run from the command line (no ``bench_id``, ``kind`` for ``mode``) read
too, and an arm that could not run is ``{"unavailable": reason}``. ``tests/bench/test_bench_result.py``
loads every committed result.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agent.wire.bench_env import BenchEnvironment
from agent.wire.bench_workload import WorkloadDrawn

BenchState = Literal["running", "finished", "failed", "cancelled"]
ARM_NAMES: tuple[str, ...] = ("on", "off", "adaptive", "baseline")
"""A compare's arms, in the order results show them (a sweep's level is its own single arm)."""


class _Open(BaseModel):
    """Typed where read; the rest of the benchmark's figures kept as they are."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)


class BenchRun(_Open):
    """One repeat of one arm at one level (its own figures; the arm's are over all of them)."""

    repeat: int | None = None
    step: int | None = None
    output_throughput: float | None = None


class WindowTrend(_Open):
    """Whether an arm's windows at a level trend (``agent.bench.trend``): a slope beyond their noise."""

    windows: int | None = None
    change: float | None = Field(
        None, description="Relative change from the first window to the last, by the slope"
    )
    noise: float | None = Field(None, description="One window's relative noise about the line")
    trending: bool | None = Field(
        None, description="The slope's 95 % interval excludes 0 and its change exceeds the noise"
    )


class Figures(_Open):
    """What an arm measured (and what a sweep's level measured: there the level is the arm)."""

    unavailable: str | None = Field(None, description="Why this arm did not run; its figures are then absent")
    output_throughput: float | None = Field(None, description="tok/s over the steady-state window")
    output_throughput_ci: tuple[float, float] | None = Field(
        None, description="95 % interval of output_throughput over repeats and window slices"
    )
    repeats: int | None = None
    window_s: float | None = Field(None, description="Seconds of steady-state window, all repeats together")
    engine_mean_running_reqs: float | None = None
    engine_stream_mismatch: bool | None = Field(
        None, description="The engine's token count and the client's streams differed by more than 2 %"
    )
    runs: list[BenchRun] = Field(default_factory=list)
    output_throughput_ci_rel: float | None = Field(
        None, description="The interval's half-width over the figure"
    )
    concurrency_reached: bool | None = Field(None, description="The engine held the asked concurrency")
    concurrency_note: str | None = None
    engine_output_throughput: float | None = Field(None, description="tok/s from the engine's own counters")
    engine_stream_diff: float | None = Field(None, description="(engine - streams) / streams, token counts")
    client_cpu_fraction: float | None = Field(None, description="Of one core, the load generator's")
    request_throughput: float | None = None
    median_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    median_itl_ms: float | None = None
    p99_itl_ms: float | None = None
    median_e2e_latency_ms: float | None = None
    accept_length: float | None = None
    accept_length_source: str | None = None
    failed: int | None = None
    trend: WindowTrend | None = Field(
        None, description="Whether its windows trend (issue 46); older results lack it"
    )

    @property
    def windowed(self) -> bool:
        """Measured over a steady-state window (newer results); older ones timed the whole level."""
        return self.window_s is not None


class BenchArm(Figures):
    concurrency: float | None = Field(
        None, description="Running requests held in the window (windowed results), else the asked level"
    )

    @property
    def reached(self) -> float | None:
        """Running requests during this arm: held in its window (newer results), else the engine's mean."""
        return self.concurrency if self.windowed else self.engine_mean_running_reqs


class LevelStopping(_Open):
    """What ended a level's windows (``agent.bench.stopping``): the stopping rule's outcome."""

    outcome: str = Field(
        description="fixed (the --repeats asked for), bound (every interval within it), budget (the "
        "run's time ran out), max_windows (the cap)"
    )
    windows: int | None = Field(None, description="Windows of every arm at this level")
    bound: float | None = Field(None, description="The bound asked for (0.04: ±4 %), if any")
    reached: dict[str, float | None] = Field(
        default_factory=dict, description="Each arm's interval half-width over its figure at the end"
    )
    words: str | None = None


class StoppingRule(_Open):
    until: float | None = None
    budget_s: float | None = None
    min_windows: int | None = None
    max_windows: int | None = None
    words: str | None = None


class LevelStoppingLine(LevelStopping):
    """A level's line in the run's ``stopping``: its concurrency and what ended its windows."""

    concurrency: int | None = None


class RunStopping(_Open):
    rule: StoppingRule | None = Field(None, description="None: a fixed number of windows (--repeats)")
    levels: list[LevelStoppingLine] = Field(default_factory=list)


class BenchLevel(Figures):
    """One concurrency level: a compare's arms by name, or (a sweep) the level's own figures."""

    concurrency: float | None = Field(
        None,
        description="A compare's: the concurrency asked for; a sweep's: as its arm's (held, when windowed)",
    )
    max_concurrency: int | None = Field(None, description="The concurrency asked for")
    on: BenchArm | None = None
    off: BenchArm | None = None
    adaptive: BenchArm | None = None
    baseline: BenchArm | None = None
    envelope: float | None = Field(None, description="A compare's: max(on, off) tok/s")
    ratios: dict[str, float | None] = Field(default_factory=dict, description="Each arm over the envelope")
    stopping: LevelStopping | None = Field(
        None, description="What ended this level's windows (newer results)"
    )

    @property
    def asked(self) -> int:
        """The level's label: ``concurrency``, else ``max_concurrency`` (as results have always been read)."""
        return int(self.concurrency if self.concurrency is not None else (self.max_concurrency or 0))

    def arms(self) -> dict[str, BenchArm]:
        """The arms this level holds, by name (``sweep`` for a sweep's level), in the results' order."""
        out: dict[str, BenchArm] = {}
        if self.output_throughput is not None:
            fields = {k: getattr(self, k) for k in Figures.model_fields if k in self.model_fields_set}
            out["sweep"] = BenchArm(**fields, concurrency=self.concurrency)
        for name in ARM_NAMES:
            arm = getattr(self, name)
            if arm is not None:
                out[name] = arm
        return out


class Resolution(_Open):
    """Per level, the smallest on-vs-off difference the run tells apart (``agent.bench.verdict``)."""

    concurrency: int | None = None
    resolves: float | None = None
    repeats: int | None = None
    with_repeats: int | None = None
    resolves_with_repeats: float | None = None


class Recommendation(_Open):
    threshold: int | None = None
    crossover: float | None = Field(None, description="Where the on/off ratio crosses 1 (concurrency)")
    threshold_range: tuple[int, int | None] | None = Field(
        None, description="Its interval; None above: never"
    )
    confidence: float | None = None
    confidence_label: str | None = None
    reason: str = ""
    resolution: list[Resolution] = Field(
        default_factory=list, description="Per level, what more repeats would resolve (verdict's own rows)"
    )


class LiveControl(_Open):
    """Whether the run could switch the live threshold, and whether it put the operator's back."""

    available: bool = False
    reason: str | None = None
    original_threshold: int | None = None
    restored: bool | None = None
    restore_error: str | None = None


class Spread(_Open):
    median: float
    max: float | None = None


class Settling(_Open):
    """How fast a live switch took effect, over every switch of the run."""

    switches: int = 0
    set_s: Spread | None = Field(None, description="From the request to its read-back")
    in_force_s: Spread | None = Field(None, description="From the request to the engine running it")
    in_force_not_seen: int | None = None


class CompareSummary(_Open):
    adaptive_min_ratio: float | None = None
    adaptive_min_ratio_at: int | None = None
    adaptive_outside_twin_at: list[int] = Field(default_factory=list)
    baseline_ahead_at: list[int] | None = None
    baseline_ahead_from: int | None = None


class RecordedOptions(_Open):
    """A result's ``options``: what ``agent.wire.bench.BenchOptions`` recorded (no API key), typed where
    read; an older result's other keys (``requests_per_level``, ``min_level_seconds``) kept as they are."""

    concurrency: list[int] = Field(default_factory=list)
    min_requests: int | None = None
    input_len: int | None = None
    output_len: int | None = None
    chat: bool | None = None
    repeats: int | None = None
    min_window_s: float | None = None
    warmup_requests: int | None = None
    warmup_output_len: int | None = None
    window_slices: int | None = None
    request_timeout_s: float | None = None
    sample_interval_s: float | None = None
    seed: int | None = None
    drain_wait_s: float | None = None


class PartialRun(_Open):
    """A run cut short (cancelled, failed, its process killed): the windows it completed are kept,
    and this says which levels are whole (``agent.bench.partial``)."""

    whole: list[int] = Field(default_factory=list, description="Levels that got every window meant")
    cut: list[int] = Field(default_factory=list, description="Levels with some of their windows")
    not_reached: list[int] = Field(default_factory=list, description="Levels with no window")
    windows: int = 0
    words: str = ""


class BenchResult(_Open):
    """One stored run: the agent's own record (id, state, where, when) and the benchmark's result."""

    bench_id: str = ""
    mode: str | None = None
    kind: str | None = Field(None, description="What older and command-line results call the mode")
    state: BenchState | None = None
    url: str | None = None
    baseline_url: str | None = None
    profile: str | None = Field(None, description="The profile the measured engine ran")
    created_at: float | None = None
    finished_at: float | None = None
    recommended_threshold: int | None = None
    error: str | None = None
    duration_s: float | None = None
    expected_duration_s: float | None = None
    live_control: LiveControl | None = None
    settling: Settling | None = None
    compare_summary: CompareSummary | None = Field(None, alias="summary")
    off_note: str | None = None
    options: RecordedOptions = Field(
        default_factory=lambda: RecordedOptions(), description="The options the run was given"
    )
    levels: list[BenchLevel] = Field(default_factory=list)
    recommendation: Recommendation | None = None
    environment: BenchEnvironment | None = None
    stopping: RunStopping | None = Field(None, description="The stopping rule and what ended each level")
    arms: list[str] | None = Field(None, description="A compare's measured arms (newer results)")
    partial: PartialRun | None = Field(
        None, description="Set when the run was cut short: its levels are what it completed"
    )
    workload: WorkloadDrawn | None = Field(
        None, description="Where the prompts and lengths came from (agent.bench.workload.describe)"
    )

    @property
    def run_mode(self) -> str:
        return self.mode or self.kind or "sweep"

    def stored(self) -> dict[str, JsonValue]:
        """The JSON the agent writes: what was set, nothing added (a round trip keeps every key and
        value; an integer figure of a typed float field comes back as a float)."""
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)

    def run_line(self) -> dict[str, JsonValue]:
        """The run's line in ``GET /v1/bench`` and in its events (``SUMMARY_KEYS``)."""
        line: dict[str, JsonValue] = {key: getattr(self, key) for key in SUMMARY_KEYS}
        return line


SUMMARY_KEYS: tuple[str, ...] = (
    "bench_id",
    "mode",
    "state",
    "url",
    "baseline_url",
    "profile",
    "created_at",
    "finished_at",
    "recommended_threshold",
    "error",
)
