"""``/server_info`` as a typed view: the fields k25console uses, parsed once per answer.

Everything outside ``agent/sglang`` reads these attributes, never the raw keys. The view is where
SGLang's version differences are handled: ``cuda_graph_max_bs`` (older) and
``cuda_graph_max_bs_decode`` (0.5.23) are one field; ``memory_usage.graph`` is a number (older: the
total GB) or a dict of GB per phase (0.5.23); ``speculative_adaptive`` is read from the resolved
args or from ``internal_states[0]``. A value of the wrong type is unknown (None), never an error:
an odd answer costs a field, not a tick.

``internal_states`` holds one dict per data-parallel rank, each from that rank's TP rank 0, with
runtime overrides applied (so its speculation fields show the live adaptive tier), plus the live
read-back of k25console's patch (``agent.sglang.live_control``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from agent.sglang import server_info as si
from agent.sglang.kv import SpecShape
from agent.sglang.live_control import (
    READBACK_FIELD,
    READBACK_OF,
    RELEASE_PINNED_STEPS,
    ZERO_STEP_READBACK_FIELD,
)
from agent.sglang.readback_values import as_bool as _bool
from agent.sglang.readback_values import as_float as _float
from agent.sglang.readback_values import as_int as _int
from agent.sglang.readback_values import as_ints as _ints
from agent.sglang.readback_values import as_str as _str
from agent.sglang.zero_step_view import ZeroStepState, parse_zero_step


def _first(raw: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if raw.get(key) is not None:
            return raw[key]
    return None


@dataclass(frozen=True)
class LiveSlot:
    current_steps: int | None
    candidate_steps: tuple[int, ...]
    ema_accept_len: float | None
    batch_count: int | None


@dataclass(frozen=True)
class LiveSpec:
    """The patch's read-back (``internal_states[0].adaptive_spec_live``)."""

    threshold: int | None
    """0 (``NO_THRESHOLD``) when unset."""
    pinned_steps: int | None
    """``RELEASE_PINNED_STEPS`` (-1) when SGLang's EMA policy chooses."""
    active_steps: int | None
    prebuilt_steps: tuple[int, ...]
    ema_accept_len: float | None
    """EMA of accepted *draft* tokens (no bonus token) of the slot that ran last."""
    slots: Mapping[str, LiveSlot] = field(default_factory=dict)
    zero_step: ZeroStepState | None = None
    """Patch 03's state; None on a server without it."""

    @property
    def pinned(self) -> bool:
        return self.pinned_steps is not None and self.pinned_steps != RELEASE_PINNED_STEPS

    def value_of(self, live_key: str) -> int | None:
        """The read-back of one ``/set_internal_state`` key of the patch (KeyError for another key)."""
        value: int | None = getattr(self, READBACK_OF[live_key])
        return value


def parse_live(raw: Any) -> LiveSpec | None:
    if not isinstance(raw, Mapping):
        return None
    slots: dict[str, LiveSlot] = {}
    for key, slot in (raw.get("slots") or {}).items() if isinstance(raw.get("slots"), Mapping) else ():
        if isinstance(slot, Mapping):
            slots[str(key)] = LiveSlot(
                _int(slot.get("current_steps")),
                _ints(slot.get("candidate_steps")),
                _float(slot.get("ema_accept_len")),
                _int(slot.get("batch_count")),
            )
    return LiveSpec(
        threshold=_int(raw.get("threshold")),
        pinned_steps=_int(raw.get("pinned_steps")),
        active_steps=_int(raw.get("active_steps")),
        prebuilt_steps=tuple(sorted(_ints(raw.get("prebuilt_steps")))),
        ema_accept_len=_float(raw.get("ema_accept_len")),
        slots=slots,
        zero_step=parse_zero_step(raw.get(ZERO_STEP_READBACK_FIELD)),
    )


GRAPH_DRAFT_PHASES: Final = ("draft_prefill", "draft_decode", "draft_extend")


