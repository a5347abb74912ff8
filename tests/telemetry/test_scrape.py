"""Parsing SGLang's /metrics (0.5.23, prefixes, rank labels, older pages) and redacting /server_info."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agent.telemetry import scrape
from agent.telemetry.scrape import (
    Histogram,
    parse_metrics,
    parse_sample_line,
    reading_from_server_info,
    redact_server_info,
)

from .conftest import PAGE_0523

PAGE = PAGE_0523.read_text()
SCHED = 'engine_type="unified",model_name="kimi-k2.5",moe_ep_rank="0",pp_rank="0"'


def test_full_0523_page() -> None:
    r = parse_metrics(PAGE)
    assert r.source == "metrics" and r.prefix == "sglang:"
    assert r.gauge_int("running") == 48 and r.gauge_int("queued") == 12
    assert r.gauge("gen_throughput") == 612.5
    assert r.gauge_int("max_total_num_tokens") == 136_800
    assert r.gauge_int("kv_used_tokens") == 57_456
    assert r.gauge("spec_accept_length") == pytest.approx(2.61)
    assert r.gauge_int("spec_num_steps") == 3 and r.gauge_int("spec_num_draft_tokens") == 4
    # Counters: is_streaming true + false added up; realtime tokens split by mode.
    assert r.counter("generation_tokens") == 1_843_200
    assert r.counter("decode_tokens") == 1_851_904
    assert r.counter("prefill_tokens") == 5_000_000 + 2_300_000
    assert r.counter("retracted_requests") == 17
    assert r.counter("decode_passes_no_graph") == 1_200
    ttft = r.histograms["ttft"]
    assert ttft.count == 100
    assert ttft.quantile(0.5) == pytest.approx(0.4 + (0.6 - 0.4) * (50 - 40) / 30)
    assert r.missing == []
    assert r.skipped_lines == 0


def test_fast_path_agrees_with_prometheus_client_on_the_full_page() -> None:
    """The regex path (common line shape) must give exactly what prometheus_client's parser gives."""
    reference: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in PAGE.splitlines():
        if not line or line.startswith("#"):
            continue
        for name, labels, value in parse_sample_line(line):
            base = name.split(":", 1)[1]
            if base in scrape.WANTED:
                reference.setdefault(base, []).append((labels, value))
    fast, prefix, skipped, ranked = scrape._samples(PAGE)
    assert (prefix, skipped, ranked) == ("sglang:", 0, False)
    assert fast == reference
    assert sum(len(v) for v in fast.values()) > 90


def test_underscore_prefix_reads_the_same() -> None:
    colon = parse_metrics(PAGE)
    underscore = parse_metrics(PAGE.replace("sglang:", "sglang_"))
    assert underscore.prefix == "sglang_"
    assert underscore.gauges == colon.gauges
    assert underscore.counters == colon.counters
    assert underscore.histograms == colon.histograms


def test_all_schedulers_reporting_counts_one_batch() -> None:
    """--enable-metrics-for-all-schedulers: 8 TP ranks report the same batch; read rank 0 only."""
    lines = [f'sglang:num_running_reqs{{{SCHED},tp_rank="{rank}"}} {40 + rank}' for rank in (3, 0, 7, 1)]
    lines += [f'sglang:num_retracted_requests_total{{{SCHED},tp_rank="{rank}"}} 5' for rank in range(8)]
    r = parse_metrics("\n".join(lines))
    assert r.gauge_int("running") == 40
    assert r.counter("retracted_requests") == 5


def test_data_parallel_ranks_add_up_and_pp_reads_the_first_stage() -> None:
    text = "\n".join(
        [
            'sglang:num_running_reqs{tp_rank="0",pp_rank="0",dp_rank="0"} 10',
            'sglang:num_running_reqs{tp_rank="0",pp_rank="0",dp_rank="1"} 12',
            'sglang:num_running_reqs{tp_rank="0",pp_rank="1",dp_rank="0"} 99',
            'sglang:token_usage{tp_rank="0",dp_rank="0"} 0.2',
            'sglang:token_usage{tp_rank="0",dp_rank="1"} 0.6',
            'sglang:spec_accept_length{tp_rank="0",dp_rank="0"} 2.0',
            'sglang:spec_accept_length{tp_rank="0",dp_rank="1"} 3.0',
        ]
    )
    r = parse_metrics(text)
    assert r.gauge_int("running") == 22
    assert r.gauge("token_usage") == 0.6  # the fullest pool
    assert r.gauge("spec_accept_length") == 2.5


