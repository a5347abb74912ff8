"""What the modelled server counts: SGLang's counters, latency histograms and decode-log windows.

Kept as plain numbers and bucket arrays (cheap to update every step for 250 requests) and turned
into Prometheus text only when ``/metrics`` is scraped (``agent.sim.metrics``). Times are virtual
(modelled) seconds. Semantics follow 0.5.23:

* window gauges (``gen_throughput``, ``spec_accept_length``, ``spec_accept_rate``,
  ``num_retracted_reqs``) and the lifetime accept-length totals behind ``avg_spec_accept_length``
  move every ``decode_log_interval`` decode passes (``metrics_reporter.py``). The pass count and
  the window's sums run on across idle spells and across requests (SGLang's ``forward_ct_decode``
  is reset only by ``/flush_cache``), and the window's seconds run from the previous report (idle
  time included): three requests of 25 passes each report once, at the 40th pass, as the real
  server does, not never;
* a decode window counts what the verify accepted (accepted drafts plus one, ``num_generated_tokens``),
  not what the request kept: a request that needs 3 more tokens from a round that accepts 4 counts
  4. At the launch step count a finished request rides one more decode pass (the overlap
  scheduler launched it before the finish was seen): counted as a pass with its accepted tokens,
  not as a verify call, and not timed (``Engine`` says where the captures show it);
* the throughput gauge reads 0 while idle and its last window's figure again at the next prefill
  (``_current_gen_throughput``), until 30 s without a decode report zero ``last_gen_throughput``;
* tokenizer-side counters and histograms move when a request delivers tokens or finishes;
  inter-token latency is observed per chunk as ``interval / new_tokens`` with count ``new_tokens``.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from agent.sim.config import SimConfig
    from agent.sim.request import SimRequest


class Clock(Protocol):
    """What the counters read of the engine (the engine itself, named by shape so that this module
    does not import the engine that owns it)."""

    @property
    def now(self) -> float: ...

    @property
    def active_draft_tokens(self) -> int: ...


TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
E2E_BUCKETS = (
    0.1,
    0.2,
    0.4,
    0.6,
    0.8,
    1,
    2,
    4,
    6,
    8,
    10,
    20,
    40,
    60,
    80,
    100,
    200,
    400,
    600,
    1200,
    1800,
    2400,
)
ITL_BUCKETS = (
    0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
    0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000,
)  # fmt: skip
GEN_THROUGHPUT_STALENESS_S = 30.0
"""``GEN_THROUGHPUT_STALENESS_SECONDS``: a decode report older than this reads as no throughput."""
QUEUE_TIME_BUCKETS = (
    0.000, 0.001, 0.005, 0.010, 0.050, 0.100, 0.200, 0.500, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60,
    70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000,
)  # fmt: skip
"""0.5.23's default buckets (``metrics_collector.py``)."""


