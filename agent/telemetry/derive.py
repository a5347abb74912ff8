"""The derivation room of telemetry: what one tick's reading and the window mean for an operator.

Pure functions of the reading (``agent.sglang.reading``), the ``/server_info`` view
(``agent.sglang.info_view``), the counter window (``window``) and the profile: no I/O, no clock, so
each is tested by building its inputs. Every number says the window it covers:

* throughput is smoothed over ``Windows.rate_s`` (``window_s`` says the span really covered), and
  the raw rate over the last tick alone is beside it (``*_raw``, ``raw_window_s``): SGLang advances
  its real-time token counter every ``--decode-log-interval`` decode batches, so per-tick rates
  jump even under steady load;
* TTFT/ITL/E2E percentiles come from the histogram buckets filled within ``Windows.latency_s``,
  interpolated inside a bucket; a percentile in the ``+Inf`` bucket is the top bound flagged
  ``*_above_top`` (a lower bound, shown as ``>30 s``);
* the accept length is generated tokens over verify calls within ``Windows.rate_s``
  (``derive_spec``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from agent.profile.schema import Profile
from agent.sglang import kv
from agent.sglang.info_view import ServerInfo
from agent.sglang.reading import MetricsReading
from agent.sglang.support import adaptive_unsupported_reason
from agent.telemetry.findings import HealthInputs
from agent.telemetry.window import CounterWindow, Windowed
from agent.wire import Gpus, KvView, Latency, Load, Speculation, Throughput


@dataclass(frozen=True)
class Windows:
    """The windows a Snapshot's numbers are computed over, in seconds."""

    rate_s: float = 10.0
    """Throughput and accept length."""
    latency_s: float = 30.0
    """TTFT/ITL/E2E percentiles."""
    events_s: float = 60.0
    """Retractions and decode passes without a CUDA graph, for the health findings."""

    @property
    def longest_s(self) -> float:
        """How long a request weighs on some number after it ends (a benchmark's, on the findings)."""
        return max(self.rate_s, self.latency_s, self.events_s)

    @property
    def keep_s(self) -> float:
        return self.longest_s * 1.5


@dataclass(frozen=True)
class ProfileFacts:
    """What the derivation needs from the profile, computed once per profile (not every tick)."""

    profile: Profile
    shape: kv.SpecShape | None
    """The speculation shape SGLang reserves KV for; None without speculation."""
    adaptive_reason: str | None
    """Why SGLang would turn adaptive speculation off for this profile; None when it would not."""
    _drafter: dict[tuple[int, int | None], dict[str, Any]]
    """``drafter_fields`` by (page size, pool): the pool changes once per engine start, not per tick."""

    @classmethod
    def of(cls, profile: Profile) -> ProfileFacts:
        try:
            shape = kv.spec_shape_for_profile(profile)
        except ValueError:  # e.g. a threshold of 1, which check_profile reports on its own
            shape = None
        reason = adaptive_unsupported_reason(profile) if profile.speculative else None
        return cls(profile, shape, reason, {})

    def drafter_fields(self, page_size: int, pool: int | None) -> dict[str, Any]:
        """``kv.view_fields`` ("off" and no-drafter reserves), computed once per page size and pool."""
        key = (page_size, pool)
        found = self._drafter.get(key)
        if found is None:
            found = self._drafter[key] = kv.view_fields(self.profile, page_size, pool)
        return found


def _value(w: Windowed | None, digits: int = 1) -> float | None:
    return None if w is None else round(w.value, digits)


def _span(*found: Windowed | None) -> float | None:
    spans = [w.span_s for w in found if w is not None]
    return round(max(spans), 3) if spans else None


def throughput(r: MetricsReading | None, window: CounterWindow, windows: Windows) -> Throughput:
    if r is None:
        return Throughput()
    # SGLang's real-time counters when the page has them (0.5.23); the per-finished-request
    # tokenizer counters otherwise (older versions), which move in bursts as requests end.
    output = "decode_tokens" if "decode_tokens" in r.counters else "generation_tokens"
    prompt = "prefill_tokens" if "prefill_tokens" in r.counters else "prompt_tokens"
    out, out_raw = window.rate(output, windows.rate_s), window.last_rate(output)
    inp, inp_raw = window.rate(prompt, windows.rate_s), window.last_rate(prompt)
    requests = window.rate("requests", windows.rate_s)
    counted = output in r.counters
    return Throughput(
        output_tok_s=_value(out),
        output_tok_s_raw=_value(out_raw),
        prompt_tok_s=_value(inp),
        prompt_tok_s_raw=_value(inp_raw),
        requests_per_s=_value(requests, 3),
        gauge_tok_s=r.gauge("gen_throughput"),
        window_s=_span(out, inp, requests),
        raw_window_s=_span(out_raw, inp_raw),
        output_counter=("decode" if output == "decode_tokens" else "generation") if counted else None,
    )


def load(r: MetricsReading | None, info: ServerInfo | None, profile: Profile) -> Load:
    max_running = (info.max_running_total if info else None) or profile.server.max_running_requests
    if r is None:
        return Load(max_running_requests=max_running)
    retracted = r.counter("retracted_requests")
    return Load(
        running=r.gauge_int("running"),
        queued=r.gauge_int("queued"),
        max_running_requests=max_running,
        retractions_total=None if retracted is None else int(retracted),
    )


