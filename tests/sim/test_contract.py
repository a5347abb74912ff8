"""What the simulated engine says exists in SGLang 0.5.23's own source (the pinned wheel).

Every metric family it exports, every ``/server_info`` and ``internal_states`` field, the
``/model_info`` and ``meta_info`` keys, the OpenAI chunk fields and the default histogram buckets
are looked up in the wheel; the adaptive step policy and the CUDA-graph batch list are the wheel's
own functions run side by side with ours.
"""

from __future__ import annotations

import ast
import logging
import math
import random
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sglang_source import exec_functions, field_names, subscript_keys_assigned

from agent.profile.schema import Profile
from agent.sglang import live_control
from agent.sim import metrics, responses, stats
from agent.sim.adaptive import StepSlot
from agent.sim.config import decode_cuda_graph_bs, sim_config
from agent.sim.engine import Engine
from agent.sim.info import ServerInfo
from agent.sim.protocol import GenerationRequest
from agent.sim.request import SimRequest

pytestmark = pytest.mark.contract


def _dict_literal_keys(path: Path, function: str) -> set[str]:
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name == function:
            return {
                k.value
                for node in ast.walk(fn)
                if isinstance(node, ast.Dict)
                for k in node.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            }
    raise AssertionError(f"{path.name} has no function {function}")


def _class_fields(path: Path, name: str) -> set[str]:
    for cls in ast.walk(ast.parse(path.read_text())):
        if isinstance(cls, ast.ClassDef) and cls.name == name:
            return {
                s.target.id
                for s in cls.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            }
    raise AssertionError(f"{path.name} has no class {name}")


def _list_assigned(path: Path, variable: str) -> list[float]:
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.List)
            and any(isinstance(t, ast.Name) and t.id == variable for t in node.targets)
        ):
            return [float(v) for v in ast.literal_eval(node.value)]
    raise AssertionError(f"{path.name} assigns no list to {variable}")


@pytest.fixture(scope="module")
def busy_engine(local_sim: Profile) -> Engine:
    """An engine that has served streamed and plain requests, so every labelled series exists."""
    engine = Engine(sim_config(local_sim), seed=3)
    for i in range(6):
        engine.submit(SimRequest(rid=f"r{i}", input_len=300, max_new_tokens=40, stream=i % 2 == 0))
    while (plan := engine.plan_step()) is not None:
        engine.commit_step(plan)
    return engine


def _declared_metrics(src: Path) -> dict[str, tuple[str, set[str]]]:
    """name → (constructor: Gauge/Counter/Histogram, the label names it adds to the common ones)."""
    declared: dict[str, tuple[str, set[str]]] = {}
    for path in (src / "srt/observability").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            kwargs = {kw.arg: kw.value for kw in node.keywords}
            name = kwargs.get("name")
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                continue
            ctor = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            labels = kwargs.get("labelnames")
            extra = (
                {
                    c.value
                    for c in ast.walk(labels)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                }
                if labels is not None
                else set()
            )
            declared[name.value] = (ctor, extra)
    return declared


COMMON_LABELS = {"model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank"}


def test_every_metric_we_export_is_declared_by_sglang(sglang_src: Path, busy_engine: Engine) -> None:
    declared = _declared_metrics(sglang_src)
    assert len(declared) > 100
    text = metrics.render(metrics.registry_for(busy_engine)).decode()
    families = list(text_string_to_metric_families(text))
    assert len(families) >= 30
    for family in families:
        name = family.name + "_total" if family.type == "counter" else family.name
        assert name in declared, f"{name} is not an SGLang 0.5.23 metric"
        ctor, extra = declared[name]
        exported = {"gaugehistogram": "gauge"}.get(ctor.lower(), ctor.lower())  # SGLang's gauges per bucket
        assert exported == family.type, f"{name}: SGLang declares a {ctor}, we export a {family.type}"
        # A histogram's "le" is the client's; a gauge may declare its own "le". prometheus_client's
        # multiprocess mode adds "pid" to gauges kept per process (the real page: num_paused_reqs).
        bucket = {"le"} if family.type == "histogram" else {"pid"} if family.type == "gauge" else set()
        if ctor == "GaugeHistogram":
            bucket |= {"gt", "le"}  # the bucket bounds SGLang's GaugeHistogram adds to each gauge
        for sample in family.samples:
            assert set(sample.labels) - bucket - COMMON_LABELS == extra, (name, sample.labels, extra)


