"""A stored benchmark result, read once into what the Bench screen draws.

The agent's result is JSON (a sweep, or a compare with one entry per arm at each level); this is
the one place that knows its keys, so the table, the chart and the recommendation read typed values.
A row is labelled by the concurrency that was asked for; the running requests the engine held
during the level (what it actually reached) sit beside it. Each arm's figure carries its 95 %
interval over the repeats (``output_throughput_ci``) when the run measured one; older results have
none and are shown as figures alone. ``where`` says where it ran (the words ``agent bench show``
prints); an older result reads "not recorded".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agent.wire.bench_env import describe, parse_environment

ARMS: tuple[str, ...] = ("sweep", "on", "off", "adaptive", "baseline")

REACHED_SHORT = 0.8
"""A level whose engine ran under this share of the asked concurrency is marked: it measured less."""


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


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
class BenchLevel:
    asked: int
    arms: dict[str, ArmResult]

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

    @property
    def has_intervals(self) -> bool:
        return any(arm.interval is not None for level in self.levels for arm in level.arms.values())

    @property
    def repeats(self) -> int | None:
        counts = {arm.repeats for level in self.levels for arm in level.arms.values() if arm.repeats}
        return max(counts) if counts else None


def _interval(value: Any) -> tuple[float, float] | None:
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    low, high = _float(value[0]), _float(value[1])
    return None if low is None or high is None else (low, high)


def _arm(data: Any) -> ArmResult | None:
    if not isinstance(data, Mapping):
        return None
    if "unavailable" in data:
        return ArmResult(None, None, str(data["unavailable"]))
    windowed = "window_s" in data
    repeats = data.get("repeats")
    return ArmResult(
        _float(data.get("output_throughput")),
        _float(data.get("concurrency" if windowed else "engine_mean_running_reqs")),
        interval=_interval(data.get("output_throughput_ci")),
        repeats=repeats if isinstance(repeats, int) and not isinstance(repeats, bool) else None,
        window_s=_float(data.get("window_s")),
        counts_differ=data.get("engine_stream_mismatch") is True,
    )


def _level(row: Mapping[str, Any]) -> BenchLevel:
    asked = row.get("concurrency", row.get("max_concurrency", 0))
    arms: dict[str, ArmResult] = {}
    if "output_throughput" in row:  # a plain sweep: the level is the arm
        sweep = _arm(row)
        if sweep is not None:
            arms["sweep"] = sweep
    for name in ARMS[1:]:
        arm = _arm(row.get(name))
        if arm is not None:
            arms[name] = arm
    return BenchLevel(int(asked) if isinstance(asked, int | float) else 0, arms)


def parse_result(data: Mapping[str, Any]) -> BenchResult:
    levels = tuple(_level(row) for row in data.get("levels") or [] if isinstance(row, Mapping))
    present = tuple(a for a in ARMS if any(a in level.arms for level in levels))
    threshold = data.get("recommended_threshold")
    recommendation = data.get("recommendation")
    reason = recommendation.get("reason", "") if isinstance(recommendation, Mapping) else ""
    return BenchResult(
        bench_id=str(data.get("bench_id", "")),
        mode=str(data.get("mode") or data.get("kind") or "sweep"),
        state=str(data.get("state", "finished")),
        levels=levels,
        recommended_threshold=threshold
        if isinstance(threshold, int) and not isinstance(threshold, bool)
        else None,
        reason=str(reason or ""),
        created_at=_float(data.get("created_at")),
        finished_at=_float(data.get("finished_at")),
        error=str(data["error"]) if data.get("error") else None,
        arms=present,
        where=_where(data),
    )


def _where(data: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    try:
        return tuple(describe(parse_environment(dict(data))))
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


def parse_runs(runs: list[Any]) -> list[RunSummary]:
    out = []
    for run in runs:
        if not isinstance(run, Mapping) or not run.get("bench_id"):
            continue
        threshold = run.get("recommended_threshold")
        out.append(
            RunSummary(
                bench_id=str(run["bench_id"]),
                mode=str(run.get("mode") or "?"),
                state=str(run.get("state") or "?"),
                recommended_threshold=threshold
                if isinstance(threshold, int) and not isinstance(threshold, bool)
                else None,
                created_at=_float(run.get("created_at")),
                error=str(run["error"]) if run.get("error") else None,
            )
        )
    return out
