"""What one /metrics page tells the agent, field by field: the model behind ``agent metrics``.

A single page has no rates (those need two readings a tick apart), so throughput here is SGLang's
own gauge, the accept length SGLang's gauge, and latency percentiles are over the server's
lifetime; counters are shown as totals. Each field names the Snapshot field it feeds and the metric
it came from (an older name, or a fallback such as ``num_used_tokens``, shows as such), so an
operator checking a page pasted into a ticket sees at once what an older SGLang did not export.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

from agent.sglang import metrics as m
from agent.sglang.metric_fields import COUNTERS, GAUGES
from agent.sglang.reading import MetricsReading
from agent.telemetry.derive import used_tokens


@dataclass(frozen=True)
class PageField:
    field: str
    """The Snapshot field it feeds (``load.running``), or ``counter.*`` for totals."""
    value: float | int | None
    source: str
    """The metric it was read from, with the page's prefix; ``-`` when the page lacks it."""
    lower_bound: bool = False
    """A percentile above the top bucket: the value is the top bound, the real one is higher."""


_GAUGE_FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("throughput.gauge_tok_s", "gen_throughput"),
    ("load.running", "running"),
    ("load.queued", "queued"),
    ("speculation.steps", "spec_num_steps"),
    ("speculation.draft_tokens", "spec_num_draft_tokens"),
    ("speculation.accept_length", "spec_accept_length"),
    ("speculation.accept_rate", "spec_accept_rate"),
    ("kv.pool_tokens", "max_total_num_tokens"),
    ("kv.available_tokens", "kv_available_tokens"),
    ("kv.evictable_tokens", "kv_evictable_tokens"),
    ("kv.token_usage", "token_usage"),
    ("kv.page_size", "page_size"),
    ("server.context_len", "context_len"),
    ("server.cache_hit_rate", "cache_hit_rate"),
    ("server.is_cuda_graph", "is_cuda_graph"),
)
_COUNTER_FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("load.retractions_total", "retracted_requests"),
    ("counter.generation_tokens", "generation_tokens"),
    ("counter.decode_tokens", "decode_tokens"),
    ("counter.prefill_tokens", "prefill_tokens"),
    ("counter.prompt_tokens", "prompt_tokens"),
    ("counter.requests", "requests"),
    ("counter.aborted_requests", "aborted_requests"),
    ("counter.spec_verify_calls", "spec_verify_calls"),
    ("counter.decode_passes_no_graph", "decode_passes_no_graph"),
    ("counter.decode_passes_graph", "decode_passes_graph"),
)
_LATENCY_FIELDS: Final[tuple[tuple[str, str, float], ...]] = (
    ("latency.ttft_p50_s", "ttft", 0.5),
    ("latency.ttft_p99_s", "ttft", 0.99),
    ("latency.itl_p50_s", "itl", 0.5),
    ("latency.itl_p99_s", "itl", 0.99),
    ("latency.e2e_p50_s", "e2e", 0.5),
)


def _metric(reading: MetricsReading, name: str) -> str:
    return f"{reading.prefix or m.PREFIX}{name}"


def _gauge_source(reading: MetricsReading, logical: str) -> str:
    name = reading.sources.get(logical)
    if name is None or logical not in reading.gauges:
        return "-"
    older = "" if name == GAUGES[logical].names[0] else " (older name)"
    return _metric(reading, name) + older


def _number(value: float | None, integer: bool) -> float | int | None:
    if value is None or not math.isfinite(value):
        return None
    return int(value) if integer else value


def page_fields(reading: MetricsReading) -> list[PageField]:
    """Every field the agent takes from this page, with its value and where it came from."""
    out: list[PageField] = []
    for name, logical in _GAUGE_FIELDS:
        out.append(
            PageField(
                name,
                _number(reading.gauge(logical), GAUGES[logical].integer),
                _gauge_source(reading, logical),
            )
        )
    pool = reading.gauge_int("max_total_num_tokens")
    used, used_from = used_tokens(reading, pool)
    used_source = "-"
    if used_from is not None:
        metric = _gauge_source(reading, used_from)
        used_source = {
            "kv_used_tokens": metric,
            "num_used_tokens": f"{metric} (fallback: no kv_used_tokens)",
            "token_usage": f"{metric} x kv.pool_tokens (fallback: no used-token gauge)",
        }[used_from]
    after_pool = next(i for i, f in enumerate(out) if f.field == "kv.pool_tokens") + 1
    out.insert(after_pool, PageField("kv.used_tokens", used, used_source))
    for name, logical in _COUNTER_FIELDS:
        total = reading.counter(logical)
        spec = COUNTERS[logical]
        label = "".join(f"{{{k}={'|'.join(sorted(v))}}}" for k, v in spec.where.items())
        source = _metric(reading, spec.name) + label if total is not None else "-"
        out.append(PageField(name, _number(total, True), source))
    for name, logical, q in _LATENCY_FIELDS:
        hist = reading.histograms.get(logical)
        quantile = None if hist is None else hist.quantile(q)
        source = "-"
        if hist is not None:
            source = f"{_metric(reading, reading.sources.get(logical, logical))} (lifetime)"
            if not hist.complete:
                source += " (incomplete: no quantiles)"
        value = None if quantile is None else round(quantile.value, 4)
        out.append(PageField(name, value, source, quantile is not None and quantile.above_top))
    return out


def page_summary(reading: MetricsReading) -> dict[str, Any]:
    """The JSON form of ``agent metrics`` (finite numbers only: JSON has no Infinity or NaN)."""
    fields = page_fields(reading)
    return {
        "prefix": reading.prefix,
        "fields": {f.field: f.value for f in fields},
        "sources": {f.field: f.source for f in fields if f.source != "-"},
        "lower_bounds": [f.field for f in fields if f.lower_bound],
        "missing": reading.missing,
        "problems": list(reading.problems),
        "skipped_lines": reading.skipped_lines,
    }