def test_default_histogram_buckets_are_sglangs(sglang_src: Path) -> None:
    collector = sglang_src / "srt/observability/metrics_collector.py"
    assert _list_assigned(collector, "bucket_time_to_first_token") == list(stats.TTFT_BUCKETS)
    assert _list_assigned(collector, "bucket_e2e_request_latency") == list(stats.E2E_BUCKETS)
    assert _list_assigned(collector, "bucket_inter_token_latency") == list(stats.ITL_BUCKETS)


def test_server_info_fields_exist_in_sglang(sglang_src: Path, busy_engine: Engine) -> None:
    info = ServerInfo(busy_engine, port=30000, seed=3).server_info()
    args = field_names(sglang_src)
    http = (sglang_src / "srt/entrypoints/http_server.py").read_text()
    common = (sglang_src / "srt/utils/common.py").read_text()
    handshake = _dict_literal_keys(sglang_src / "srt/managers/scheduler.py", "get_init_info") | {
        "hicache_object_layout"
    }
    for key in info:
        known = key in args or key in handshake or f'"{key}":' in http or f'result["{key}"]' in common
        assert known, f"/server_info.{key} is not in SGLang 0.5.23"
    assert info["api_key"] is None and "launch_command" in info

    state = info["internal_states"][0]
    controller = sglang_src / "srt/managers/scheduler_components/internal_state.py"
    written = subscript_keys_assigned(controller, "state")
    for key in state:
        if key == live_control.READBACK_FIELD:
            continue  # added by k25console's patch
        assert key in args or key in written, f"internal_states[0].{key} is not in SGLang 0.5.23"
    memory = _dict_literal_keys(
        sglang_src / "srt/managers/scheduler_components/memory_usage.py", "build_memory_usage"
    )
    assert set(state["memory_usage"]) <= memory
    live = state[live_control.READBACK_FIELD]
    assert set(live) == {*live_control.READBACK_KEYS, live_control.ZERO_STEP_READBACK_FIELD}
    assert tuple(live[live_control.ZERO_STEP_READBACK_FIELD]) == live_control.ZERO_STEP_READBACK_KEYS
    for slot in state[live_control.READBACK_FIELD]["slots"].values():
        assert set(slot) == {"current_steps", "candidate_steps", "ema_accept_len", "batch_count"}


def test_model_info_keys_are_sglangs(sglang_src: Path, busy_engine: Engine) -> None:
    keys = _dict_literal_keys(sglang_src / "srt/entrypoints/http_server.py", "model_info")
    assert set(ServerInfo(busy_engine, 30000, 3).model_info()) <= keys


def test_meta_info_keys_are_sglangs(sglang_src: Path, busy_engine: Engine) -> None:
    text = (sglang_src / "srt/managers/tokenizer_manager.py").read_text()
    req = SimRequest(rid="x", input_len=5, max_new_tokens=3)
    req.verify_ct, req.correct_drafts, req.output_len, req.drafts_histogram = 2, 3, 3, [0, 1, 1]
    req.finished_at, req.finish_reason = 1.0, {"type": "length", "length": 3}
    meta = responses.meta_info(req, True, 4)
    assert "spec_verify_ct" in meta
    for key in meta:
        assert f'"{key}"' in text, f"meta_info.{key} is not in SGLang 0.5.23"


