"""The JSON the modelled server reports about itself: ``/server_info``, ``/model_info``, ``/v1/models``.

Shapes follow 0.5.23 (``http_server.py: server_info / model_info``, ``internal_state.py``,
``memory_usage.py``). ``/server_info`` carries every resolved server argument the simulator knows,
**including ``api_key`` and ``admin_api_key`` when set**, and the launch command, exactly as the
real server leaks them; whoever shows or stores it must redact them.
"""

from __future__ import annotations

import json
import time
from functools import cache
from importlib import resources
from typing import Any

from agent.sglang import kv, launch, live_control
from agent.sglang import server_info as si
from agent.sim.engine import Engine
from agent.wire.bench_env import GpuFacts

SGLANG_VERSION = "0.5.23"
KIMI_ARCHITECTURE = "KimiK25ForConditionalGeneration"
KIMI_MODEL_TYPE = "kimi_k25"


@cache
def real_defaults() -> dict[str, Any]:
    """Every resolved ``ServerArgs`` field as the real 0.5.23 server reported it (``server_args`` in
    ``server_args_0.5.23.json``), and the fields only its top level carries (``top_level_only``).
    The sim reports these for every field it does not model, so its key set is the real one."""
    text = resources.files("agent.sim").joinpath("server_args_0.5.23.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def launch_argv(engine: Engine) -> list[str]:
    """The launch flags the agent would render for this profile (``agent.sglang.launch``)."""
    return launch.render_launch(engine.config.profile).argv


def resolved_server_args(engine: Engine, port: int, seed: int) -> dict[str, Any]:
    cfg = engine.config
    p = cfg.profile
    server, model = p.server, p.model
    speculative = cfg.speculative
    adaptive_path = launch.render_launch(p).adaptive_config_path if cfg.mode == "adaptive" else None
    return {
        **real_defaults()["server_args"],
        "model_path": model.path,
        "tokenizer_path": model.path,
        "served_model_name": cfg.served_model_name,
        "trust_remote_code": model.trust_remote_code,
        "context_length": cfg.context_length,
        "quantization": None,
        "load_format": "auto",
        "kv_cache_dtype": server.kv_cache_dtype,
        "language_model_only": model.language_model_only,
        "reasoning_parser": model.reasoning_parser,
        "tool_call_parser": model.tool_call_parser,
        "tp_size": server.tp_size,
        "dp_size": 1,
        "pp_size": 1,
        "enable_dp_attention": False,
        "page_size": server.page_size,
        "mem_fraction_static": server.mem_fraction_static or kv.DEFAULT_MEM_FRACTION_STATIC,
        "max_running_requests": cfg.max_running_requests,
        "max_total_tokens": server.max_total_tokens,
        "max_queued_requests": None,
        "chunked_prefill_size": cfg.chunked_prefill_size,
        "schedule_policy": "fcfs",
        "schedule_conservativeness": 1.0,
        "retraction_policy": "length",
        "disable_radix_cache": False,
        "disable_overlap_schedule": False,
        "attention_backend": server.attention_backend or "triton",
        "cuda_graph_max_bs_decode": server.cuda_graph_max_bs,
        "cuda_graph_bs_decode": None,
        "speculative_algorithm": "EAGLE3" if speculative else None,
        "speculative_draft_model_path": model.draft_path if speculative else None,
        "speculative_num_steps": cfg.steps if speculative else None,
        "speculative_eagle_topk": cfg.topk if speculative else None,
        "speculative_num_draft_tokens": cfg.draft_tokens if speculative else None,
        "speculative_adaptive": cfg.mode == "adaptive",
        "speculative_adaptive_config": adaptive_path,
        "speculative_accept_threshold_single": 1.0,
        "speculative_accept_threshold_acc": 1.0,
        "pp_max_micro_batch_size": None,
        "host": server.host,
        "port": port,
        "api_key": cfg.api_key,
        "admin_api_key": cfg.admin_api_key,
        "enable_metrics": True,
        "decode_log_interval": cfg.decode_log_interval,
        "stream_interval": 1,
        "tokenizer_worker_num": 1,
        "skip_tokenizer_init": False,
        "weight_version": "default",
        "log_level": "info",
        "watchdog_timeout": 300.0,
        "random_seed": seed,
    }


class ServerInfo:
    """Builds the self-description of one running simulated server."""

    def __init__(self, engine: Engine, port: int, seed: int) -> None:
        self.engine = engine
        self.port = port
        self.seed = seed
        self.created = int(time.time())
        self.overrides: dict[str, Any] = {}
        """Values applied through ``/set_internal_state`` (SGLang's config override log)."""
        self._static = resolved_server_args(engine, port, seed)
        self.launch_command = " ".join(launch_argv(engine)[2:])

    def memory_usage(self) -> dict[str, Any]:
        cfg = self.engine.config
        cell = kv.mla_cell_bytes(cfg.profile.server.kv_cache_dtype, cfg.speculative)
        memory = cfg.calibration.memory
        graph = dict(memory.graph_gb)
        if not cfg.speculative:
            graph.update(target_verify=0.0, draft_decode=0.0, draft_extend=0.0)
        return {
            "weight": round(
                memory.target_weight_gb
                + (memory.draft_weight_bytes_per_rank / 1024**3 if cfg.speculative else 0.0),
                3,
            ),
            "kvcache": round(cfg.pool_tokens * cell / 1024**3, 3),
            "startup_available": memory.startup_available_gb,
            "token_capacity": cfg.pool_tokens,
            "token_capacity_swa": None,
            "graph": graph,
        }

    def internal_state(self) -> dict[str, Any]:
        eng = self.engine
        cfg = eng.config
        state: dict[str, Any] = {**self._static, **self.overrides}
        if cfg.speculative:
            state["speculative_num_steps"] = eng.active_steps
            state["speculative_num_draft_tokens"] = eng.active_draft_tokens if eng.active_steps > 0 else 1
            if cfg.mode == "static":
                state["speculative_num_steps"] = cfg.steps
                state["speculative_num_draft_tokens"] = cfg.draft_tokens
        state["world_size"] = cfg.profile.server.tp_size
        state["startup_time"] = {}
        state["effective_max_running_requests_per_dp"] = cfg.max_running_requests
        state["last_gen_throughput"] = eng.stats.last_gen_throughput
        state["memory_usage"] = self.memory_usage()
        state["disaggregation_mode"] = "null"
        state["decode_cuda_graph_bs"] = list(cfg.cuda_graph_bs)
        graph = state["memory_usage"]["graph"]
        state["decode_cuda_graph_memory_gb"] = round(
            sum(graph[p] for p in ("decode", "target_verify", "draft_decode", "draft_extend")), 3
        )
        accept = eng.stats.avg_spec_accept_length
        if accept is not None:
            state["avg_spec_accept_length"] = accept
        if eng.controller is not None:
            live = eng.controller.readback()
            live[live_control.ZERO_STEP_READBACK_FIELD] = eng.zero_step.readback()
            state[live_control.READBACK_FIELD] = live
        timing = eng.zero_step.timing_table()
        if timing is not None:
            state[live_control.ROUND_TIMING_FIELD] = timing
        return state

    def server_info(self) -> dict[str, Any]:
        cfg = self.engine.config
        return {
            **self._static,
            **real_defaults()["top_level_only"],
            "launch_command": self.launch_command,
            "status": "ready",
            "max_total_num_tokens": cfg.pool_tokens,
            "max_req_input_len": cfg.context_length - 1,
            "hicache_object_layout": None,
            "kv_events": None,
            "startup_time": {},
            si.INTERNAL_STATES: [self.internal_state()],
            "version": SGLANG_VERSION,
            "frontend": "python",
        }

    def model_info(self) -> dict[str, Any]:
        p = self.engine.config.profile
        return {
            "model_path": p.model.path,
            "served_model_name": self.engine.config.served_model_name,
            "tokenizer_path": p.model.path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "load_format": "auto",
            "reasoning_parser": p.model.reasoning_parser,
            "tool_call_parser": p.model.tool_call_parser,
            "disaggregation_mode": "null",
            "has_image_understanding": not p.model.language_model_only,
            "has_audio_understanding": False,
            "model_type": KIMI_MODEL_TYPE,
            "architectures": [KIMI_ARCHITECTURE],
        }

    def models(self) -> dict[str, Any]:
        cfg = self.engine.config
        return {
            "object": "list",
            "data": [
                {
                    "id": cfg.served_model_name,
                    "object": "model",
                    "created": self.created,
                    "owned_by": "sglang",
                    "root": cfg.profile.model.path,
                    "parent": None,
                    "max_model_len": cfg.context_length,
                }
            ],
        }

    def simulated_host(self) -> dict[str, Any]:
        """What the simulator models (``agent.wire.bench_env.SIMULATED_HOST_PATH``): one GPU per TP
        rank of the calibration's kind. Not SGLang's: a result of a run against the simulator records
        this host, not the machine it ran on."""
        tp = self.engine.config.profile.server.tp_size
        gpu = self.engine.cal.gpu
        return GpuFacts(
            source="simulated",
            where="agent sim's model of the host",
            count=tp,
            names=[gpu] * tp,
            detail=f"simulated: {tp} × {gpu} as agent sim's calibration models them; no driver, not a measurement",
        ).model_dump()