@dataclass(frozen=True)
class MemoryUsage:
    """``internal_states[i].memory_usage``, GB (target and draft merged)."""

    weight_gb: float | None = None
    kvcache_gb: float | None = None
    token_capacity: int | None = None
    graph_gb: float | None = None
    """All CUDA graphs; older servers give only this total."""
    graph_phases_gb: Mapping[str, float] = field(default_factory=dict)
    """0.5.23: ``prefill, decode, target_verify, draft_prefill, draft_decode, draft_extend``."""

    @property
    def draft_graph_gb(self) -> float | None:
        if not self.graph_phases_gb:
            return None
        return sum(self.graph_phases_gb.get(k, 0.0) for k in GRAPH_DRAFT_PHASES)


def _memory(raw: Any) -> MemoryUsage | None:
    if not isinstance(raw, Mapping):
        return None
    graph = raw.get("graph")
    phases: dict[str, float] = {}
    total = _float(graph)
    if isinstance(graph, Mapping):
        for key, value in graph.items():
            number = _float(value)
            if number is not None:
                phases[str(key)] = number
        total = math.fsum(phases.values()) if phases else None
    return MemoryUsage(
        weight_gb=_float(raw.get("weight")),
        kvcache_gb=_float(raw.get("kvcache")),
        token_capacity=_int(raw.get("token_capacity")),
        graph_gb=total,
        graph_phases_gb=phases,
    )


@dataclass(frozen=True)
class InternalState:
    """One ``internal_states[i]``: a DP rank's scheduler as its TP rank 0 sees it."""

    avg_spec_accept_length: float | None = None
    """Lifetime (since start, /flush_cache or a threshold update); absent before the first decode log."""
    last_gen_throughput: float | None = None
    effective_max_running_requests: int | None = None
    memory: MemoryUsage | None = None
    decode_cuda_graph_bs: tuple[int, ...] = ()
    world_size: int | None = None
    speculative_num_steps: int | None = None
    """The active adaptive tier (runtime overrides applied)."""
    speculative_num_draft_tokens: int | None = None
    speculative_adaptive: bool | None = None
    live: LiveSpec | None = None


def _state(raw: Mapping[str, Any]) -> InternalState:
    return InternalState(
        avg_spec_accept_length=_float(raw.get(si.AVG_SPEC_ACCEPT_LENGTH)),
        last_gen_throughput=_float(raw.get(si.LAST_GEN_THROUGHPUT)),
        effective_max_running_requests=_int(raw.get(si.EFFECTIVE_MAX_RUNNING_REQUESTS)),
        memory=_memory(raw.get(si.MEMORY_USAGE)),
        decode_cuda_graph_bs=_ints(raw.get(si.DECODE_CUDA_GRAPH_BS)),
        world_size=_int(raw.get(si.WORLD_SIZE)),
        speculative_num_steps=_int(raw.get("speculative_num_steps")),
        speculative_num_draft_tokens=_int(raw.get("speculative_num_draft_tokens")),
        speculative_adaptive=_bool(raw.get("speculative_adaptive")),
        live=parse_live(raw.get(READBACK_FIELD)),
    )


_NO_STATE: Final = InternalState()