def test_openai_bodies_use_sglangs_protocol_fields(sglang_src: Path) -> None:
    protocol = sglang_src / "srt/entrypoints/openai/protocol.py"
    req = SimRequest(rid="x", input_len=5, max_new_tokens=3)
    req.output_len, req.verify_ct, req.finish_reason = 3, 1, {"type": "length", "length": 3}
    for kind, stream_cls, choice_cls, delta_cls, full_cls, full_choice in (
        ("chat", "ChatCompletionStreamResponse", "ChatCompletionResponseStreamChoice", "DeltaMessage",
         "ChatCompletionResponse", "ChatCompletionResponseChoice"),
        ("completion", "CompletionStreamResponse", "CompletionResponseStreamChoice", None,
         "CompletionResponse", "CompletionResponseChoice"),
    ):  # fmt: skip
        gen = GenerationRequest(
            kind=kind,  # type: ignore[arg-type]
            input_len=5,
            max_new_tokens=3,
            ignore_eos=True,
            stream=True,
            model="m",
            continuous_usage=True,
            return_spec_details=True,
        )
        chunks: list[dict[str, Any]] = [
            responses.content_chunk(gen, req, 0, 0, 2),
            responses.finish_chunk(gen, req, 0),
            responses.usage_chunk(gen, req, 0),
            responses.sglext_chunk(gen, req, 0, 4),
        ]
        for chunk in chunks:
            assert set(chunk) <= _class_fields(protocol, stream_cls)
            for choice in chunk["choices"]:
                assert set(choice) <= _class_fields(protocol, choice_cls)
                if delta_cls:
                    assert set(choice["delta"]) <= _class_fields(protocol, delta_cls)
            if chunk.get("usage"):
                assert set(chunk["usage"]) <= _class_fields(protocol, "UsageInfo")
        details = chunks[-1]["sglext"]["spec_tokens_details"]
        assert set(details) == _class_fields(protocol, "SpecTokensDetails")
        full = responses.openai_response(gen, req, 0, 4)
        assert set(full) <= _class_fields(protocol, full_cls)
        assert set(full["choices"][0]) <= _class_fields(protocol, full_choice)
        if kind == "chat":
            assert set(full["choices"][0]["message"]) <= _class_fields(protocol, "ChatMessage")


def _sglang_slot_class(src: Path) -> Any:
    namespace: dict[str, Any] = {
        "math": math,
        "logger": logging.getLogger("sglang-wheel"),
        "log_info_on_rank0": lambda *_args: None,
    }
    path = src / "srt/speculative/adaptive_spec_params.py"
    return exec_functions(path, ("DEFAULT_ADAPTIVE_CONFIG", "AdaptiveStepSlot"), namespace)


def test_adaptive_policy_matches_sglangs_own_code(sglang_src: Path) -> None:
    wheel = _sglang_slot_class(sglang_src)
    configs = [
        {**v, "warmup_batches": 3, "update_interval": 2} for v in wheel.DEFAULT_ADAPTIVE_CONFIG.values()
    ]
    configs += [
        {"candidate_steps": [1, 2, 3]},
        {"candidate_steps": [0, 1, 3], "ceiling_coeff": 1.5, "warmup_batches": 0, "update_interval": 1},
        {"candidate_steps": [2, 4, 6], "ema_alpha": 0.5, "up_hysteresis": 0.3, "warmup_batches": 2},
    ]
    rng = random.Random(11)
    for cfg in configs:
        for initial in (0, 1, 3, 5):
            theirs = wheel.AdaptiveStepSlot(initial, cfg)
            ours = StepSlot(initial, cfg)
            for _ in range(300):
                cap = max(theirs.current_steps, 0)
                drafts = [rng.randint(0, cap) for _ in range(rng.randint(1, 8))]
                assert ours.update(drafts) == theirs.update(drafts)
                assert ours.current_steps == theirs.current_steps
                assert ours.ema_accept_len == pytest.approx(theirs.ema_accept_len)


@pytest.mark.parametrize("max_bs", [8, 48, 160, 256, 512])
@pytest.mark.parametrize("speculative", [False, True])
def test_decode_graph_batch_sizes_match_sglangs(sglang_src: Path, max_bs: int, speculative: bool) -> None:
    class View:
        disable_cuda_graph_padding = False
        speculative_algorithm = "EAGLE3" if speculative else None

    namespace: dict[str, Any] = {"resolving_view": lambda _args: View(), "Any": Any}
    hook = exec_functions(
        sglang_src / "srt/arg_groups/cuda_graph_hook.py",
        ("generate_decode_cuda_graph_batch_sizes",),
        namespace,
    )
    assert decode_cuda_graph_bs(max_bs, speculative) == hook.generate_decode_cuda_graph_batch_sizes(
        None, max_bs
    )


