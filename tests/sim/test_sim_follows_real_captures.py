"""The simulated engine against what the real patched SGLang 0.5.23 reported on an H200
(``tests/fixtures/sglang-0.5.23-real``): the same ``/server_info`` keys (top level, ``internal_states[0]``
and the patch's ``adaptive_spec_live``), the same ``/metrics`` family names, types and label sets, and
the real habit of reporting the server args of the state in force (0 steps while not speculating).

Where the sim cannot carry what the real server does, the exception is listed below with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent.profile import load_profile
from agent.sglang import live_control
from agent.sim import metrics
from agent.sim.config import sim_config
from agent.sim.engine import Engine
from agent.sim.info import ServerInfo
from agent.sim.request import SimRequest

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "fixtures" / "sglang-0.5.23-real"
PAGES = ("metrics-idle-after-start.prom", "metrics-after-bench.prom", "metrics-later.prom")

METRICS_THE_SIM_DOES_NOT_HAVE = {
    # The HTTP middleware's per-endpoint accounting and the tokenizer/detokenizer processes' CPU
    # time: the sim answers from one asyncio process and does not model either.
    "sglang:http_requests": "per-endpoint HTTP accounting of SGLang's FastAPI middleware",
    "sglang:http_responses": "per-endpoint HTTP accounting of SGLang's FastAPI middleware",
    "sglang:http_requests_active": "per-endpoint HTTP accounting of SGLang's FastAPI middleware",
    "sglang:process_cpu_seconds": "CPU seconds of SGLang's tokenizer and detokenizer processes",
    # The sim starts in about a second: it has no weight loading or CUDA-graph capture phases.
    "sglang:startup_time_seconds": "start-up phases (weights, KV allocation, scheduler)",
    "sglang:startup_cuda_graph_time_seconds": "CUDA-graph capture time per phase",
    # Request-size and per-stage distributions the model does not track (it keeps TTFT, ITL, E2E
    # and queue-time histograms, which the agent reads).
    "sglang:prompt_tokens_histogram": "distribution of prompt lengths",
    "sglang:uncached_prompt_tokens_histogram": "distribution of uncached prompt lengths",
    "sglang:generation_tokens_histogram": "distribution of output lengths",
    "sglang:request_time_per_output_token_seconds": "per-request time per output token",
    "sglang:per_stage_req_latency_seconds": "latency per scheduler stage",
    "sglang:dp_attention_token_imbalance_ratio": "DP attention balance (no DP attention here)",
    "sglang:dp_attention_sync_wait_seconds": "DP attention sync wait (no DP attention here)",
    # The prefix cache: the sim has no radix cache, so no cached tokens by source.
    "sglang:cached_tokens": "prefix-cache hits by source (the sim has no radix cache)",
}
METRICS_ONLY_THE_SIM_HAS = {
    # Declared by SGLang 0.5.23 (metrics_collector.py; the contract test checks it); absent from the
    # three real pages, during which no request was retracted.
    "sglang:num_retracted_requests": "appears once a request is retracted",
    "sglang:num_retracted_input_tokens": "appears once a request is retracted",
    "sglang:num_retracted_output_tokens": "appears once a request is retracted",
}
INTERNAL_STATE_KEYS_THE_SIM_DOES_NOT_HAVE: dict[str, str] = {}


def _families(text: str) -> dict[str, tuple[str, frozenset[str]]]:
    out: dict[str, tuple[str, frozenset[str]]] = {}
    for family in text_string_to_metric_families(text):
        if not family.samples:
            continue
        labels = frozenset(
            k for s in family.samples for k in s.labels if not (family.type == "histogram" and k == "le")
        )
        out[family.name] = (family.type, labels)
    return out


@pytest.fixture(scope="module")
def busy_engine() -> Engine:
    """The tiny profile the real captures ran (3/1/4 adaptive, live steps 1-3, threshold 32), after
    enough decode rounds for SGLang's decode-log-interval statistics (avg_spec_accept_length) to exist."""
    profile = load_profile(REPO / "tests" / "smoke" / "profile-tiny-oracle.toml")
    profile = profile.model_copy(
        update={"server": profile.server.model_copy(update={"tp_size": 8, "mem_fraction_static": None})}
    )
    engine = Engine(sim_config(profile), seed=5)
    for i in range(6):
        engine.submit(SimRequest(rid=f"r{i}", input_len=64, max_new_tokens=120, stream=i % 2 == 0))
    while (plan := engine.plan_step()) is not None:
        engine.commit_step(plan)
    return engine


def test_metric_families_and_labels_are_the_real_servers(busy_engine: Engine) -> None:
    real: dict[str, tuple[str, frozenset[str]]] = {}
    for page in PAGES:
        real.update(_families((REAL / page).read_text()))
    sim = _families(metrics.render(metrics.registry_for(busy_engine)).decode())
    assert set(real) - set(sim) == set(METRICS_THE_SIM_DOES_NOT_HAVE)
    assert set(sim) - set(real) == set(METRICS_ONLY_THE_SIM_HAS)
    for name in set(real) & set(sim):
        assert sim[name] == real[name], name


def test_server_info_keys_are_the_real_servers(busy_engine: Engine) -> None:
    real = json.loads((REAL / "server_info.json").read_text())
    info = ServerInfo(busy_engine, port=30000, seed=5).server_info()
    assert set(info) == set(real)
    state, real_state = info["internal_states"][0], real["internal_states"][0]
    assert set(real_state) - set(state) == set(INTERNAL_STATE_KEYS_THE_SIM_DOES_NOT_HAVE)
    assert set(state) == set(real_state)
    assert "avg_spec_accept_length" in state
    # The capture predates patch 03, whose read-back adds one field (its keys: tests/install).
    patch_03 = {live_control.ZERO_STEP_READBACK_FIELD}
    assert set(state[live_control.READBACK_FIELD]) - patch_03 == set(real_state[live_control.READBACK_FIELD])
    for slot in state[live_control.READBACK_FIELD]["slots"].values():
        assert set(slot) == set(next(iter(real_state[live_control.READBACK_FIELD]["slots"].values())))
    assert set(state["memory_usage"]) == set(real_state["memory_usage"])
    assert set(state["memory_usage"]["graph"]) == set(real_state["memory_usage"]["graph"])


def test_internal_state_reports_the_steps_in_force_as_the_real_server_does(busy_engine: Engine) -> None:
    real = json.loads((REAL / "server_info.json").read_text())
    # The real server at 0 steps: the top level keeps the launch 3/4, internal_states[0] says 0/1.
    assert (real["speculative_num_steps"], real["speculative_num_draft_tokens"]) == (3, 4)
    assert real["internal_states"][0]["adaptive_spec_live"]["active_steps"] == 0
    assert (
        real["internal_states"][0]["speculative_num_steps"],
        real["internal_states"][0]["speculative_num_draft_tokens"],
    ) == (0, 1)

    engine = busy_engine
    assert engine.controller is not None
    engine.controller.set_threshold(1)  # never speculate
    engine.submit(SimRequest(rid="zero", input_len=16, max_new_tokens=8))
    while (plan := engine.plan_step()) is not None:
        engine.commit_step(plan)
    info = ServerInfo(engine, port=30000, seed=5).server_info()
    state = info["internal_states"][0]
    assert (info["speculative_num_steps"], info["speculative_num_draft_tokens"]) == (3, 4)
    assert (state["speculative_num_steps"], state["speculative_num_draft_tokens"]) == (0, 1)
    assert state[live_control.READBACK_FIELD]["active_steps"] == 0
    engine.controller.set_threshold(0)
