"""``/metrics``: the engine's state and counters in 0.5.23's Prometheus names, types and labels.

Built at scrape time by a prometheus-client collector (so the text format is the library's, not
ours). Scheduler metrics carry ``model_name, engine_type, tp_rank, pp_rank, moe_ep_rank``;
tokenizer metrics ``model_name, engine_type``, plus ``is_streaming`` where 0.5.23 has it.

One deliberate difference: state gauges (running/queued requests, KV use, the active
speculative tier) are read live at every scrape, where SGLang refreshes them every
``--decode-log-interval`` decode batches; window gauges (``gen_throughput``,
``spec_accept_length``/``rate``) keep SGLang's window semantics.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from agent.sglang import metrics as names
from agent.sim.engine import Engine
from agent.sim.metrics_extra import extra_families
from agent.sim.stats import Histogram

PREFIX = names.PREFIX
SCHEDULER_LABELS = ("model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank")
TOKENIZER_LABELS = ("model_name", "engine_type")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _gauge(
    name: str, doc: str, labels: tuple[str, ...], values: list[str], value: float
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(PREFIX + name, doc, labels=list(labels))
    family.add_metric(values, value)
    return family


def _histogram(
    name: str, doc: str, labels: tuple[str, ...], series: Mapping[tuple[str, ...], Histogram]
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(PREFIX + name, doc, labels=list(labels))
    for values, hist in series.items():
        buckets: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip(hist.bounds, hist.counts, strict=False):
            running += count
            buckets.append((_le(bound), running))
        buckets.append(("+Inf", running + hist.counts[-1]))
        family.add_metric(list(values), buckets, hist.total)
    return family


def _le(bound: float) -> str:
    return repr(float(bound))


class SimCollector(Collector):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def collect(self) -> Iterator[Metric]:
        eng = self.engine
        cfg = eng.config
        st = eng.stats
        s_labels = SCHEDULER_LABELS
        s_vals = [cfg.served_model_name, "unified", "0", "0", "0"]
        t_labels = TOKENIZER_LABELS
        t_vals = [cfg.served_model_name, "unified"]
        pool = cfg.pool_tokens
        used = eng.kv_used

        yield _gauge(
            names.NUM_RUNNING_REQS, "The number of running requests.", s_labels, s_vals, len(eng.running)
        )
        yield _gauge(
            names.NUM_QUEUE_REQS,
            "The number of requests in the waiting queue.",
            s_labels,
            s_vals,
            len(eng.waiting) + (1 if eng.chunked is not None else 0),
        )
        yield _gauge(
            names.GEN_THROUGHPUT, "The generation throughput (token/s).", s_labels, s_vals, st.gen_throughput
        )
        yield _gauge(names.CACHE_HIT_RATE, "The prefix cache hit rate.", s_labels, s_vals, 0.0)
        yield _gauge(
            "decode_sum_seq_lens",
            "The sum of all sequence lengths in decode.",
            s_labels,
            s_vals,
            sum(r.committed for r in eng.running),
        )
        yield _gauge(names.TOKEN_USAGE, "The token usage.", s_labels, s_vals, used / pool if pool else 0.0)
        yield _gauge(
            "full_token_usage",
            "The token usage of the full pool.",
            s_labels,
            s_vals,
            used / pool if pool else 0.0,
        )
        yield _gauge(names.NUM_USED_TOKENS, "The number of used tokens.", s_labels, s_vals, used)
        yield _gauge(
            names.KV_AVAILABLE_TOKENS,
            "Number of free token slots in the KV cache pool.",
            s_labels,
            s_vals,
            pool - used,
        )
        yield _gauge(
            names.KV_EVICTABLE_TOKENS,
            "Number of evictable token slots in the KV cache pool.",
            s_labels,
            s_vals,
            0,
        )
        yield _gauge(
            names.KV_USED_TOKENS,
            "Number of actively used token slots in the KV cache pool.",
            s_labels,
            s_vals,
            used,
        )
        yield _gauge(
            names.MAX_TOTAL_NUM_TOKENS,
            "Maximum total number of tokens in the KV cache pool.",
            s_labels,
            s_vals,
            pool,
        )
        yield _gauge(
            names.PAGE_SIZE, "The page size of the KV cache.", s_labels, s_vals, cfg.profile.server.page_size
        )
        yield _gauge(
            names.CONTEXT_LEN, "The context length of the model.", s_labels, s_vals, cfg.context_length
        )
        yield _gauge(names.NEW_TOKEN_RATIO, "The new token ratio.", s_labels, s_vals, eng.new_token_ratio)
        yield _gauge(
            names.SPEC_ACCEPT_LENGTH,
            "Mean acceptance length of speculative decoding (accepted drafts + bonus token per forward).",
            s_labels,
            s_vals,
            st.spec_accept_length,
        )
        yield _gauge(
            names.SPEC_ACCEPT_RATE,
            "Speculative acceptance rate (`accepted drafts / proposed drafts` in batch).",
            s_labels,
            s_vals,
            st.spec_accept_rate,
        )
        yield _gauge(
            names.SPEC_NUM_STEPS,
            "Currently active speculative_num_steps.",
            s_labels,
            s_vals,
            eng.active_steps if cfg.speculative else 0,
        )
        yield _gauge(
            names.SPEC_NUM_DRAFT_TOKENS,
            "Currently active speculative_num_draft_tokens (decouples from steps under topk>1).",
            s_labels,
            s_vals,
            eng.active_draft_tokens if cfg.speculative else 0,
        )
        yield _gauge(
            names.NUM_RETRACTED_REQS,
            "The number of retracted requests.",
            (*s_labels, "pid"),
            [*s_vals, str(os.getpid())],
            st.num_retracted_reqs,
        )
        yield from extra_families(eng, s_labels, s_vals)
        yield _gauge(
            names.IS_CUDA_GRAPH, "Whether the batch is using CUDA graph.", s_labels, s_vals, st.is_cuda_graph
        )

        retracted = CounterMetricFamily(
            PREFIX + names.NUM_RETRACTED_REQUESTS_TOTAL,
            "Total number of retracted requests.",
            labels=list(s_labels),
        )
        retracted.add_metric(s_vals, st.retracted_requests)
        yield retracted
        for suffix, value in (("input", st.retracted_input_tokens), ("output", st.retracted_output_tokens)):
            family = CounterMetricFamily(
                f"{PREFIX}num_retracted_{suffix}_tokens_total",
                f"Total number of retracted {suffix} tokens.",
                labels=list(s_labels),
            )
            family.add_metric(s_vals, value)
            yield family
        graph = CounterMetricFamily(
            PREFIX + names.CUDA_GRAPH_PASSES_TOTAL,
            "Total number of forward passes categorized by CUDA graph.",
            labels=[*s_labels, "mode"],
        )
        for mode, count in sorted(st.graph_passes.items()):
            graph.add_metric([*s_vals, mode], count)
        yield graph
        realtime = CounterMetricFamily(
            PREFIX + "realtime_tokens_total",
            "Total number of tokens processed (updated on each log interval). "
            "mode: prefill_compute, prefill_cache, decode.",
            labels=[*s_labels, "mode"],
        )
        for mode, count in sorted(st.realtime_tokens.items()):
            realtime.add_metric([*s_vals, mode], count)
        yield realtime
        yield _histogram(
            names.QUEUE_TIME_SECONDS,
            "Histogram of queueing time in seconds.",
            s_labels,
            {tuple(s_vals): st.queue_time},
        )

        # Tokenizer side
        for name, doc, series in (
            (names.PROMPT_TOKENS_TOTAL, "Number of prefill tokens processed.", st.prompt_tokens),
            (names.GENERATION_TOKENS_TOTAL, "Number of generation tokens processed.", st.generation_tokens),
            (names.NUM_REQUESTS_TOTAL, "Number of requests processed.", st.requests),
        ):
            family = CounterMetricFamily(PREFIX + name, doc, labels=[*t_labels, "is_streaming"])
            for streaming, value in sorted(series.items()):
                family.add_metric([*t_vals, streaming], value)
            yield family
        aborted = CounterMetricFamily(
            PREFIX + names.NUM_ABORTED_REQUESTS_TOTAL, "Number of requests aborted.", labels=list(t_labels)
        )
        aborted.add_metric(t_vals, st.aborted)
        yield aborted
        verify = CounterMetricFamily(
            PREFIX + names.SPEC_VERIFY_CALLS_TOTAL,
            "Number of speculative decoding verification calls.",
            labels=list(t_labels),
        )
        if st.spec_verify_calls > 0:
            verify.add_metric(t_vals, st.spec_verify_calls)
        yield verify
        yield _histogram(
            names.TIME_TO_FIRST_TOKEN_SECONDS,
            "Histogram of time to first token in seconds.",
            (*t_labels, "is_streaming"),
            {(*t_vals, k): h for k, h in sorted(st.ttft.items())},
        )
        yield _histogram(
            names.INTER_TOKEN_LATENCY_SECONDS,
            "Histogram of inter-token latency in seconds.",
            t_labels,
            {tuple(t_vals): st.itl},
        )
        yield _histogram(
            names.E2E_REQUEST_LATENCY_SECONDS,
            "Histogram of End-to-end request latency in seconds",
            (*t_labels, "is_streaming"),
            {(*t_vals, k): h for k, h in sorted(st.e2e.items())},
        )


def registry_for(engine: Engine) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SimCollector(engine))
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
