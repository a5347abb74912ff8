"""What a benchmark run is asked to do, and how far it is: the options and the progress as typed models.

The agent's bench (``agent.bench``) runs with :class:`BenchOptions` and reports :class:`BenchProgress`;
both travel: the options are recorded in every result, the progress is the payload of every
``bench.progress`` event. They live here, on the wire, so the console reads the same fields the agent
writes (never a flattened dict rebuilt with ``.get``). Parsing a request body into options, with its
errors naming the field, stays in ``agent.bench.options``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.wire.bench_workload import WorkloadSpec

DEFAULT_CONCURRENCY: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 250)
DEFAULT_MIN_WINDOW_S = 1.0
DEFAULT_REPEATS = 2
DEFAULT_DRAIN_WAIT_S = 120.0
"""Before its first request a run waits this long at most for other clients' requests to finish."""
WARMUP_OUTPUT_LEN = 32
"""Output tokens of an extra warm-up request."""
MIN_COMPLETIONS = 8
COMPLETIONS_PER_STREAM = 2
"""The default K is max(MIN_COMPLETIONS, this x the streams the server runs): every running slot
completes twice inside a window, so it holds two whole cycles of the loop (where more streams are
queued than the server runs, one cycle of the pacing stream already holds that), and a window at
low concurrency is never a couple of requests."""


DEFAULT_MIN_WINDOWS = 4
DEFAULT_MAX_WINDOWS = 12
"""A stopping rule's windows of every arm at a level (``agent.bench.stopping`` says why these)."""


def format_duration(seconds: float) -> str:
    """ "42 s", "2 min 30 s": a run's or a step's length in a progress line and a plan."""
    seconds = max(0, round(seconds))
    if seconds < 90:
        return f"{seconds} s"
    minutes, rest = divmod(seconds, 60)
    return f"{minutes} min {rest:02d} s"


def percent(share: float) -> str:
    """0.04 → ``4 %``, 0.045 → ``4.5 %``."""
    return f"{share * 100:.1f}".rstrip("0").rstrip(".") + " %"


class StopRule(BaseModel):
    """When a run stops adding windows at a level (``agent.bench.stopping`` applies it and checks a
    body's values): every arm's interval within ``until``, the run's budget spent, or the cap."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    until: float | None = None
    """Stop adding windows at a level once every arm's 95 % interval is within ± this share of its
    figure (0.04: ±4 %); None: no bound (windows are added until the budget or the cap)."""
    budget_s: float | None = None
    """The whole run's time, from its start; None: no budget."""
    min_windows: int = DEFAULT_MIN_WINDOWS
    max_windows: int = DEFAULT_MAX_WINDOWS

    def words(self) -> str:
        """``until every arm's 95 % interval is within ±4 % or the run's budget of 20 min 00 s runs
        out (4 to 12 windows of every arm at a level)``."""
        parts = []
        if self.until is not None:
            parts.append(f"until every arm's 95 % interval is within ±{percent(self.until)}")
        if self.budget_s is not None:
            budget = f"the run's budget of {format_duration(self.budget_s)} runs out"
            parts.append(f"or {budget}" if parts else f"until {budget}")
        return (
            " ".join(parts) + f" ({self.min_windows} to {self.max_windows} windows of every arm at a level)"
        )


def default_requests_for(concurrency: int) -> int:
    """The completed requests a level's window must hold when the operator does not say (its K).

    Two completions of every stream (2C) and at least 8: the window then holds two whole cycles of
    the loop, and a low level is never a couple of requests. Where the server runs fewer than C at
    once (its running cap, its KV pool), the loop counts twice what it runs.
    """
    return max(COMPLETIONS_PER_STREAM * concurrency, MIN_COMPLETIONS)