@dataclass
class Histogram:
    """Bucket counts (not cumulative) plus the ``+Inf`` bucket, and the sum."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float, count: int = 1, sum_value: float | None = None) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += count
        self.total += value * count if sum_value is None else sum_value

    @property
    def count(self) -> int:
        return sum(self.counts)


def _streaming(req: SimRequest) -> str:
    return "true" if req.stream else "false"


class EngineStats:
    def __init__(self, config: SimConfig) -> None:
        self.config = config
        # tokenizer side, by is_streaming
        self.prompt_tokens: dict[str, int] = defaultdict(int)
        self.generation_tokens: dict[str, int] = defaultdict(int)
        self.requests: dict[str, int] = defaultdict(int)
        self.aborted = 0
        self.spec_verify_calls = 0
        self.ttft: dict[str, Histogram] = defaultdict(lambda: Histogram(TTFT_BUCKETS))
        self.e2e: dict[str, Histogram] = defaultdict(lambda: Histogram(E2E_BUCKETS))
        self.itl = Histogram(ITL_BUCKETS)
        # scheduler side
        self.queue_time = Histogram(QUEUE_TIME_BUCKETS)
        self.retracted_requests = 0
        self.retracted_input_tokens = 0
        self.retracted_output_tokens = 0
        self.graph_passes: dict[str, int] = defaultdict(int)
        self.realtime_tokens: dict[str, int] = defaultdict(int)
        self.decode_passes = 0
        self.prefill_passes = 0
        self.is_cuda_graph = 0
        # decode-log window (SGLang's forward_ct_decode, num_generated_tokens, spec_num_*)
        self._window_start = 0.0
        """When the previous decode report was made (the engine's start before the first)."""
        self._window_passes = 0
        self._window_generated = 0
        self._window_accept_tokens = 0
        self._window_forward_ct = 0
        self._window_correct = 0
        self._window_retracted = 0
        self.gen_throughput = 0.0
        self.last_gen_throughput = 0.0
        self.spec_accept_length = 0.0
        self.spec_accept_rate = 0.0
        self.num_retracted_reqs = 0
        self.spec_total_accept_tokens = 0
        self.spec_total_forward_ct = 0
        self.lifetime_generated = 0

    # ------------------------------------------------------------------ events

    def on_admit(self, req: SimRequest, now: float) -> None:
        if req.retractions == 0 and req.log_metrics:
            self.queue_time.observe(max(0.0, now - req.arrival))

    def on_prefill_tokens(self, tokens: int) -> None:
        self.realtime_tokens["prefill_compute"] += tokens

    def on_prefill_pass(self, engine: Clock) -> None:
        self.prefill_passes += 1
        if engine.now - self._window_start > GEN_THROUGHPUT_STALENESS_S:
            self.last_gen_throughput = 0.0
        self.gen_throughput = self.last_gen_throughput

    def on_first_token(self, req: SimRequest) -> None:
        if req.log_metrics and req.first_token_at is not None:
            self.ttft[_streaming(req)].observe(req.first_token_at - req.arrival)

    def on_tokens(self, req: SimRequest, new: int, interval: float) -> None:
        if req.log_metrics and new > 0:
            self.itl.observe(interval / new, count=new, sum_value=interval)

    def on_finish(self, req: SimRequest) -> None:
        if not req.log_metrics:
            return
        label = _streaming(req)
        self.prompt_tokens[label] += req.input_len
        self.generation_tokens[label] += req.output_len
        self.requests[label] += 1
        self.spec_verify_calls += req.verify_ct
        if req.finished_at is not None:
            self.e2e[label].observe(req.finished_at - req.arrival)

    def on_abort(self, req: SimRequest) -> None:
        if req.log_metrics:
            self.aborted += 1

    def on_retract(self, retracted: list[SimRequest]) -> None:
        self.retracted_requests += len(retracted)
        self._window_retracted += len(retracted)
        self.retracted_input_tokens += sum(r.input_len for r in retracted)
        self.retracted_output_tokens += sum(r.output_len for r in retracted)

    def on_decode_pass(
        self, engine: Clock, eager: bool, live: int, delivered: int, accept_tokens: int, correct: int
    ) -> None:
        """One decode pass of ``live`` requests; with speculation ``accept_tokens`` is what their
        verify accepted (drafts plus one each), which SGLang counts as the pass's generated tokens."""
        self.decode_passes += 1
        mode = "decode_none" if eager else "decode_cuda_graph"
        self.graph_passes[mode] += 1
        self.is_cuda_graph = 0 if eager else 1
        generated = accept_tokens if self.config.speculative else delivered
        self.realtime_tokens["decode"] += generated
        self.lifetime_generated += delivered
        self._window_passes += 1
        self._window_generated += generated
        self._window_accept_tokens += accept_tokens
        self._window_forward_ct += live if self.config.speculative else 0
        self._window_correct += correct
        if self._window_passes >= self.config.decode_log_interval:
            self._close_window(engine)

    def _close_window(self, engine: Clock) -> None:
        gap = engine.now - self._window_start
        self.last_gen_throughput = self._window_generated / gap if gap > 0 else 0.0
        self.gen_throughput = self.last_gen_throughput
        if self.config.speculative and self._window_forward_ct > 0:
            self.spec_accept_length = self._window_accept_tokens / self._window_forward_ct
            per_round = engine.active_draft_tokens - 1
            total = self._window_forward_ct * per_round
            self.spec_accept_rate = self._window_correct / total if total > 0 else 0.0
            self.spec_total_accept_tokens += self._window_accept_tokens
            self.spec_total_forward_ct += self._window_forward_ct
        self.num_retracted_reqs = self._window_retracted
        self._window_start = engine.now
        self._window_passes = self._window_generated = 0
        self._window_accept_tokens = self._window_forward_ct = self._window_correct = 0
        self._window_retracted = 0

    def on_idle(self, engine: Clock) -> None:
        """The engine ran dry: the throughput gauge reads 0 (SGLang's idle report); the decode-log
        window keeps counting from where it was, and ``last_gen_throughput`` keeps its value."""
        self.gen_throughput = 0.0

    def reset_on_flush(self) -> None:
        """``/flush_cache`` (``MetricsReporter.reset_metrics``): the pass count, the window's sums and
        the lifetime accept-length totals start again; the time of the last report does not."""
        self._window_passes = self._window_generated = 0
        self._window_accept_tokens = self._window_forward_ct = self._window_correct = 0
        self.reset_spec_totals()

    def reset_spec_totals(self) -> None:
        """The lifetime accept-length totals only (a new ``speculative_accept_threshold_*``)."""
        self.spec_total_accept_tokens = 0
        self.spec_total_forward_ct = 0

    @property
    def avg_spec_accept_length(self) -> float | None:
        if not self.config.speculative or self.spec_total_forward_ct <= 0:
            return None
        return self.spec_total_accept_tokens / self.spec_total_forward_ct