# attribute → (raw keys, newest first; parser). The view's top-level fields, from this one table.
TOP_FIELDS: Final[dict[str, tuple[tuple[str, ...], Any]]] = {
    "version": ((si.VERSION,), _str),
    "status": ((si.STATUS,), _str),
    "model_path": (("model_path",), _str),
    "served_model_name": (("served_model_name",), _str),
    "tp_size": (("tp_size",), _int),
    "dp_size": (("dp_size",), _int),
    "attn_dp_size": (("attn_dp_size",), _int),
    "enable_dp_attention": ((si.ENABLE_DP_ATTENTION,), _bool),
    "page_size": (("page_size",), _int),
    "max_running_requests": (("max_running_requests",), _int),
    "max_total_num_tokens": ((si.MAX_TOTAL_NUM_TOKENS,), _int),
    "max_req_input_len": ((si.MAX_REQ_INPUT_LEN,), _int),
    "context_length": (("context_length",), _int),
    "mem_fraction_static": (("mem_fraction_static",), _float),
    "kv_cache_dtype": (("kv_cache_dtype",), _str),
    "attention_backend": (("attention_backend",), _str),
    "prefill_attention_backend": (("prefill_attention_backend",), _str),
    "decode_attention_backend": (("decode_attention_backend",), _str),
    "speculative_draft_model_path": (("speculative_draft_model_path",), _str),
    "speculative_algorithm": (("speculative_algorithm",), _str),
    "speculative_num_steps": (("speculative_num_steps",), _int),
    "speculative_eagle_topk": (("speculative_eagle_topk",), _int),
    "speculative_num_draft_tokens": (("speculative_num_draft_tokens",), _int),
    "speculative_adaptive": (("speculative_adaptive",), _bool),
    "speculative_adaptive_config": (("speculative_adaptive_config",), _str),
    "speculative_accept_threshold_single": (("speculative_accept_threshold_single",), _float),
    "speculative_accept_threshold_acc": (("speculative_accept_threshold_acc",), _float),
    "cuda_graph_max_bs": ((si.CUDA_GRAPH_MAX_BS_DECODE, si.OLD_CUDA_GRAPH_MAX_BS), _int),
    "enable_multi_layer_eagle": (("enable_multi_layer_eagle",), _bool),
    "enable_two_batch_overlap": (("enable_two_batch_overlap",), _bool),
    "enable_pdmux": (("enable_pdmux",), _bool),
}


@dataclass(frozen=True)
class ServerInfo:
    """The typed view of one ``/server_info`` answer (see the module docstring)."""

    version: str | None = None
    status: str | None = None
    model_path: str | None = None
    served_model_name: str | None = None
    tp_size: int | None = None
    dp_size: int | None = None
    attn_dp_size: int | None = None
    enable_dp_attention: bool | None = None
    page_size: int | None = None
    max_running_requests: int | None = None
    max_total_num_tokens: int | None = None
    max_req_input_len: int | None = None
    context_length: int | None = None
    mem_fraction_static: float | None = None
    kv_cache_dtype: str | None = None
    attention_backend: str | None = None
    """SGLang's resolved default when the launch did not set one (``_attention_backend_default``)."""
    prefill_attention_backend: str | None = None
    decode_attention_backend: str | None = None
    """Set only when the launch split them; otherwise ``attention_backend`` serves both."""
    speculative_draft_model_path: str | None = None
    speculative_algorithm: str | None = None
    speculative_num_steps: int | None = None
    """Launch-time steps (the resolved argument; the live tier is in ``state0``)."""
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    speculative_adaptive: bool | None = None
    speculative_adaptive_config: str | None = None
    speculative_accept_threshold_single: float | None = None
    speculative_accept_threshold_acc: float | None = None
    cuda_graph_max_bs: int | None = None
    enable_multi_layer_eagle: bool | None = None
    enable_two_batch_overlap: bool | None = None
    enable_pdmux: bool | None = None
    states: tuple[InternalState, ...] = ()

    @property
    def state0(self) -> InternalState:
        """``internal_states[0]`` (TP rank 0 of DP rank 0); empty when the answer has none."""
        return self.states[0] if self.states else _NO_STATE

    @property
    def speculative(self) -> bool:
        """The server runs with a draft model."""
        return self.speculative_algorithm is not None and self.speculative_algorithm.upper() != "NONE"

    @property
    def adaptive(self) -> bool | None:
        """Whether SGLang kept adaptive speculation on (it may turn it off at start-up)."""
        return (
            self.speculative_adaptive
            if self.speculative_adaptive is not None
            else self.state0.speculative_adaptive
        )

    @property
    def live(self) -> LiveSpec | None:
        return self.state0.live

    @property
    def dp_ranks(self) -> int:
        return max(1, len(self.states))

    @property
    def pool_tokens(self) -> int | None:
        memory = self.state0.memory
        return self.max_total_num_tokens or (memory.token_capacity if memory else None)

    @property
    def max_running_total(self) -> int | None:
        """Requests the server runs at once: the effective cap per DP rank times the DP ranks."""
        per_dp = self.state0.effective_max_running_requests
        return per_dp * self.dp_ranks if per_dp is not None else self.max_running_requests

    @property
    def largest_decode_graph(self) -> int | None:
        """The largest decode batch with a CUDA graph: captured sizes, else the configured maximum."""
        captured = self.state0.decode_cuda_graph_bs
        return max(captured) if captured else self.cuda_graph_max_bs

    def spec_shape(self) -> SpecShape | None:
        """The speculation shape SGLang reserves KV for (launch-time steps; widest pre-built state)."""
        if not self.speculative:
            return None
        steps = self.speculative_num_steps or 1
        live = self.live
        widest = max(live.prebuilt_steps) + 1 if live and live.prebuilt_steps else None
        return SpecShape(
            steps=steps,
            topk=self.speculative_eagle_topk or 1,
            draft_tokens=self.speculative_num_draft_tokens or steps + 1,
            max_draft_tokens=widest,
        )

    @property
    def attention_backends(self) -> tuple[str | None, str | None]:
        """(prefill, decode) attention backends in force: a split field, else ``attention_backend``
        (``attention_backends_of`` in ``arg_groups/model_override_base.py``)."""
        base = self.attention_backend
        return self.prefill_attention_backend or base, self.decode_attention_backend or base

    def summary(self) -> dict[str, Any]:
        """The few fields a stored result needs (never the whole answer: it carries API keys)."""
        keys = (
            "version",
            "speculative_algorithm",
            "speculative_num_steps",
            "speculative_eagle_topk",
            "speculative_num_draft_tokens",
            "speculative_adaptive",
            "page_size",
            "max_running_requests",
            "max_total_num_tokens",
            "served_model_name",
            "tp_size",
        )
        return {k: getattr(self, k) for k in keys}


