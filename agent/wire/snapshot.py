"""One telemetry tick as the agent sends it and the console draws it.

The console renders a :class:`Snapshot` as it is: every number an operator sees is computed on the
agent, once, so that two consoles never disagree. Fields that a source could not provide are None
rather than zero, so "unknown" never reads as "idle".
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.wire.actions import ActionKind
from agent.wire.autopilot import AutopilotState

WIRE_VERSION = 1
"""Bumped on any incompatible change to the wire models; the console checks it on connect."""


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


EngineState = Literal[
    "stopped", "starting", "ready", "draining", "restarting", "crashed", "crash_loop", "unknown"
]


OutputCounter = Literal["decode", "generation"]
"""Which SGLang counter output tokens/s comes from: ``decode`` is ``realtime_tokens_total{mode="decode"}``
(the scheduler's tokens, advanced every ``--decode-log-interval`` decode batches); ``generation`` is
``generation_tokens_total`` (output tokens of finished requests, older SGLang)."""


class Throughput(_Wire):
    output_tok_s: float | None = Field(
        None, description="Output tokens/s over window_s (smoothed); 0 on an idle server"
    )
    output_tok_s_raw: float | None = Field(None, description="Output tokens/s over the last tick alone")
    prompt_tok_s: float | None = Field(None, description="Prompt (prefill) tokens/s over window_s")
    prompt_tok_s_raw: float | None = Field(None, description="Prompt tokens/s over the last tick alone")
    requests_per_s: float | None = Field(None, description="Finished requests/s over window_s")
    gauge_tok_s: float | None = Field(None, description="SGLang's own gen_throughput gauge")
    window_s: float | None = Field(
        None, description="Seconds the smoothed rates cover (less than the nominal window while it fills)"
    )
    raw_window_s: float | None = Field(None, description="Seconds the raw rates cover (the last tick)")
    output_counter: OutputCounter | None = Field(None, description="The counter output_tok_s comes from")


class Load(_Wire):
    running: int | None = None
    queued: int | None = None
    max_running_requests: int | None = None
    retractions_total: int | None = None


class Latency(_Wire):
    """Percentiles of the observations made within ``window_s`` (histogram deltas, interpolated inside
    a bucket). A ``*_above_top`` flag means the percentile fell in SGLang's ``+Inf`` bucket: the value
    is then the top bucket bound, a lower bound (show it as ``>30 s``). None: no observation in the
    window (or no histogram on the page)."""

    ttft_p50_s: float | None = None
    ttft_p99_s: float | None = None
    itl_p50_s: float | None = None
    itl_p99_s: float | None = None
    e2e_p50_s: float | None = None
    ttft_p50_above_top: bool = False
    ttft_p99_above_top: bool = False
    itl_p50_above_top: bool = False
    itl_p99_above_top: bool = False
    e2e_p50_above_top: bool = False
    ttft_count: int | None = Field(None, description="TTFT observations in the window")
    itl_count: int | None = Field(None, description="Inter-token latency observations in the window")
    e2e_count: int | None = Field(None, description="Finished requests in the window")
    window_s: float | None = Field(None, description="Seconds the percentiles cover")


SpecOffReason = Literal[
    "not_configured",  # the profile runs without a drafter
    "above_threshold",  # running batch >= the operator's threshold
    "adaptive_chose_zero",  # SGLang's EMA policy chose 0 steps
    "adaptive_unsupported",  # SGLang turned adaptive mode off (e.g. topk > 1)
    "engine_down",
    "unknown",
]


AcceptSource = Literal["counters", "gauge", "server_info"]
"""``counters``: Δgeneration_tokens / Δspec_verify_calls over the window; ``gauge``: SGLang's
``spec_accept_length`` (its last decode-log window); ``server_info``: ``avg_spec_accept_length``
(lifetime, when /metrics is off)."""


class Speculation(_Wire):
    configured: bool = False
    on: bool | None = None
    algorithm: str | None = None
    steps: int | None = Field(None, description="Active steps; 0 when not speculating")
    topk: int | None = None
    draft_tokens: int | None = None
    threshold: int | None = Field(None, description="Live threshold; None when unavailable")
    threshold_available: bool = False
    pinned_steps: int | None = None
    prebuilt_steps: list[int] = Field(default_factory=list)
    accept_length: float | None = Field(
        None, description="Tokens per verify incl. the bonus token, over accept_window_s (see accept_source)"
    )
    accept_window_s: float | None = Field(
        None, description="Seconds the accept length covers (None for SGLang's gauge or a lifetime value)"
    )
    accept_source: AcceptSource | None = Field(None, description="Where accept_length comes from")
    accept_rate: float | None = None
    accept_length_recent: float | None = Field(
        None,
        description="SGLang's spec_accept_length gauge: tokens per verify over its last decode-log window "
        "(--decode-log-interval batches, 0-step rounds counted as 1); the autopilot's per-step-count reading",
    )
    drafting_s_per_min: float | None = Field(
        None, description="Seconds of the last minute the engine drafted with requests running"
    )
    rejected_draft_share: float | None = Field(
        None, description="Share of the drafted tokens the target rejected over those seconds"
    )
    wasted_draft_s_per_min: float | None = Field(
        None,
        description="Seconds of that minute's decoding spent on rejected drafts (each round's time shared "
        "over the token positions it verified: an estimate)",
    )
    off_reason: SpecOffReason | None = None
    off_detail: str | None = Field(None, description="The reason in an operator's words")


class KvView(_Wire):
    pool_tokens: int | None = Field(None, description="max_total_num_tokens")
    used_tokens: int | None = None
    reserved_tokens: int | None = Field(None, description="Held ahead by decode over-allocation")
    free_tokens: int | None = None
    page_size: int | None = None
    reserve_per_request_on: int | None = Field(
        None, description="Tokens reserved per request per step, spec on"
    )
    reserve_per_request_off: int | None = Field(
        None, description="Same for a server launched without the drafter (no speculation: the baseline)"
    )
    speculation_share: float | None = Field(None, description="Fraction of the pool held for speculation")
    reserve_per_request_zero_step: int | None = Field(
        None,
        description="Same at 0 steps inside the speculative server ('off'): still the widest candidate's; "
        "None when the server never runs at 0 steps",
    )
    pool_tokens_without_drafter: int | None = Field(
        None, description="The pool a server launched without the drafter would have (estimate)"
    )
    draft_share_of_cell: float | None = Field(None, description="The draft's fraction of every KV cell")
    draft_weight_bytes: int | None = Field(
        None, description="The draft's weights on one rank (estimate), taken from the KV budget"
    )


class GpuProcess(_Wire):
    pid: int
    used_memory_bytes: int | None = None
    name: str | None = None


class Gpu(_Wire):
    index: int
    name: str | None = None
    uuid: str | None = None
    utilization_pct: float | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: float | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    throttle_reasons: list[str] = Field(default_factory=list)
    ecc_uncorrected: int | None = None
    processes: list[GpuProcess] = Field(default_factory=list)


GpuSource = Literal["nvml", "nvidia-smi", "fixture", "simulated", "none"]
"""``simulated``: a modelled host (the demo's ``--gpus sim``), never a measurement; ``detail`` says what."""


class Gpus(_Wire):
    source: GpuSource = "none"
    state: Literal["ok", "no_driver", "no_gpu", "error"] = "no_gpu"
    detail: str | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    devices: list[Gpu] = Field(default_factory=list)


Severity = Literal["info", "warning", "critical"]


class ActionOffer(_Wire):
    """An operator action a finding offers: a kind of ``agent.wire.actions.CATALOGUE`` and its value.
    The console plans it (plan → confirm → apply, audited) and names it with the catalogue's words."""

    kind: ActionKind
    value: int | bool | str | None = None


class Finding(_Wire):
    """A health finding: what is wrong, why it matters, what to do, and since when.

    ``value``/``limit``/``unit`` are the reading that raised it and the threshold it crossed (the
    profile's ``[health]`` section, where the rule has one), for a console that wants to show the
    number on its own; ``title`` already says it in words.
    """

    code: str
    severity: Severity
    title: str
    explanation: str
    action: str
    value: float | None = Field(None, description="The reading that raised it, in `unit`")
    limit: float | None = Field(None, description="The threshold it crossed, in `unit`")
    unit: str | None = Field(None, description="Unit of value and limit: 'requests', 's', '%'")
    since: float | None = Field(None, description="Unix time since which it has held without a break")
    offer: ActionOffer | None = Field(
        None, description="The action that does what `action` says, for a console to plan (None: none)"
    )


class Snapshot(_Wire):
    wire_version: int = WIRE_VERSION
    seq: int = Field(description="Monotonic per agent run; the stream's catch-up cursor")
    time: float = Field(description="Unix time of the tick, seconds")
    profile_name: str | None = None
    production: bool = False
    engine_kind: Literal["sglang", "sim"] | None = None
    engine_state: EngineState = "unknown"
    engine_pid: int | None = None
    metrics_source: Literal["metrics", "server_info", "none"] = "none"
    throughput: Throughput = Throughput()
    load: Load = Load()
    latency: Latency = Latency()
    speculation: Speculation = Speculation()
    kv: KvView = KvView()
    gpus: Gpus = Gpus()
    findings: list[Finding] = Field(default_factory=list)
    autopilot: AutopilotState | None = Field(
        None, description="The speculation autopilot's state; None from an agent without one"
    )