def test_v1_loads_prometheus_format() -> None:
    """``/v1/loads?format=prometheus``: sglang_ gauges per dp_rank, the queue called num_waiting_reqs."""
    text = "\n".join(
        [
            "# TYPE sglang_num_running_reqs gauge",
            'sglang_num_running_reqs{dp_rank="0"} 30',
            "# TYPE sglang_num_waiting_reqs gauge",
            'sglang_num_waiting_reqs{dp_rank="0"} 4',
            "# TYPE sglang_max_total_num_tokens gauge",
            'sglang_max_total_num_tokens{dp_rank="0"} 136800',
        ]
    )
    r = parse_metrics(text)
    assert r.prefix == "sglang_"
    assert (r.gauge_int("running"), r.gauge_int("queued"), r.gauge_int("max_total_num_tokens")) == (
        30,
        4,
        136800,
    )


def test_older_sglang_page_gives_what_it_has() -> None:
    """Shape of an older SGLang page (0.4-era): no rank labels, no realtime/spec counters, TPOT not ITL."""
    old = "\n".join(
        [
            "# HELP sglang:num_running_reqs The number of running requests.",
            "# TYPE sglang:num_running_reqs gauge",
            'sglang:num_running_reqs{name="kimi"} 7.0',
            'sglang:gen_throughput{name="kimi"} 210.0',
            'sglang:token_usage{name="kimi"} 0.13',
            'sglang:generation_tokens_total{name="kimi"} 90000.0',
            'sglang:time_per_output_token_seconds_bucket{le="0.01",name="kimi"} 10.0',
            'sglang:time_per_output_token_seconds_bucket{le="0.05",name="kimi"} 30.0',
            'sglang:time_per_output_token_seconds_bucket{le="+Inf",name="kimi"} 40.0',
            'sglang:time_per_output_token_seconds_count{name="kimi"} 40.0',
            'sglang:time_per_output_token_seconds_sum{name="kimi"} 0.9',
        ]
    )
    r = parse_metrics(old)
    assert r.gauge_int("running") == 7
    assert r.gauge("queued") is None
    assert r.counter("decode_tokens") is None and r.counter("generation_tokens") == 90000
    assert r.histograms["itl"].count == 40
    assert "queued" in r.missing and "spec_accept_length" in r.missing and "ttft" in r.missing


def test_odd_lines_go_through_prometheus_client_and_junk_is_skipped() -> None:
    text = "\n".join(
        [
            'sglang:num_running_reqs{model_name="a \\"quoted\\" name",tp_rank="0"} 5',
            "sglang:num_queue_reqs{tp_rank=0 oops} 3",
            "sglang:gen_throughput 12.5 1700000000000",
            'sglang:kv_used_tokens{tp_rank="0"} many',
            "not a metric line at all",
        ]
    )
    r = parse_metrics(text)
    assert r.gauge_int("running") == 5  # escaped quotes: the library's parser took it
    assert r.gauge("gen_throughput") == 12.5  # a timestamp is allowed
    assert r.gauge("queued") is None and r.gauge("kv_used_tokens") is None
    assert r.skipped_lines == 2


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_never_raises_on_any_text(text: str) -> None:
    parse_metrics(text)
    parse_metrics("sglang:num_running_reqs" + text)