LIVE_CONTROL = (
    Path(__file__).resolve().parents[2]
    / "agent/install/overlay/sglang/srt/speculative/adaptive_live_control.py"
)
"""Patch 01's module, as ``agent install`` copies it into SGLang (the overlay)."""


class _WheelParams:
    """The attributes of ``AdaptiveSpeculativeParams`` that the patch's ``LiveAdaptiveState`` reads."""

    def __init__(self, slot_cls: Any, config: dict[str, Any], initial: int) -> None:
        entries = {
            int(k): {**{g: v for g, v in config.items() if not g.isdigit()}, **v}
            for k, v in config.items()
            if k.isdigit()
        }
        self._bs_list = sorted(entries)
        self._slots = {bs: slot_cls(initial, entries[bs]) for bs in self._bs_list}

    def _pad_to_cuda_graph_bs(self, batch_size: int) -> int:
        return batch_size


@pytest.mark.parametrize(
    "config",
    [
        {"1": {"candidate_steps": [1, 2, 3]}, "125": {"candidate_steps": [0]}},  # the shipped profiles
        {"warmup_batches": 2, "update_interval": 1, "1": {"candidate_steps": [1, 3, 5]}, "8": {"candidate_steps": [0, 1, 3]},
         "32": {"candidate_steps": [0]}, "64": {"candidate_steps": [0]}},
        {"1": {"candidate_steps": [2, 3]}},  # no threshold at launch
    ],
    ids=["shipped", "default-like", "no-threshold"],
)  # fmt: skip
def test_live_control_matches_the_patch(sglang_src: Path, config: dict[str, Any]) -> None:
    """Routing, EMA feeding, threshold and pinning behave as patch 01's own ``LiveAdaptiveState``."""
    from agent.sim.adaptive import LiveAdaptiveController

    wheel = _sglang_slot_class(sglang_src)
    namespace: dict[str, Any] = {"__name__": "adaptive_live_control"}
    exec(compile(LIVE_CONTROL.read_text(), str(LIVE_CONTROL), "exec"), namespace)
    params = _WheelParams(wheel.AdaptiveStepSlot, config, 3)
    theirs = namespace["LiveAdaptiveState"](params)
    ours = LiveAdaptiveController(3, config)
    prebuilt = ours.prebuilt_steps
    assert ours.threshold == theirs.threshold
    rng = random.Random(5)
    for _ in range(600):
        roll = rng.random()
        if roll < 0.04:
            value: Any = rng.choice([0, 2, 4, 8, 16, 40, 125, -1, 3.5])
            reason = namespace["LiveAdaptiveState"].check_threshold(value, prebuilt)
            assert (ours.check_threshold(value) is None) == (reason is None), value
            if reason is None:
                theirs.set_threshold(value)
                ours.set_threshold(value)
        elif roll < 0.08:
            value = rng.choice([-1, 0, 1, 2, 3, 5, 7])
            reason = namespace["LiveAdaptiveState"].check_steps(value, prebuilt)
            assert (ours.check_steps(value) is None) == (reason is None), value
            if reason is None:
                theirs.set_pinned_steps(value)
                ours.set_pinned_steps(value)
        batch = rng.choice([1, 2, 3, 5, 8, 9, 16, 31, 33, 64, 100, 130, 200])
        slot = theirs.route(batch)
        assert ours.steps_for_batch(batch) == slot.current_steps
        drafts = [rng.randint(0, max(slot.current_steps, 0)) for _ in range(min(batch, 6))]
        theirs.route(batch).update(drafts)
        ours.on_verify_complete(drafts, batch)
        mine = ours.readback()
        assert (mine["threshold"], mine["pinned_steps"]) == (theirs.threshold, theirs.pinned_steps)
        assert mine["ema_accept_len"] == pytest.approx(theirs.last_slot.ema_accept_len)
        for bs, wheel_slot in params._slots.items():
            assert mine["slots"][str(bs)]["current_steps"] == wheel_slot.current_steps
            assert mine["slots"][str(bs)]["candidate_steps"] == wheel_slot.candidate_steps
            assert mine["slots"][str(bs)]["batch_count"] == wheel_slot._batch_count
