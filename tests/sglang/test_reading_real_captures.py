"""The real captures of the patched SGLang 0.5.23 (tests/fixtures/sglang-0.5.23-real) read with no
field missing that the page or answer has, and older /server_info shapes read the same way."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent.sglang import metrics as m
from agent.sglang.info_view import TOP_FIELDS, ServerInfo, live_unavailable_reason, parse_server_info
from agent.sglang.live_control import READBACK_FIELD
from agent.sglang.metric_fields import COUNTERS, GAUGES, HISTOGRAMS
from agent.sglang.reading import read_page, reading_from_server_info

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REAL = FIXTURES / "sglang-0.5.23-real"
PAGES = sorted(REAL.glob("*.prom"))
ANSWERS = sorted(REAL.glob("server_info*.json"))


def _on_page(text: str, name: str) -> bool:
    """Whether the page has a sample (or declares the family) of ``name``."""
    return re.search(rf"^(?:# HELP )?sglang:{re.escape(name)}[{{ ]", text, re.M) is not None


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_a_real_page_reads_every_field_it_has(path: Path) -> None:
    text = path.read_text()
    r = read_page(path.read_bytes())
    assert r.prefix == "sglang:" and r.problems == () and r.skipped_lines == 0
    missing = []
    for field, gauge in GAUGES.items():
        if any(_on_page(text, n) for n in gauge.names) and field not in r.gauges:
            missing.append(field)
    for field, counter in COUNTERS.items():
        if _on_page(text, counter.name) and field not in r.counters:
            missing.append(field)
    for field, names in HISTOGRAMS.items():
        if any(_on_page(text, f"{n}_bucket") for n in names) and field not in r.histograms:
            missing.append(field)
    assert missing == []
    assert r.histograms["ttft"].complete
    # the page is one TP-1 scheduler with pid-labelled multiprocess gauges; nothing is counted twice
    assert r.gauge_int("running") == 0 and r.gauge_int("max_total_num_tokens") == 4_849_128


def test_real_pages_have_the_numbers_the_capture_shows() -> None:
    after = read_page((REAL / "metrics-after-bench.prom").read_bytes())
    assert after.counter("decode_tokens") == 355_958
    assert after.counter("generation_tokens") == 200 + 348_000  # is_streaming false + true
    assert after.counter("spec_verify_calls") == 137_692
    assert after.counter("decode_passes_graph") == 5090 and after.counter("decode_passes_no_graph") == 0
    later = read_page((REAL / "metrics-later.prom").read_bytes())
    assert later.gauge("spec_accept_length") == 4.0  # the oracle model accepts every draft


def _raw_value(raw: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((raw[k] for k in keys if raw.get(k) is not None), None)


@pytest.mark.parametrize("path", ANSWERS, ids=lambda p: p.name)
def test_a_real_server_info_reads_every_field_it_has(path: Path) -> None:
    raw = json.loads(path.read_text())
    info = parse_server_info(raw)
    missing = [
        attr
        for attr, (keys, _) in TOP_FIELDS.items()
        if _raw_value(raw, keys) not in (None, "") and getattr(info, attr) is None
    ]
    assert missing == []
    assert (info.version, info.speculative_algorithm, info.speculative, info.adaptive) == (
        "0.5.23",
        "EAGLE3",
        True,
        True,
    )
    assert info.cuda_graph_max_bs == 128 and info.largest_decode_graph == 128
    assert info.pool_tokens == 4_849_128 and info.max_running_total == 128 and info.dp_ranks == 1
    state = info.state0
    raw_state = raw["internal_states"][0]
    assert state.avg_spec_accept_length == raw_state["avg_spec_accept_length"]
    assert state.last_gen_throughput == raw_state["last_gen_throughput"]
    assert state.decode_cuda_graph_bs == tuple(raw_state["decode_cuda_graph_bs"])
    assert state.world_size == 1 and state.effective_max_running_requests == 128
    assert state.memory is not None and state.memory.token_capacity == 4_849_128
    assert state.memory.graph_phases_gb == raw_state["memory_usage"]["graph"]
    assert state.memory.draft_graph_gb == pytest.approx(0.037 + 0.051 + 0.066)
    live = info.live
    assert live is not None and live.prebuilt_steps == (0, 1, 2, 3) and live.pinned is False
    assert live.slots["1"].candidate_steps == (1, 2, 3) and live.slots["32"].candidate_steps == (0,)
    assert live.threshold == raw_state[READBACK_FIELD]["threshold"]
    assert live_unavailable_reason(info) is None  # the patched server: live control available


def test_the_live_tier_is_read_from_the_state_not_the_launch_args() -> None:
    info = parse_server_info(json.loads((REAL / "server_info.json").read_text()))
    assert info.speculative_num_steps == 3  # launch
    assert info.state0.speculative_num_steps == 0 and info.live is not None and info.live.active_steps == 0


def test_an_older_server_info_reads_the_same_fields() -> None:
    """server_info-older.json: cuda_graph_max_bs (not _decode), memory_usage.graph a number, no patch."""
    info = parse_server_info(json.loads((FIXTURES / "repro" / "server_info-older.json").read_text()))
    assert info.cuda_graph_max_bs == 160 and info.largest_decode_graph == 160
    memory = info.state0.memory
    assert memory is not None and memory.graph_gb == 1.75 and memory.graph_phases_gb == {}
    assert memory.draft_graph_gb is None
    assert info.live is None
    assert live_unavailable_reason(info) == "the server does not report speculative_adaptive in /server_info"
    metrics_off = reading_from_server_info(info)
    assert metrics_off.gauge("gen_throughput") == 0.0  # an idle server's 0 is 0, not unknown
    assert metrics_off.gauge("spec_accept_length") == 2.15
    assert metrics_off.sources["spec_accept_length"].endswith("(lifetime)")


def test_wrong_types_cost_a_field_not_the_answer() -> None:
    info = parse_server_info(
        {
            "version": 5,
            "page_size": "one",
            "tp_size": True,
            "max_total_num_tokens": float("inf"),
            "speculative_algorithm": "EAGLE3",
            "internal_states": [
                {"memory_usage": {"graph": "x"}, "decode_cuda_graph_bs": [1, "2", 4.0]},
                "junk",
            ],
        }
    )
    assert (info.version, info.page_size, info.tp_size, info.max_total_num_tokens) == (None, None, None, None)
    assert info.speculative and len(info.states) == 1
    assert info.state0.decode_cuda_graph_bs == (1, 4)
    assert ServerInfo().state0.live is None and parse_server_info({}).dp_ranks == 1


def test_metric_aliases_are_not_0523_names() -> None:
    assert not set(m.ALIASES) & set(m.READ)
