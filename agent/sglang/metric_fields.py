"""What the agent reads from a ``/metrics`` page, field by field: names (with older aliases), how
data-parallel ranks combine, and which values make sense.

A *field* is the agent's name for one thing it reads (``running``, ``decode_tokens``, ``ttft``);
each lists the metric names that carry it, newest first, so that a page from an older SGLang (or
``/v1/loads?format=prometheus``) reads the same. ``agent.sglang.reading`` applies the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from agent.sglang import metrics as m

Agg = Literal["sum", "max", "mean"]
"""How one field combines over data-parallel ranks (each DP rank runs its own scheduler)."""

MAX_COUNT: Final = float(2**53)
"""Above this a count is not an exact integer in a float: not a real reading."""


@dataclass(frozen=True)
class GaugeField:
    names: tuple[str, ...]
    """Metric names without prefix, newest first."""
    agg: Agg
    low: float = 0.0
    high: float = MAX_COUNT
    """Values outside ``[low, high]`` are not believed: the field is unknown for that page."""
    integer: bool = True
    percent_or_fraction: bool = False
    """``cache_hit_rate``: some servers write a percentage; a value above 1 is read as one."""


@dataclass(frozen=True)
class CounterField:
    name: str
    """The sample name without prefix (with ``_total``)."""
    where: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Label filter: only series whose label is one of these values count."""


GAUGES: Final[dict[str, GaugeField]] = {
    "gen_throughput": GaugeField((m.GEN_THROUGHPUT,), "sum", high=1e9, integer=False),
    "running": GaugeField((m.NUM_RUNNING_REQS, m.OLD_NUM_REQUESTS_RUNNING), "sum"),
    "queued": GaugeField(
        (m.NUM_QUEUE_REQS, m.LOADS_NUM_WAITING_REQS, m.OLD_NUM_REQUESTS_WAITING, m.OLD_QUEUE_REQ), "sum"
    ),
    "token_usage": GaugeField((m.TOKEN_USAGE,), "max", high=1.5, integer=False),
    "num_used_tokens": GaugeField((m.NUM_USED_TOKENS,), "sum"),
    "kv_used_tokens": GaugeField((m.KV_USED_TOKENS,), "sum"),
    "kv_available_tokens": GaugeField((m.KV_AVAILABLE_TOKENS,), "sum"),
    "kv_evictable_tokens": GaugeField((m.KV_EVICTABLE_TOKENS,), "sum"),
    "max_total_num_tokens": GaugeField((m.MAX_TOTAL_NUM_TOKENS,), "sum"),
    "page_size": GaugeField((m.PAGE_SIZE,), "max", low=1.0),
    "context_len": GaugeField((m.CONTEXT_LEN,), "max"),
    "cache_hit_rate": GaugeField(
        (m.CACHE_HIT_RATE,), "mean", high=100.0, integer=False, percent_or_fraction=True
    ),
    "spec_accept_length": GaugeField((m.SPEC_ACCEPT_LENGTH,), "mean", high=1000.0, integer=False),
    "spec_accept_rate": GaugeField((m.SPEC_ACCEPT_RATE,), "mean", high=1.5, integer=False),
    "spec_num_steps": GaugeField((m.SPEC_NUM_STEPS,), "max", high=1024.0),
    "spec_num_draft_tokens": GaugeField((m.SPEC_NUM_DRAFT_TOKENS,), "max", high=65536.0),
    "retracted_reqs": GaugeField((m.NUM_RETRACTED_REQS,), "sum"),
    "is_cuda_graph": GaugeField((m.IS_CUDA_GRAPH,), "max", high=1.0),
}

COUNTERS: Final[dict[str, CounterField]] = {
    "generation_tokens": CounterField(m.GENERATION_TOKENS_TOTAL),
    "prompt_tokens": CounterField(m.PROMPT_TOKENS_TOTAL),
    "decode_tokens": CounterField(m.REALTIME_TOKENS_TOTAL, {m.MODE_LABEL: frozenset({"decode"})}),
    "prefill_tokens": CounterField(
        m.REALTIME_TOKENS_TOTAL, {m.MODE_LABEL: frozenset({"prefill_compute", "prefill_cache"})}
    ),
    "requests": CounterField(m.NUM_REQUESTS_TOTAL),
    "aborted_requests": CounterField(m.NUM_ABORTED_REQUESTS_TOTAL),
    "retracted_requests": CounterField(m.NUM_RETRACTED_REQUESTS_TOTAL),
    "spec_verify_calls": CounterField(m.SPEC_VERIFY_CALLS_TOTAL),
    "decode_passes_no_graph": CounterField(
        m.CUDA_GRAPH_PASSES_TOTAL, {m.MODE_LABEL: frozenset({"decode_none"})}
    ),
    "decode_passes_graph": CounterField(
        m.CUDA_GRAPH_PASSES_TOTAL, {m.MODE_LABEL: frozenset({"decode_cuda_graph"})}
    ),
}

HISTOGRAMS: Final[dict[str, tuple[str, ...]]] = {
    "ttft": (m.TIME_TO_FIRST_TOKEN_SECONDS,),
    "itl": (m.INTER_TOKEN_LATENCY_SECONDS, m.OLD_TIME_PER_OUTPUT_TOKEN_SECONDS, m.OLD_TIME_PER_OUTPUT_TOKEN),
    "e2e": (m.E2E_REQUEST_LATENCY_SECONDS,),
}

FIELDS: Final = (*GAUGES, *COUNTERS, *HISTOGRAMS)
"""Every field, in the order ``agent metrics`` lists what a page lacks."""

HISTOGRAM_SUFFIXES: Final = ("_bucket", "_count", "_sum")


def _sample_names() -> frozenset[str]:
    names: set[str] = set()
    for gauge in GAUGES.values():
        names.update(gauge.names)
    names.update(counter.name for counter in COUNTERS.values())
    for hist_names in HISTOGRAMS.values():
        names.update(f"{name}{suffix}" for name in hist_names for suffix in HISTOGRAM_SUFFIXES)
    return frozenset(names)


SAMPLE_NAMES: Final = _sample_names()
"""Every sample name (without prefix) the reader looks at; lines of other families are skipped."""