def parse_server_info(raw: Mapping[str, Any]) -> ServerInfo:
    """The view of one ``/server_info`` answer; never raises on an odd answer."""
    values = {attr: parse(_first(raw, keys)) for attr, (keys, parse) in TOP_FIELDS.items()}
    states = raw.get(si.INTERNAL_STATES)
    parsed = tuple(_state(s) for s in states if isinstance(s, Mapping)) if isinstance(states, list) else ()
    return ServerInfo(**values, states=parsed)


def live_unavailable_reason(info: ServerInfo) -> str | None:
    """Why the live threshold cannot be used on this server, in SGLang's own words where it has them.

    Mirrors ``adaptive_unsupported_reason`` (``srt/speculative/adaptive_spec_params.py``) on the
    resolved fields; the read-back field of our patch proves the live keys exist.
    """
    if not info.speculative:
        return "the server runs without speculative decoding (speculative_algorithm is not set)"
    if info.speculative_adaptive is False or info.state0.speculative_adaptive is False:
        cause = _sglang_adaptive_reason(info)
        return f"speculative_adaptive disabled: {cause}" if cause else "speculative_adaptive is off"
    if info.adaptive is None:
        return "the server does not report speculative_adaptive in /server_info"
    if info.live is None:
        return (
            f"/server_info internal_states[0] has no {READBACK_FIELD!r}: the server runs an SGLang "
            f"without k25console's live-threshold patch"
        )
    return None


def _sglang_adaptive_reason(info: ServerInfo) -> str | None:
    algorithm = info.speculative_algorithm
    topk = info.speculative_eagle_topk
    if algorithm not in ("EAGLE", "EAGLE3", "NEXTN"):
        return f"speculative_algorithm={algorithm} (only EAGLE/EAGLE3 are supported)"
    if topk is not None and topk != 1:
        return f"speculative_eagle_topk={topk} (only topk=1 is supported)"
    if info.enable_dp_attention:
        return "attention DP is not supported (adaptive tier decisions are not synchronized across DP ranks)"
    if info.enable_multi_layer_eagle:
        return "enable_multi_layer_eagle=True is not supported (MultiLayerEagleWorkerV2 does not implement adaptive)"
    if info.enable_two_batch_overlap:
        return "enable_two_batch_overlap=True is not supported (adaptive state swap would discard the TboAttnBackend wrapper)"
    if info.enable_pdmux:
        return "enable_pdmux=True is not supported (adaptive state swap does not update decode_attn_backend_group)"
    return None
