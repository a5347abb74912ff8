"""A stored benchmark result, read once into what the Bench screen draws.

The agent sends its result as ``agent.wire.bench_result.BenchResult`` (a sweep, or a compare with
one arm per setting at each level); this turns it into what the table, the chart and the
recommendation draw.
A row is labelled by the concurrency that was asked for; the running requests the engine held
during the level (what it actually reached) sit beside it. Each arm's figure carries its 95 %
interval over the repeats (``output_throughput_ci``) when the run measured one; older results have
none and are shown as figures alone. ``where`` says where it ran (the words ``agent bench show``
prints); an older result reads "not recorded".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import ValidationError

from agent.wire import bench_result as wire
from agent.wire.api import BenchSummary
from agent.wire.bench_env import describe, parse_environment

ARMS: tuple[str, ...] = ("sweep", "on", "off", "adaptive", "baseline")

REACHED_SHORT = 0.8
"""A level whose engine ran under this share of the asked concurrency is marked: it measured less."""


@dataclass(frozen=True)
class ArmResult:
    tok_s: float | None
    reached: float | None
    """Running requests during this arm's level: held in its steady-state window (newer results),
    else the engine's mean running requests."""
    unavailable: str | None = None
    interval: tuple[float, float] | None = None
    """The figure's 95 % interval over repeats and window slices."""
    repeats: int | None = None
    window_s: float | None = None
    """Seconds of steady-state window the figure covers, all repeats together."""
    counts_differ: bool = False
    """The engine's token count and our streams' differed by more than 2 % (another client?)."""

    @property
    def half_width_rel(self) -> float | None:
        """The interval's half-width over the figure: the ± of the table."""
        if self.interval is None or not self.tok_s:
            return None
        return (self.interval[1] - self.interval[0]) / 2 / self.tok_s


@dataclass(frozen=True)
class LevelStop:
    """What ended a level's windows under a stopping rule (``agent.bench.stopping``)."""

    outcome: str
    windows: int | None
    words: str

    @property
    def cell(self) -> str:
        """``within, 6`` / ``budget, 7`` / ``cap, 12``: why it stopped and after how many windows."""
        match self.outcome:  # the outcome in the table's few letters (the words are in ``words``)
            case "bound":
                short = "within"
            case "max_windows":
                short = "cap"
            case other:
                short = other
        return short if self.windows is None else f"{short}, {self.windows}"


@dataclass(frozen=True)
class BenchLevel:
    asked: int
    arms: dict[str, ArmResult]
    stopped: LevelStop | None = None
    """None: the run had no stopping rule (a fixed number of windows), or is older than the rule."""

    @property
    def reached(self) -> float | None:
        """The lowest concurrency any arm of this level reached (the honest one to show)."""
        values = [a.reached for a in self.arms.values() if a.reached is not None]
        return min(values) if values else None

    @property
    def short(self) -> bool:
        reached = self.reached
        return reached is not None and reached < REACHED_SHORT * self.asked


@dataclass(frozen=True)
class BenchResult:
    bench_id: str
    mode: str
    state: str
    levels: tuple[BenchLevel, ...]
    recommended_threshold: int | None
    reason: str
    created_at: float | None
    finished_at: float | None
    error: str | None
    arms: tuple[str, ...] = field(default=())
    """The arms present in any level, in a fixed order."""
    where: tuple[tuple[str, str], ...] = field(default=())
    """Where it ran (``agent.wire.bench_env.describe``): GPUs, server, stack, profile."""
    rule: str | None = None
    """The stopping rule in words, when the run had one."""
    partial: str | None = None
    """A run cut short: which levels are whole and which cut (``partial: levels 1 whole, 4 cut``);
    its levels are the windows it completed."""

    @property
    def stopped(self) -> bool:
        """Whether any level says what stopped it (a stopping rule ran)."""
        return any(level.stopped is not None for level in self.levels)

    @property
    def has_intervals(self) -> bool:
        return any(arm.interval is not None for level in self.levels for arm in level.arms.values())

    @property
    def repeats(self) -> int | None:
        counts = {arm.repeats for level in self.levels for arm in level.arms.values() if arm.repeats}
        return max(counts) if counts else None


def _arm(arm: wire.BenchArm) -> ArmResult:
    if arm.unavailable is not None:
        return ArmResult(None, None, arm.unavailable)
    return ArmResult(
        arm.output_throughput,
        arm.reached,
        interval=arm.output_throughput_ci,
        repeats=arm.repeats,
        window_s=arm.window_s,
        counts_differ=arm.engine_stream_mismatch is True,
    )


def _level(level: wire.BenchLevel) -> BenchLevel:
    arms = {name: _arm(arm) for name, arm in level.arms().items()}
    stop = level.stopping
    if stop is None or stop.outcome == "fixed":
        return BenchLevel(level.asked, arms)
    return BenchLevel(level.asked, arms, LevelStop(stop.outcome, stop.windows, stop.words or stop.outcome))


def parse_result(result: wire.BenchResult) -> BenchResult:
    levels = tuple(_level(level) for level in result.levels)
    present = tuple(a for a in ARMS if any(a in level.arms for level in levels))
    return BenchResult(
        bench_id=result.bench_id,
        mode=result.run_mode,
        state=result.state or "finished",
        levels=levels,
        recommended_threshold=result.recommended_threshold,
        reason=result.recommendation.reason if result.recommendation is not None else "",
        created_at=result.created_at,
        finished_at=result.finished_at,
        error=result.error or None,
        arms=present,
        where=_where(result),
        rule=result.stopping.rule.words if result.stopping is not None and result.stopping.rule else None,
        partial=result.partial.words if result.partial is not None and levels else None,
    )


def _where(result: wire.BenchResult) -> tuple[tuple[str, str], ...]:
    """Where it ran, and its workload (newer results); an older result without ``environment`` is
    read from what it kept."""
    drawn = () if result.workload is None else (("workload", result.workload.words()),)
    if result.environment is not None:
        return (*describe(result.environment), *drawn)
    try:
        return tuple(describe(parse_environment(result.stored())))
    except ValidationError as exc:
        return (("where it ran", f"unreadable ({exc.errors()[0]['msg']})"),)


@dataclass(frozen=True)
class RunSummary:
    """One line of the run history (GET /v1/bench lists these, newest first)."""

    bench_id: str
    mode: str
    state: str
    recommended_threshold: int | None
    created_at: float | None
    error: str | None


def parse_runs(runs: list[BenchSummary]) -> list[RunSummary]:
    return [
        RunSummary(
            bench_id=run.bench_id,
            mode=run.mode or "?",
            state=run.state or "?",
            recommended_threshold=run.recommended_threshold,
            created_at=run.created_at,
            error=run.error or None,
        )
        for run in runs
        if run.bench_id
    ]
