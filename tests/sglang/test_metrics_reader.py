"""The one /metrics reader: each rule shown on a page written to reproduce it (tests/fixtures/repro)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.sglang import exposition
from agent.sglang.histogram import Histogram, Quantile
from agent.sglang.metric_fields import SAMPLE_NAMES
from agent.sglang.reading import MetricsParser, read_page

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPRO = FIXTURES / "repro"
PAGE_0523 = (FIXTURES / "metrics" / "sglang-0.5.23-tp8-loaded.txt").read_text()
SCHED = 'engine_type="unified",model_name="kimi-k2.5",moe_ep_rank="0",pp_rank="0"'


def repro(name: str) -> bytes:
    return (REPRO / name).read_bytes()


def test_full_0523_page() -> None:
    r = read_page(PAGE_0523)
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
    assert ttft.count == 100 and ttft.complete
    assert ttft.quantile(0.5) == Quantile(pytest.approx(0.4 + (0.6 - 0.4) * (50 - 40) / 30))
    assert r.missing == [] and r.problems == () and r.skipped_lines == 0


def test_fast_path_agrees_with_prometheus_client_on_the_full_page() -> None:
    """The regex path (common line shape) must give exactly what prometheus_client's parser gives."""
    reference: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in PAGE_0523.splitlines():
        if not line or line.startswith("#"):
            continue
        for name, labels, value in exposition.parse_sample_line(line):
            base = name.split(":", 1)[1]
            if base in SAMPLE_NAMES:
                reference.setdefault(base, []).append((labels, value))
    chunk, declared = exposition.page_samples(PAGE_0523)
    assert b"sglang:num_running_reqs" in declared and b"sglang:time_to_first_token_seconds" in declared
    assert (chunk.prefix, chunk.skipped, chunk.ranked) == ("sglang:", 0, False)
    assert chunk.samples == reference
    assert sum(len(v) for v in chunk.samples.values()) > 90


def test_underscore_prefix_reads_the_same() -> None:
    colon = read_page(PAGE_0523)
    underscore = read_page(PAGE_0523.replace("sglang:", "sglang_"))
    assert underscore.prefix == "sglang_"
    assert (underscore.gauges, underscore.counters, underscore.histograms) == (
        colon.gauges,
        colon.counters,
        colon.histograms,
    )


def test_data_parallel_ranks_are_summed_and_tp_copies_read_once() -> None:
    """dp-ranks.prom: DP rank 0 (tp 0-3) runs 30 and queues 5, DP rank 1 (tp 4-7) runs 20 and queues 7."""
    r = read_page(repro("dp-ranks.prom"))
    assert r.gauge_int("running") == 50  # 30 + 20: never only the lowest tp_rank (30), never 8 copies
    assert r.gauge_int("queued") == 12
    assert r.gauge("token_usage") == 0.5  # the fullest DP rank's pool
    assert r.gauge_int("kv_used_tokens") == 22_000
    assert r.counter("decode_tokens") == 1600  # per-DP scheduler counters, one copy each
    assert r.counter("generation_tokens") == 1500  # tokenizer side: one series
    assert r.problems == ()


def test_all_schedulers_reporting_counts_one_batch() -> None:
    """--enable-metrics-for-all-schedulers without DP: 8 TP ranks report the same batch; read one."""
    lines = [f'sglang:num_running_reqs{{{SCHED},tp_rank="{rank}"}} {40 + rank}' for rank in (3, 0, 7, 1)]
    lines += [f'sglang:num_retracted_requests_total{{{SCHED},tp_rank="{rank}"}} 5' for rank in range(8)]
    r = read_page("\n".join(lines))
    assert r.gauge_int("running") == 40
    assert r.counter("retracted_requests") == 5


def test_v1_loads_prometheus_format() -> None:
    """``/v1/loads?format=prometheus``: sglang_ gauges per dp_rank, the queue called num_waiting_reqs."""
    text = "\n".join(
        [
            'sglang_num_running_reqs{dp_rank="0"} 30',
            'sglang_num_running_reqs{dp_rank="1"} 10',
            'sglang_num_waiting_reqs{dp_rank="0"} 4',
            'sglang_max_total_num_tokens{dp_rank="0"} 136800',
        ]
    )
    r = read_page(text)
    assert r.prefix == "sglang_"
    assert (r.gauge_int("running"), r.gauge_int("queued"), r.gauge_int("max_total_num_tokens")) == (
        40,
        4,
        136800,
    )
    assert r.sources["queued"] == "num_waiting_reqs"