def test_histogram_quantile_and_window_delta() -> None:
    older = Histogram(((0.1, 10.0), (0.5, 10.0), (math.inf, 10.0)), 10, 0.5)
    newer = Histogram(((0.1, 10.0), (0.5, 30.0), (math.inf, 31.0)), 31, 7.0)
    recent = newer.minus(older)
    assert recent is not None and recent.count == 21
    assert recent.quantile(0.5) == pytest.approx(0.1 + 0.4 * 10.5 / 20)
    assert recent.quantile(1.0) == 0.5  # the +Inf bucket reports its lower bound, as Prometheus does
    assert older.minus(newer) is None  # counts went down: a restarted server
    assert Histogram((), 0, 0).quantile(0.5) is None
    assert Histogram(((1.0, 0.0), (math.inf, 0.0)), 0, 0).quantile(0.99) is None


SERVER_INFO = {
    "version": "0.5.23",
    "api_key": "sk-live-123456",
    "admin_api_key": "adm-987654",
    "hf_token": None,
    "ssl_keyfile_password": "hunter22",
    "launch_command": "python -m sglang.launch_server --model-path /m --api-key sk-live-123456 --port 30000",
    "max_total_num_tokens": 136800,
    "tokenizer_path": "/models/kimi",
    "page_size": 1,
    "speculative_algorithm": "EAGLE3",
    "internal_states": [
        {
            "speculative_num_steps": 3,
            "env_vars": {"HF_TOKEN": "hf_abcdef", "CUDA_VISIBLE_DEVICES": "0,1"},
            "api_key": "sk-live-123456",
            "note": "started with key sk-live-123456",
            "memory_usage": {"token_capacity": 136800},
            "last_gen_throughput": 321.0,
            "avg_spec_accept_length": 2.4,
        }
    ],
}


def test_redaction_removes_every_credential_and_keeps_the_numbers() -> None:
    clean = redact_server_info(SERVER_INFO, secrets=["sk-live-123456"])
    text = json.dumps(clean)
    for secret in ("sk-live-123456", "adm-987654", "hunter22", "hf_abcdef"):
        assert secret not in text
    assert clean["max_total_num_tokens"] == 136800  # "tokens" is not "token"
    assert clean["tokenizer_path"] == "/models/kimi"
    assert clean["hf_token"] is None  # nothing to hide stays as it was
    assert clean["internal_states"][0]["env_vars"]["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert "--api-key <redacted>" in clean["launch_command"]
    assert SERVER_INFO["api_key"] == "sk-live-123456"  # the input is not modified


def test_redaction_of_launch_command_without_knowing_the_key() -> None:
    clean = redact_server_info({"launch_command": "sglang serve --admin-api-key=topsecret --api-key abc123"})
    assert "topsecret" not in clean["launch_command"] and "abc123" not in clean["launch_command"]


def test_reading_from_server_info_when_metrics_are_off() -> None:
    r = reading_from_server_info(SERVER_INFO)
    assert r.source == "server_info"
    assert r.gauge("gen_throughput") == 321.0
    assert r.gauge("spec_accept_length") == 2.4
    assert r.gauge_int("spec_num_steps") == 3
    assert r.gauge_int("max_total_num_tokens") == 136800
    assert r.gauge("running") is None  # /server_info has no batch counts


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(
    info=st.dictionaries(st.text(max_size=12), _json, max_size=6),
    key=st.sampled_from(["api_key", "admin_api_key", "hf_token", "HF_TOKEN", "client_secret", "db-password"]),
    secret=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=8, max_size=24),
    depth=st.integers(min_value=0, max_value=2),
)
def test_a_secret_never_survives_redaction(
    info: dict[str, object], key: str, secret: str, depth: int
) -> None:
    """Wherever the key sits, and whatever else the answer holds, its value does not come out."""
    assume(secret not in json.dumps(info) and secret not in key)  # a key spelling it is no leak
    node: dict[str, object] = dict(info)
    root = node
    for level in range(depth):
        child: dict[str, object] = {}
        node[f"level{level}"] = [child]
        node = child
    node[key] = secret
    root["launch_command"] = f"python -m sglang.launch_server --api-key {secret} --port 1"
    clean = redact_server_info(root, secrets=[secret])
    assert secret not in json.dumps(clean)