LATENCY_FIELDS: Final = (
    ("ttft", 0.5, "ttft_p50"),
    ("ttft", 0.99, "ttft_p99"),
    ("itl", 0.5, "itl_p50"),
    ("itl", 0.99, "itl_p99"),
    ("e2e", 0.5, "e2e_p50"),
)


def latency(window: CounterWindow, windows: Windows) -> Latency:
    recent = {name: window.histogram(name, windows.latency_s) for name in ("ttft", "itl", "e2e")}
    values: dict[str, object] = {}
    for name, q, field in LATENCY_FIELDS:
        found = recent[name]
        quantile = None if found is None else found.histogram.quantile(q)
        values[f"{field}_s"] = None if quantile is None else round(quantile.value, 4)
        values[f"{field}_above_top"] = quantile is not None and quantile.above_top
    for name, found in recent.items():
        values[f"{name}_count"] = None if found is None else int(found.histogram.observations)
    spans = [f.span_s for f in recent.values() if f is not None]
    values["window_s"] = round(max(spans), 3) if spans else None
    return Latency.model_validate(values)


def used_tokens(r: MetricsReading, pool: int | None) -> tuple[int | None, str | None]:
    """KV slots in use, and the field it came from: ``kv_used_tokens`` (0.5.23), else
    ``num_used_tokens``, else ``token_usage`` × the pool."""
    used = r.gauge_int("kv_used_tokens")
    if used is not None:
        return used, "kv_used_tokens"
    used = r.gauge_int("num_used_tokens")
    if used is not None:
        return used, "num_used_tokens"
    usage = r.gauge("token_usage")
    if usage is not None and pool:
        return int(usage * pool), "token_usage"
    return None, None


def kv_view(
    r: MetricsReading | None, info: ServerInfo | None, running: int | None, spec_on: bool, facts: ProfileFacts
) -> KvView:
    profile = facts.profile
    page = (r.gauge_int("page_size") if r else None) or (info.page_size if info else None)
    page = page or profile.server.page_size
    shape = facts.shape if spec_on else None
    reserve_off = kv.reserve_per_decode(None, page)
    reserve_on = kv.reserve_per_decode(shape, page) if shape is not None else None
    pool = (r.gauge_int("max_total_num_tokens") if r else None) or (info.pool_tokens if info else None)
    pool = pool or profile.server.max_total_tokens
    drafter = facts.drafter_fields(page, pool)
    if r is None:
        return KvView(
            pool_tokens=pool,
            page_size=page,
            reserve_per_request_on=reserve_on,
            reserve_per_request_off=reserve_off,
            **drafter,
        )
    used, _ = used_tokens(r, pool)
    available, evictable = r.gauge_int("kv_available_tokens"), r.gauge_int("kv_evictable_tokens")
    if available is not None:
        free: int | None = available + (evictable or 0)
    else:
        free = pool - used if pool is not None and used is not None else None
    per_request = reserve_on if reserve_on is not None else reserve_off
    share = None
    if reserve_on is not None and running is not None and pool:
        share = round(running * (reserve_on - reserve_off) / pool, 4)
    return KvView(
        pool_tokens=pool,
        used_tokens=used,
        reserved_tokens=running * per_request if running is not None else None,
        free_tokens=free,
        page_size=page,
        reserve_per_request_on=reserve_on,
        reserve_per_request_off=reserve_off,
        speculation_share=share,
        **drafter,
    )


def _delta(window: CounterWindow, name: str, seconds: float) -> float | None:
    found = window.delta(name, seconds)
    return None if found is None else found.value


def health_inputs(
    spec: Speculation,
    load_view: Load,
    kv: KvView,
    info: ServerInfo | None,
    window: CounterWindow,
    windows: Windows,
    facts: ProfileFacts,
    accept_lengths: tuple[float, ...],
    gpus: Gpus,
) -> HealthInputs:
    profile = facts.profile
    graph_max = (info.largest_decode_graph if info else None) or profile.server.cuda_graph_max_bs
    return HealthInputs(
        speculating=bool(spec.on),
        algorithm=spec.algorithm,
        draft_path=profile.model.draft_path,
        accept_lengths=accept_lengths,
        topk=spec.topk,
        running=load_view.running,
        queued=load_view.queued,
        max_running_requests=load_view.max_running_requests,
        cuda_graph_max_bs=graph_max,
        decode_passes_no_graph_delta=_delta(window, "decode_passes_no_graph", windows.events_s),
        adaptive_requested=profile.speculative and profile.speculation.adaptive,
        adaptive_resolved=info.adaptive if info else None,
        adaptive_off_reason=facts.adaptive_reason,
        speculation_share=kv.speculation_share,
        reserve_on=kv.reserve_per_request_on,
        reserve_off=kv.reserve_per_request_off,
        retractions_delta=_delta(window, "retracted_requests", windows.events_s),
        retraction_window_s=windows.events_s,
        gpus=gpus,
    )