def test_older_names_read_as_aliases() -> None:
    r = read_page(repro("old-names.prom"))
    assert r.gauge_int("running") == 7 and r.sources["running"] == "num_requests_running"
    assert r.gauge_int("queued") == 3 and r.sources["queued"] == "num_requests_waiting"
    assert r.gauge("cache_hit_rate") == pytest.approx(0.42)  # a percentage, read as a fraction
    itl = r.histograms["itl"]
    assert r.sources["itl"] == "time_per_output_token_seconds" and itl.count == 40
    assert itl.quantile(0.5) == Quantile(pytest.approx(0.01 + 0.04 * 10 / 20))
    assert r.counter("decode_tokens") is None and r.counter("generation_tokens") == 90000
    assert "ttft" in r.missing and "spec_accept_length" in r.missing
    for alias in ("queue_req", "num_requests_waiting"):
        assert read_page(f'sglang:{alias}{{tp_rank="0"}} 9').gauge_int("queued") == 9
    short = read_page(
        'sglang:time_per_output_token_bucket{le="+Inf"} 2\nsglang:time_per_output_token_count 2'
    )
    assert short.histograms["itl"].count == 2
    assert read_page("sglang:cache_hit_rate 0.3").gauge("cache_hit_rate") == 0.3  # a fraction stays


def test_non_finite_and_impossible_values_make_only_their_field_unknown() -> None:
    r = read_page(repro("inf-gauge.prom"))
    assert r.gauge_int("running") == 12 and r.gauge_int("spec_num_steps") == 3  # the rest is read
    for field in ("token_usage", "gen_throughput", "max_total_num_tokens", "queued", "kv_used_tokens"):
        assert r.gauge(field) is None, field
        assert field in r.missing
    assert r.counter("generation_tokens") is None
    assert len(r.problems) == 6 and all("not a possible" in p for p in r.problems)
    assert any("+Inf" in p or "inf" in p for p in r.problems)


def test_a_quantile_above_the_top_bucket_is_a_lower_bound() -> None:
    ttft = read_page(repro("quantile-above-top.prom")).histograms["ttft"]
    assert ttft.quantile(0.99) == Quantile(400.0, above_top=True)  # "> 400 s", not "400 s"
    assert ttft.quantile(0.5) == Quantile(pytest.approx(0.4 + 0.2 * 10 / 30))
    assert ttft.quantile(0.95) == Quantile(400.0)  # exactly the 95th observation: inside the top bucket


def test_a_histogram_cut_before_inf_or_without_count_gives_no_quantile() -> None:
    r = read_page(repro("histogram-cut.prom"))
    assert r.gauge_int("running") == 4
    ttft, itl = r.histograms["ttft"], r.histograms["itl"]
    assert not ttft.complete and ttft.quantile(0.5) is None  # no +Inf bucket
    assert not itl.complete and itl.quantile(0.5) is None  # +Inf but no _count
    assert any("no +Inf bucket" in p for p in r.problems)
    assert any("inter_token_latency_seconds_count" in p for p in r.problems)
    assert r.skipped_lines == 1  # the line the cut went through


def test_a_repeated_series_is_reported_not_summed() -> None:
    r = read_page(repro("repeated-series.prom"))
    assert r.gauge("running") is None  # neither 10, 12 nor 22
    assert r.gauge_int("queued") == 2
    assert r.problems == ("num_running_reqs: the same series appears more than once on the page (ignored)",)
    # the same labels in another order are the same series
    twice = read_page('sglang:num_running_reqs{a="1",b="2"} 1\nsglang:num_running_reqs{b="2",a="1"} 1')
    assert twice.gauge("running") is None and twice.problems


def test_an_idle_server_reads_zero_not_unknown() -> None:
    r = read_page(repro("idle.prom"))
    assert r.gauge("running") == 0 and r.gauge("gen_throughput") == 0
    for counter in ("decode_tokens", "generation_tokens", "requests", "spec_verify_calls"):
        assert r.counter(counter) == 0, counter  # declared, no series yet: nothing counted so far
    assert r.counter("retracted_requests") is None  # not declared at all: unknown
    assert "ttft" not in r.histograms and r.sources["ttft"] == "time_to_first_token_seconds"


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
    r = read_page(text)
    assert r.gauge_int("running") == 5  # escaped quotes: the library's parser took it
    assert r.gauge("gen_throughput") == 12.5  # a timestamp is allowed
    assert r.gauge("queued") is None and r.gauge("kv_used_tokens") is None
    assert r.skipped_lines == 2


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_never_raises_on_any_text(text: str) -> None:
    read_page(text)
    read_page("sglang:num_running_reqs" + text)
    read_page("# HELP sglang:generation_tokens_total x\nsglang:generation_tokens_total" + text)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["+Inf", "-Inf", "NaN", "1e309", "-1", "1e300", "nan"]),
    st.sampled_from(sorted(SAMPLE_NAMES)),
)
def test_any_value_on_any_line_we_read_is_survived(value: str, name: str) -> None:
    labels = 'le="+Inf",tp_rank="0"' if name.endswith("_bucket") else 'tp_rank="0"'
    r = read_page(f"sglang:{name}{{{labels}}} {value}\nsglang:num_running_reqs 3")
    assert all(math.isfinite(v) for v in (*r.gauges.values(), *r.counters.values()))
    assert r.gauge_int("running") == 3 or name.startswith("num_running_reqs")