class BenchOptions(BaseModel):
    """A run's options. The API keys are the engine's, for the run's own requests: never written into
    a result, an answer or an event (excluded from every dump, left out of the repr)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    concurrency: tuple[int, ...] = DEFAULT_CONCURRENCY
    min_requests: int | None = None
    """K: completed requests each window must hold; None: :func:`default_requests_for`."""
    input_len: int = 1024
    output_len: int = 256
    chat: bool = False
    repeats: int = DEFAULT_REPEATS
    """Windows per arm and level: passes over every level, each the mirror of the last (``schedule.plan``)."""
    min_window_s: float = DEFAULT_MIN_WINDOW_S
    """W: each window lasts at least this long (then up to the pacing stream's next completion)."""
    warmup_requests: int = 0
    """An extra batch of this many short requests before each loop (each loop's first batch, its
    ramp, is discarded anyway: ``settle``); at most the level's concurrency."""
    warmup_output_len: int = WARMUP_OUTPUT_LEN
    window_slices: int = 4
    """Most slices (of whole pacing cycles) a window is cut into for its interval."""
    request_timeout_s: float = 600.0
    sample_interval_s: float = 0.25
    """How often the engine's /metrics is read during a level for its running count (SGLang builds
    the page from every process's files on each scrape, so it is not free)."""
    api_key: str | None = Field(None, exclude=True, repr=False)
    admin_api_key: str | None = Field(None, exclude=True, repr=False)
    """For SGLang's ADMIN_OPTIONAL routes (/set_internal_state, /flush_cache) when the server has an
    admin key: then those routes refuse the plain API key (sglang-0.5.23.md §4.1)."""
    seed: int = 1
    drain_wait_s: float = DEFAULT_DRAIN_WAIT_S
    """Before its first request, wait this long at most for the engine to finish other clients'
    requests (``agent.bench.drain``); 0: start at once."""
    stop: StopRule | None = None
    """When to stop adding windows at a level (``agent.bench.stopping``); None: ``repeats`` windows."""
    arms: tuple[str, ...] | None = None
    """A compare's arms, in ``ARM_NAMES``' order; None: every arm the server allows (on, off, adaptive,
    and baseline with a baseline URL)."""
    request_rates: tuple[float | Literal["inf"], ...] | None = None
    """Open-loop levels (``agent.bench.open_loop``): requests a second, ``inf`` all at once; None:
    the closed loop's ``concurrency`` levels."""
    burstiness: float = 1.0
    """The arrivals' gamma shape (1: Poisson; below 1: bursts), as bench_serving's ``--burstiness``."""
    workload: WorkloadSpec = WorkloadSpec()
    """Where the prompts and lengths come from (``agent.bench.workload``); the default is today's
    random prompts of ``input_len`` / ``output_len``."""

    def requests_at(self, concurrency: int) -> int:
        if self.min_requests is not None:
            return self.min_requests
        return default_requests_for(concurrency)

    def warmup_at(self, concurrency: int) -> int:
        return min(self.warmup_requests, concurrency)

    def public_dict(self) -> dict[str, object]:
        """The options as recorded in a result (no API key)."""
        return self.model_dump(mode="json")

    def with_api_key(self, api_key: str | None, admin_api_key: str | None = None) -> BenchOptions:
        return self.model_copy(update={"api_key": api_key, "admin_api_key": admin_api_key})


BenchPhase = Literal["waiting", "probing", "planned", "measuring", "measured"]


class BenchProgress(BaseModel):
    """How far a run is: one record for the daemon's stream and the terminal."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    arm: str
    """"sweep" for a plain sweep, else "on" / "off" / "adaptive" / "baseline"."""
    concurrency: int
    level_index: int
    levels: int
    completed: int
    """Requests completed inside the current window so far."""
    requests: int
    """Requests the current window must hold (its K)."""
    fraction: float
    """Of the whole run, 0..1, by expected time."""
    message: str = ""
    phase: BenchPhase = "measuring"
    """"waiting" while the engine drains other clients' requests (``agent.bench.drain``), "planned"
    once before the first step, "measured" at the end of each step."""
    repeat: int = 0
    repeats: int = 1
    step: int = 0
    steps: int = 0
    elapsed_s: float = 0.0
    eta_s: float | None = None
