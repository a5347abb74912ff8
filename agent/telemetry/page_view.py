"""What one /metrics page tells the agent, field by field: the model behind ``agent metrics``.

A single page has no rates (those need two readings a tick apart), so throughput here is SGLang's
own gauge and latency percentiles are over the server's lifetime; the counters are shown as totals.
Each field names the Snapshot field it feeds and the metric it came from, so an operator checking a
page pasted into a ticket sees at once what an older SGLang did not export.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.telemetry.scrape import COUNTERS, GAUGES, HISTOGRAMS, MetricsReading


@dataclass(frozen=True)
class PageField:
    field: str
    """The Snapshot field it feeds (``load.running``), or ``counter.*`` for totals."""
    value: float | int | None
    source: str
    """The metric it was read from, with the page's prefix; ``-`` when the page lacks it."""


_GAUGE_FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("throughput.gauge_tok_s", "gen_throughput", False),
    ("load.running", "running", True),
    ("load.queued", "queued", True),
    ("speculation.steps", "spec_num_steps", True),
    ("speculation.draft_tokens", "spec_num_draft_tokens", True),
    ("speculation.accept_length", "spec_accept_length", False),
    ("speculation.accept_rate", "spec_accept_rate", False),
    ("kv.pool_tokens", "max_total_num_tokens", True),
    ("kv.used_tokens", "kv_used_tokens", True),
    ("kv.available_tokens", "kv_available_tokens", True),
    ("kv.evictable_tokens", "kv_evictable_tokens", True),
    ("kv.token_usage", "token_usage", False),
    ("kv.page_size", "page_size", True),
    ("server.context_len", "context_len", True),
    ("server.cache_hit_rate", "cache_hit_rate", False),
    ("server.is_cuda_graph", "is_cuda_graph", True),
)
_COUNTER_FIELDS: tuple[tuple[str, str], ...] = (
    ("load.retractions_total", "retracted_requests"),
    ("counter.generation_tokens", "generation_tokens"),
    ("counter.decode_tokens", "decode_tokens"),
    ("counter.prefill_tokens", "prefill_tokens"),
    ("counter.prompt_tokens", "prompt_tokens"),
    ("counter.requests", "requests"),
    ("counter.aborted_requests", "aborted_requests"),
    ("counter.spec_verify_calls", "spec_verify_calls"),
    ("counter.decode_passes_no_graph", "decode_passes_no_graph"),
)
_LATENCY_FIELDS: tuple[tuple[str, str, float], ...] = (
    ("latency.ttft_p50_s", "ttft", 0.5),
    ("latency.ttft_p99_s", "ttft", 0.99),
    ("latency.itl_p50_s", "itl", 0.5),
    ("latency.itl_p99_s", "itl", 0.99),
    ("latency.e2e_p50_s", "e2e", 0.5),
)


def _metric(reading: MetricsReading, base: str) -> str:
    return f"{reading.prefix or 'sglang:'}{base}"


def page_fields(reading: MetricsReading) -> list[PageField]:
    out: list[PageField] = []
    for field, logical, integer in _GAUGE_FIELDS:
        value: float | int | None = reading.gauge_int(logical) if integer else reading.gauge(logical)
        names = GAUGES[logical][0]
        present = next((n for n in names if n in reading.families), None)
        out.append(PageField(field, value, _metric(reading, present) if present else "-"))
    for field, logical in _COUNTER_FIELDS:
        total = reading.counter(logical)
        sample, where = COUNTERS[logical]
        label = "".join(f"{{{k}={'|'.join(sorted(v))}}}" for k, v in where.items())
        out.append(
            PageField(
                field,
                None if total is None else int(total),
                _metric(reading, sample) + label if total is not None else "-",
            )
        )
    for field, logical, q in _LATENCY_FIELDS:
        hist = reading.histograms.get(logical)
        value = None if hist is None else hist.quantile(q)
        source = "-"
        if hist is not None:
            name = next((n for n in HISTOGRAMS[logical] if n in reading.families), HISTOGRAMS[logical][0])
            source = f"{_metric(reading, name)} (lifetime)"
        out.append(PageField(field, None if value is None else round(value, 4), source))
    return out


def page_summary(reading: MetricsReading) -> dict[str, Any]:
    """The JSON form of ``agent metrics``."""
    fields = page_fields(reading)
    return {
        "prefix": reading.prefix,
        "fields": {f.field: f.value for f in fields},
        "sources": {f.field: f.source for f in fields if f.source != "-"},
        "missing": reading.missing,
        "skipped_lines": reading.skipped_lines,
    }