def test_histogram_window_delta() -> None:
    older = Histogram.of(((0.1, 10.0), (0.5, 10.0), (math.inf, 10.0)), 10, 0.5)
    newer = Histogram.of(((0.1, 10.0), (0.5, 30.0), (math.inf, 31.0)), 31, 7.0)
    recent = newer.minus(older)
    assert recent is not None and recent.count == 21 and recent.observations == 21
    assert recent.quantile(0.5) == Quantile(pytest.approx(0.1 + 0.4 * 10.5 / 20))
    assert recent.quantile(1.0) == Quantile(0.5, above_top=True)
    assert older.minus(newer) is None  # counts went down: a restarted server
    assert Histogram.of((), 0, 0).quantile(0.5) is None
    assert Histogram.of(((1.0, 0.0), (math.inf, 0.0)), 0, 0).quantile(0.99) is None


def test_successive_pages_read_like_single_pages() -> None:
    page = PAGE_0523.encode()
    parser = MetricsParser()
    first = parser.parse(page)
    assert first == read_page(page) and first.gauge_int("running") == 48
    assert parser.parse(page) is first  # nothing changed: the same reading
    busier = b"\n".join(
        line.rsplit(b" ", 1)[0] + b" 60" if line.startswith(b"sglang:num_running_reqs{") else line
        for line in page.split(b"\n")
    )
    second = parser.parse(busier)
    assert second.gauge_int("running") == 60 and second == read_page(busier)
    assert second.counters == first.counters and second.histograms == first.histograms
    assert parser.parse(page).gauge_int("running") == 48


def test_a_family_that_goes_away_is_not_remembered() -> None:
    page = PAGE_0523.encode()
    parser = MetricsParser()
    assert parser.parse(page).gauge("gen_throughput") is not None
    start = page.index(b"# HELP sglang:gen_throughput ")
    end = page.index(b"# HELP ", start + 1)
    without = page[:start] + page[end:]
    reading = parser.parse(without)
    assert reading.gauge("gen_throughput") is None and reading == read_page(without)


def test_a_page_without_help_lines_is_read_whole() -> None:
    page = PAGE_0523.encode()
    bare = b"\n".join(line for line in page.splitlines() if not line.startswith(b"#")) + b"\n"
    reading = MetricsParser().parse(bare)
    full = read_page(page)
    assert (reading.gauges, reading.counters, reading.histograms) == (
        full.gauges,
        full.counters,
        full.histograms,
    )


def test_a_labelled_counter_cut_off_the_page_is_unknown_not_zero() -> None:
    """Issue 25: a page cut after realtime_tokens_total's prefill series read decode_tokens as 0, which
    the counter window took for a restarted server (history dropped, no rates)."""
    from agent.telemetry.window import CounterWindow

    lines = PAGE_0523.splitlines(keepends=True)
    cut_at = next(
        i
        for i, line in enumerate(lines)
        if 'realtime_tokens_total{engine_type="unified",mode="decode"' in line
    )
    cut = "".join(lines[:cut_at])
    r = read_page(cut)
    assert r.counter("decode_tokens") is None and "decode_tokens" in r.missing
    assert r.counter("prefill_tokens") == 5_000_000 + 2_300_000  # what the page still has is read
    assert read_page(PAGE_0523).counter("decode_tokens") == 1_851_904
    parser = MetricsParser()  # the agent's own path, page after page
    assert parser.parse(PAGE_0523.encode()).counter("decode_tokens") == 1_851_904
    assert parser.parse(cut.encode()).counter("decode_tokens") is None
    # a family printed whole (another follows it) without one label: that label is not used yet, 0
    whole = cut + "# HELP sglang:num_running_reqs The number of running requests.\n"
    assert read_page(whole).counter("decode_tokens") == 0
    window = CounterWindow(keep_s=60)
    assert window.add(0.0, read_page(PAGE_0523).counters, {})
    assert window.add(1.0, r.counters, {}), "a cut page was taken for a restarted server"
    assert window.delta("decode_tokens", 60) is None  # unknown this tick, not a drop to 0
    assert window.delta("prefill_tokens", 60) is not None
