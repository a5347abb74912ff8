"""Benchmark runs as the stream reports them: the newest progress of each, never the whole flood.

The agent sends a progress event about once a second per level; the console keeps only the latest
per run (for the bar and the ETA) and keeps them out of the event log, where they would bury the
actions and engine events an operator scrolls back for.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from agent.wire import BenchProgressEvent, BenchRunEvent, Event
from agent.wire.events import BenchRunName
from agent.wire.payloads import BenchProgressLine
from console.model.marks import BenchSpan

RunState = Literal["running", "finished", "failed", "cancelled"]

_STATE_OF_EVENT: dict[BenchRunName | Literal["bench.progress"], RunState] = {
    "bench.started": "running",
    "bench.progress": "running",
    "bench.finished": "finished",
    "bench.failed": "failed",
    "bench.cancelled": "cancelled",
}

ETA_MIN_FRACTION = 0.03
"""Below this share of the run done, an ETA is a guess from too little; none is shown."""


@dataclass(frozen=True)
class BenchRun:
    bench_id: str
    state: RunState
    started_at: float
    """Agent time of the first event of this run seen (its start, unless the console joined late)."""
    updated_at: float
    fraction: float = 0.0
    arm: str | None = None
    concurrency: int | None = None
    completed: int | None = None
    requests: int | None = None
    level_index: int | None = None
    levels: int | None = None
    repeat: int | None = None
    repeats: int | None = None
    message: str = ""
    error: str | None = None
    stated_eta_s: float | None = None
    """The agent's own estimate on its last progress event, when it sends one (preferred)."""
    phase: str | None = None
    """The last progress event's phase: "waiting" (for the engine to drain), "planned", "measuring"..."""
    phase_words: str = ""
    """What the run said it does in that phase ("waiting for the engine to drain: 250 running, ...")."""
    external: bool = False
    """Driven by ``agent bench`` straight at the engine: the agent only heard it start and end."""

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the pace so far (by requests done), or None while that says nothing yet."""
        if self.state != "running" or self.fraction >= 1.0:
            return None
        if self.stated_eta_s is not None:
            return self.stated_eta_s
        if self.fraction < ETA_MIN_FRACTION:
            return None
        elapsed = self.updated_at - self.started_at
        if elapsed <= 0:
            return None
        return elapsed * (1.0 - self.fraction) / self.fraction


def is_progress(event: Event) -> bool:
    return isinstance(event, BenchProgressEvent)


class BenchTracker:
    """Keeps the latest state of each run; ``latest`` is the one most recently heard of."""

    def __init__(self) -> None:
        self.runs: dict[str, BenchRun] = {}
        self.latest: BenchRun | None = None

    def ingest(self, event: BenchRunEvent | BenchProgressEvent) -> bool:
        bench_id = event.data.bench_id
        state = _STATE_OF_EVENT[event.name]
        run = self.runs.get(bench_id) or BenchRun(bench_id, state, event.time, event.time)
        run = replace(run, state=state, updated_at=event.time, message=event.message)
        if isinstance(event, BenchProgressEvent):
            run = _progressed(run, event.data)
        else:
            line = event.data
            run = replace(run, error=line.error or run.error, external=run.external or line.external)
        if state == "finished":
            run = replace(run, fraction=1.0)
        self.runs[bench_id] = run
        self.latest = run
        return True

    @property
    def running(self) -> BenchRun | None:
        """The run going now, if any (the newest one heard of that has not ended)."""
        going = [r for r in self.runs.values() if r.state == "running"]
        return max(going, key=lambda r: r.started_at) if going else None

    def spans(self) -> list[BenchSpan]:
        """Every run heard of as a span of agent time, oldest first: where the charts draw a band
        instead of the switches the bench forced. A run still running has no end yet."""
        return sorted(
            (BenchSpan(r.bench_id, r.started_at, None if r.state == "running" else r.updated_at)
             for r in self.runs.values()),
            key=lambda s: s.start,
        )  # fmt: skip


def _progressed(run: BenchRun, progress: BenchProgressLine) -> BenchRun:
    """A run moved on by its progress (``agent.wire.bench.BenchProgress``, the fields the agent sends)."""
    return replace(
        run,
        fraction=progress.fraction,
        arm=progress.arm,
        concurrency=progress.concurrency or run.concurrency,
        completed=progress.completed,
        requests=progress.requests or run.requests,
        level_index=progress.level_index,
        levels=progress.levels or run.levels,
        repeat=progress.repeat,
        repeats=progress.repeats or run.repeats,
        stated_eta_s=progress.eta_s,
        phase=progress.phase,
        phase_words=progress.message,
    )
