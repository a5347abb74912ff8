"""How long a run will take, said before it starts (the confirm dialog, ``POST /v1/bench/plan``).

The best guess is an earlier run of the same plan on this host: how long it took. Without one, the
run's own duration model (``schedule.DurationModel``) guesses from a request's time taken from the
engine's recent latencies (TTFT plus one ITL per output token) when it has any, at the concurrency
those latencies were seen at (the demo's 249 running requests take 18 s each; read as one stream's
time, that made a 30-minute run "about 4 h 50 m"), and says it is rough. A run also waits first for other clients' requests to leave the engine
(``agent.bench.drain``): when the engine is busy now, the estimate says how long that may add.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agent.bench.options import BenchOptions
from agent.bench.schedule import DurationModel, format_duration
from agent.bench.stopping import first_steps
from agent.wire.bench_result import BenchResult

COMPARE_ARMS = ("on", "off", "adaptive")
SAME_PLAN_KEYS = (
    "concurrency", "repeats", "input_len", "output_len", "min_requests", "min_window_s", "chat", "stop", "arms",
)  # fmt: skip


@dataclass(frozen=True)
class Estimate:
    mode: str
    arms: tuple[str, ...]
    levels: tuple[int, ...]
    steps: int
    expected_s: float
    basis: str
    """Where the figure comes from, in words."""
    drain_wait_s: float
    """The most the run waits for the engine to drain first (0 when it is idle now)."""
    at_most_s: float | None = None
    """With a stopping rule: the longest it may take (its budget, or every level at the window cap);
    ``expected_s`` is then its first windows'."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "at_most_s": None if self.at_most_s is None else round(self.at_most_s, 1),
            "mode": self.mode,
            "arms": list(self.arms),
            "levels": list(self.levels),
            "steps": self.steps,
            "expected_s": round(self.expected_s, 1),
            "basis": self.basis,
            "drain_wait_s": self.drain_wait_s,
        }


def arms_of(mode: str, baseline: bool, chosen: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The arms a run measures: a compare's (those ``chosen``, default every one), or a sweep's one."""
    if mode != "compare":
        return ("sweep",)
    arms = (*COMPARE_ARMS, "baseline") if baseline else COMPARE_ARMS
    return arms if chosen is None else tuple(a for a in arms if a in chosen)


def same_plan(record: BenchResult, mode: str, options: BenchOptions) -> bool:
    recorded = record.options.model_dump(mode="json")
    if record.mode != mode:
        return False
    mine = options.public_dict()
    return all(recorded.get(k) == mine.get(k) for k in SAME_PLAN_KEYS)


def estimate(
    mode: str,
    options: BenchOptions,
    *,
    baseline: bool = False,
    earlier: Iterable[BenchResult] = (),
    request_s: float | None = None,
    request_at: int = 1,
    busy_now: int | None = None,
) -> Estimate:
    """``earlier``: stored run records, newest first; ``request_s``: one request's time from the
    engine's recent telemetry, seen with ``request_at`` requests running; ``busy_now``: requests
    running or queued on it now."""
    arms = arms_of(mode, baseline, options.arms)
    steps = first_steps(options.concurrency, arms, options.stop, options.repeats)
    drain = options.drain_wait_s if busy_now else 0.0
    rule = options.stop
    for record in earlier:
        took = record.duration_s
        if record.state == "finished" and took is not None and same_plan(record, mode, options):
            basis = f"run {record.bench_id} of the same plan took {format_duration(took)}"
            budget = None if rule is None else rule.budget_s
            return Estimate(mode, arms, options.concurrency, len(steps), float(took), basis, drain, budget)
    at = max(1, request_at)
    model = DurationModel(options.min_window_s, probes={at: request_s} if request_s else {})
    expected = model.remaining(steps)
    streams = "one stream" if at == 1 else f"{at} running"
    basis = (
        f"from the engine's recent latency ({request_s:.1f} s a request at {streams}); rough"
        if request_s
        else "a rough guess: no run of this plan and no latency from the engine yet"
    )
    at_most: float | None = None
    if rule is not None:
        capped = model.remaining(first_steps(options.concurrency, arms, None, rule.max_windows))
        at_most = capped if rule.budget_s is None else min(capped, rule.budget_s)
        basis += (
            f"; the first {rule.min_windows} windows of every arm, then more where the intervals need "
            f"them, {format_duration(at_most)} at most"
        )
    return Estimate(mode, arms, options.concurrency, len(steps), expected, basis, drain, at_most)


def request_time(ttft_s: float | None, itl_s: float | None, output_len: int) -> float | None:
    """One request's time from latencies: its first token, then one ITL per further token."""
    if itl_s is None:
        return None
    return (ttft_s or 0.0) + itl_s * max(0, output_len - 1)
