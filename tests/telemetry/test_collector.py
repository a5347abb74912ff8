"""The Collector over real HTTP: rates from counters, recent percentiles, speculation, KV, fallbacks."""

from __future__ import annotations

import socket
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.profile.schema import Profile
from agent.sglang import kv
from agent.sglang.live_control import READBACK_FIELD
from agent.telemetry.collector import METRICS_RETRY_TICKS, Collector, Identity, Observation
from agent.telemetry.nvml import FixtureSampler, NoGpuSampler
from agent.wire import Gpus

from .conftest import FIXTURES, GPU, ScriptedSglang, profile, serve_scripted

L = 'engine_type="unified",model_name="kimi-k2.5",moe_ep_rank="0",pp_rank="0",tp_rank="0"'
T = 'engine_type="unified",model_name="kimi-k2.5"'
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0)


def page(
    *,
    running: int = 8,
    queued: int = 0,
    decode_tokens: float = 0,
    generation_tokens: float = 0,
    requests: float = 0,
    ttft: dict[float, int] | None = None,
    steps: int = 3,
    accept: float = 2.5,
    retracted: float = 0,
    used: int = 20_000,
    available: int = 100_000,
    evictable: int = 16_800,
    pool: int = 136_800,
    realtime: bool = True,
) -> str:
    """A /metrics page in 0.5.23's shape (names and labels as in the generated full page)."""
    lines = [
        f"sglang:num_running_reqs{{{L}}} {running}",
        f"sglang:num_queue_reqs{{{L}}} {queued}",
        f"sglang:gen_throughput{{{L}}} 123.0",
        f"sglang:kv_used_tokens{{{L}}} {used}",
        f"sglang:kv_available_tokens{{{L}}} {available}",
        f"sglang:kv_evictable_tokens{{{L}}} {evictable}",
        f"sglang:max_total_num_tokens{{{L}}} {pool}",
        f"sglang:page_size{{{L}}} 1",
        f"sglang:spec_num_steps{{{L}}} {steps}",
        f"sglang:spec_num_draft_tokens{{{L}}} {steps + 1 if steps else 1}",
        f"sglang:spec_accept_length{{{L}}} {accept}",
        f"sglang:num_retracted_requests_total{{{L}}} {retracted}",
        f'sglang:generation_tokens_total{{{T},is_streaming="true"}} {generation_tokens}',
        f'sglang:num_requests_total{{{T},is_streaming="true"}} {requests}',
    ]
    if realtime:
        lines.append(f'sglang:realtime_tokens_total{{{L},mode="decode"}} {decode_tokens}')
    cumulative = 0
    for le in (*TTFT_BUCKETS, float("inf")):
        cumulative += (ttft or {}).get(le, 0)
        bound = "+Inf" if le == float("inf") else repr(le)
        lines.append(
            f'sglang:time_to_first_token_seconds_bucket{{{T},is_streaming="true",le="{bound}"}} {cumulative}'
        )
    lines.append(f'sglang:time_to_first_token_seconds_count{{{T},is_streaming="true"}} {cumulative}')
    lines.append(f'sglang:time_to_first_token_seconds_sum{{{T},is_streaming="true"}} 1.0')
    return "\n".join(lines) + "\n"


def server_info(
    *, threshold: int = 4, active: int = 3, adaptive: bool = True, algorithm: str | None = "EAGLE3"
) -> dict[str, Any]:
    return {
        "version": "0.5.23",
        "speculative_algorithm": algorithm,
        "speculative_eagle_topk": 1,
        "speculative_num_steps": 3,
        "speculative_adaptive": adaptive,
        "max_running_requests": 256,
        "page_size": 1,
        "max_total_num_tokens": 136_800,
        "api_key": None,
        "launch_command": "python -m sglang.launch_server --model-path /models/Kimi-K2.5-INT4",
        "internal_states": [
            {
                "effective_max_running_requests_per_dp": 256,
                "decode_cuda_graph_bs": [1, 2, 4, 8, 16, 32, 64, 128, 256],
                "avg_spec_accept_length": 2.4,
                "last_gen_throughput": 321.0,
                READBACK_FIELD: {
                    "threshold": threshold,
                    "pinned_steps": -1,
                    "active_steps": active,
                    "prebuilt_steps": [1, 2, 3],
                    "ema_accept_len": 0.3,
                    "slots": {},
                },
            }
        ],
    }


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5.0) as client:
        yield client


def collector(
    sglang: ScriptedSglang, http: httpx.AsyncClient, clock: Clock, prof: Profile | None = None, **kw: Any
) -> Collector:
    gpus = FixtureSampler(GPU / "h200x2-loaded" / "nvml-loaded.json", scale_to=8)
    return Collector(sglang.url, prof or profile("kimi-k25-eagle3"), gpus, http, clock, **kw)


async def test_throughput_comes_from_counter_deltas(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    clock = Clock()
    c = collector(scripted_sglang, http, clock)
    scripted_sglang.server_info = server_info()
    scripted_sglang.metrics = page(decode_tokens=10_000, generation_tokens=9_000, requests=40)
    first = await c.tick("ready", 4242)
    assert first.throughput.output_tok_s is None  # one reading is no rate
    assert first.throughput.gauge_tok_s == 123.0
    clock.now += 2.0
    scripted_sglang.metrics = page(decode_tokens=11_200, generation_tokens=9_500, requests=44)
    second = await c.tick("ready", 4242)
    tput = second.throughput
    assert tput.output_tok_s == 600.0  # (11200 - 10000) / 2 s, the real-time decode counter
    assert (tput.output_counter, tput.window_s, tput.output_tok_s_raw, tput.raw_window_s) == (
        "decode",
        2.0,
        600.0,
        2.0,
    )
    assert tput.requests_per_s == 2.0
    assert second.metrics_source == "metrics"
    assert (second.time, second.engine_pid) == (clock.now, 4242)
    assert len(second.gpus.devices) == 8
    snap = second.snapshot(7, Identity("kimi-k25-eagle3", True, "sglang"))  # the daemon stamps it
    assert (snap.seq, snap.profile_name, snap.production, snap.engine_kind) == (
        7,
        "kimi-k25-eagle3",
        True,
        "sglang",
    )
    assert snap.throughput is tput and snap.engine_pid == 4242


async def test_older_page_rates_from_generation_tokens_and_restart_resets(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    clock = Clock()
    c = collector(scripted_sglang, http, clock)
    scripted_sglang.metrics = page(generation_tokens=5_000, realtime=False)
    await c.tick("ready", 1)
    clock.now += 1.0
    scripted_sglang.metrics = page(generation_tokens=5_250, realtime=False)
    older = (await c.tick("ready", 1)).throughput
    assert older.output_tok_s == 250.0 and older.output_counter == "generation"
    clock.now += 1.0
    scripted_sglang.metrics = page(generation_tokens=30, realtime=False)  # the server restarted
    assert (await c.tick("ready", 1)).throughput.output_tok_s is None  # never a negative rate


async def test_latency_percentiles_are_recent_not_lifetime(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    clock = Clock()
    c = collector(scripted_sglang, http, clock)
    scripted_sglang.metrics = page(ttft={0.1: 1000})  # a long, fast past
    first = await c.tick("ready", 1)
    assert first.latency.ttft_p50_s is None
    clock.now += 1.0
    scripted_sglang.metrics = page(ttft={0.1: 1000, 1.0: 10})  # ten slow ones just now
    recent = (await c.tick("ready", 1)).latency
    assert recent.ttft_p50_s is not None and 0.8 < recent.ttft_p50_s <= 1.0
    assert (recent.ttft_count, recent.window_s, recent.ttft_p50_above_top) == (10, 1.0, False)
    clock.now += 1.0
    assert (await c.tick("ready", 1)).latency.ttft_p50_s is not None  # still inside the 30 s window
    clock.now += 100.0
    scripted_sglang.metrics = page(ttft={0.1: 1000, 1.0: 10})
    await c.tick("ready", 1)
    clock.now += 1.0
    assert (await c.tick("ready", 1)).latency.ttft_p50_s is None  # nothing new in the window


async def test_speculation_on_and_the_kv_view(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    clock = Clock()
    prof = profile("kimi-k25-eagle3")
    c = collector(scripted_sglang, http, clock, prof)
    scripted_sglang.server_info = server_info(active=3)
    scripted_sglang.metrics = page(running=2, steps=3, accept=2.6)
    snap = await c.tick("ready", 1)
    spec = snap.speculation
    assert (spec.configured, spec.on, spec.steps, spec.topk, spec.draft_tokens) == (True, True, 3, 1, 4)
    assert spec.accept_length == 2.6 and spec.off_reason is None
    assert (spec.accept_source, spec.accept_window_s) == ("gauge", None)  # one page: SGLang's own window
    assert (spec.threshold, spec.threshold_available, spec.pinned_steps, spec.prebuilt_steps) == (
        4,
        True,
        -1,
        [1, 2, 3],
    )
    shape = kv.spec_shape_for_profile(prof)
    on, off = kv.reserve_per_decode(shape, 1), kv.reserve_per_decode(None, 1)
    assert on > off
    view = snap.kv
    assert (view.pool_tokens, view.used_tokens, view.free_tokens) == (136_800, 20_000, 116_800)
    assert (view.reserve_per_request_on, view.reserve_per_request_off) == (on, off)
    assert view.reserved_tokens == 2 * on
    assert view.speculation_share == pytest.approx(2 * (on - off) / 136_800, abs=1e-4)
    # "off" against no drafter (agent.sglang.kv.view_fields): on patch 03's plain path (the profile's
    # default) a 0-step batch reserves a plain decode's KV, not the widest candidate's
    assert prof.speculation.zero_step == "plain"
    assert view.reserve_per_request_zero_step == kv.PLAIN_DECODE_RESERVE < on
    assert view.pool_tokens_without_drafter == kv.drafter_cost(prof, 136_800).pool_tokens_without_drafter
    assert view.draft_share_of_cell is not None and view.draft_weight_bytes is not None


async def test_speculation_off_above_the_threshold_and_by_choice(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    clock = Clock()
    c = collector(scripted_sglang, http, clock)
    scripted_sglang.server_info = server_info(threshold=4, active=0)
    scripted_sglang.metrics = page(running=10, steps=0)
    spec = (await c.tick("ready", 1)).speculation
    assert spec.on is False and spec.off_reason == "above_threshold"
    assert "10 requests are running, at or above the threshold of 4" in (spec.off_detail or "")
    scripted_sglang.metrics = page(running=2, steps=0, accept=1.02)
    spec = (await c.tick("ready", 1)).speculation
    assert spec.off_reason == "adaptive_chose_zero"
    # the detail quotes the accept length the field shows, not the policy's EMA of another window
    assert spec.accept_length == 1.02 and "(accept length 1.02)" in (spec.off_detail or "")
    assert "0.30" not in (spec.off_detail or "")


async def test_no_draft_model_is_not_configured(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    c = collector(scripted_sglang, http, Clock(), profile("kimi-k25-baseline"))
    scripted_sglang.server_info = server_info(algorithm=None)
    scripted_sglang.metrics = page(steps=0, accept=0)
    snap = await c.tick("ready", 1)
    assert snap.speculation.configured is False and snap.speculation.off_reason == "not_configured"
    assert snap.kv.reserve_per_request_on is None and snap.kv.speculation_share is None
    assert snap.kv.reserve_per_request_zero_step is None and snap.kv.pool_tokens_without_drafter is None
    assert snap.kv.reserved_tokens == 8 * kv.reserve_per_decode(None, 1)


async def test_metrics_off_falls_back_to_server_info(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    clock = Clock()
    c = collector(scripted_sglang, http, clock)
    scripted_sglang.metrics = None  # 404: started without --enable-metrics
    scripted_sglang.server_info = server_info()
    snaps = []
    for _ in range(METRICS_RETRY_TICKS + 1):
        snaps.append(await c.tick("ready", 1))
        clock.now += 1
    last = snaps[-1]
    assert last.metrics_source == "server_info"
    assert last.throughput.gauge_tok_s == 321.0
    assert last.speculation.accept_length == 2.4 and last.speculation.accept_source == "server_info"
    assert last.load.running is None and last.kv.pool_tokens == 136_800
    # /metrics is asked again only now and then, /server_info every tick while it is the only source
    assert scripted_sglang.hits["/metrics"] == 2
    assert scripted_sglang.hits["/server_info"] == METRICS_RETRY_TICKS + 1


async def test_server_info_every_few_ticks_and_on_request(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    c = collector(scripted_sglang, http, Clock())
    scripted_sglang.server_info = server_info()
    scripted_sglang.metrics = page()
    for _ in range(10):
        await c.tick("ready", 1)
    assert profile("kimi-k25-eagle3").telemetry.server_info_every_ticks == 5
    assert scripted_sglang.hits["/server_info"] == 2  # ticks 0 (first) and 5
    before = scripted_sglang.hits["/server_info"]
    c.refresh_server_info()
    await c.tick("ready", 1)
    assert scripted_sglang.hits["/server_info"] == before + 1
    assert scripted_sglang.hits["/metrics"] == 11


async def test_a_switch_reads_the_threshold_in_force_at_once(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    """Seen on the real engine: the threshold moved outside the agent (a benchmark on the engine's own
    API), the server stopped drafting, and for up to server_info_every_ticks ticks the agent said the
    adaptive policy chose 0 steps, from a threshold read-back ticks old. A switch in /metrics reads
    /server_info in the same tick, so the reason is the threshold in force."""
    c = collector(scripted_sglang, http, Clock())
    scripted_sglang.server_info = server_info(threshold=64, active=3)
    scripted_sglang.metrics = page(running=8, steps=3)
    await c.tick("ready", 1)
    await c.tick("ready", 1)
    before = scripted_sglang.hits["/server_info"]
    scripted_sglang.server_info = server_info(threshold=2, active=0)  # moved on the engine directly
    scripted_sglang.metrics = page(running=8, steps=0)
    snap = await c.tick("ready", 1)
    assert scripted_sglang.hits["/server_info"] == before + 1
    assert snap.speculation.on is False and snap.speculation.threshold == 2
    assert snap.speculation.off_reason == "above_threshold"
    # no switch, no extra read: the next tick is an ordinary one
    await c.tick("ready", 1)
    assert scripted_sglang.hits["/server_info"] == before + 1


async def test_api_key_is_sent_and_never_kept(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    key = "sk-k25-secret-4711"
    key_file = tmp_path / "api-key"
    key_file.write_text(key + "\n")
    base = profile("kimi-k25-eagle3")
    prof = base.model_copy(update={"server": base.server.model_copy(update={"api_key_file": str(key_file)})})
    info = server_info()
    info["api_key"] = key
    info["launch_command"] = f"python -m sglang.launch_server --api-key {key} --port 30000"
    info["internal_states"][0]["api_key"] = key
    scripted_sglang.server_info = info
    scripted_sglang.api_key = key
    scripted_sglang.metrics = page()
    c = collector(scripted_sglang, http, Clock(), prof)
    snap = await c.tick("ready", 1)
    assert scripted_sglang.auth_seen == [f"Bearer {key}"]
    assert snap.speculation.threshold == 4  # /server_info was read, so the key worked
    assert key not in snap.snapshot(1, Identity(None, False, None)).model_dump_json()
    assert key not in repr(c.server_info)
    assert c.server_info is not None and c.server_info["api_key"] == "<redacted>"


async def test_wrong_key_is_reported_not_raised(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    scripted_sglang.api_key = "the-right-one"
    scripted_sglang.server_info = server_info()
    scripted_sglang.metrics = page()
    c = collector(scripted_sglang, http, Clock(), api_key="a-wrong-one")
    snap = await c.tick("ready", 1)
    assert snap.metrics_source == "metrics"  # /metrics needs no key
    assert snap.speculation.threshold_available is False
    assert c.last_error == "GET /server_info: HTTP 401"


async def test_engine_down_is_not_scraped(scripted_sglang: ScriptedSglang, http: httpx.AsyncClient) -> None:
    c = collector(scripted_sglang, http, Clock())
    snap = await c.tick("stopped", None)
    assert scripted_sglang.hits == {}
    assert snap.metrics_source == "none" and snap.engine_state == "stopped"
    assert snap.speculation.on is None and snap.speculation.off_reason == "engine_down"
    assert snap.gpus.state == "ok" and len(snap.gpus.devices) == 8
    assert [f.code for f in snap.findings] == ["gpu_power_cap"]


async def test_unreachable_engine_gives_an_empty_tick(http: httpx.AsyncClient) -> None:
    c = Collector(
        "http://127.0.0.1:9", profile("local-sim"), NoGpuSampler(), http, Clock(), request_timeout_s=1.0
    )
    snap = await c.tick("ready", 1)
    assert snap.metrics_source == "none"
    assert snap.speculation.off_reason == "unknown"
    assert c.last_error is not None and "ConnectError" in c.last_error
    assert snap.gpus.state == "no_gpu"


async def test_findings_arrive_in_the_snapshot(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    clock = Clock()
    c = collector(scripted_sglang, http, clock)
    scripted_sglang.server_info = server_info(threshold=0)
    scripted_sglang.metrics = page(running=256, queued=40, retracted=10)
    await c.tick("ready", 1)
    clock.now += 1
    scripted_sglang.metrics = page(running=256, queued=40, retracted=13)
    snap: Observation = await c.tick("ready", 1)
    found = {f.code: f for f in snap.findings}
    assert "queueing" in found and "retractions" in found
    assert found["retractions"].title.startswith("3 requests retracted")
    assert snap.load.retractions_total == 13 and snap.load.max_running_requests == 256


class HangingSampler:
    """A GPU driver call that hangs until released (a wedged GPU), then answers."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def sample(self) -> Gpus:
        self.calls += 1
        self.release.wait(30)
        return Gpus(source="nvml", state="ok")

    def close(self) -> None:
        self.release.set()


async def test_a_hanging_gpu_driver_does_not_stall_the_tick(http: httpx.AsyncClient) -> None:
    sampler = HangingSampler()
    c = Collector(None, profile("local-sim"), sampler, http, Clock(), gpu_timeout_s=0.2)
    first = await c.tick("stopped", None)
    assert first.gpus.state == "error" and "did not answer within 0.2 s" in (first.gpus.detail or "")
    second = await c.tick("stopped", None)
    assert second.gpus.state == "error"
    assert sampler.calls == 1  # no second thread piled onto the stuck one
    sampler.release.set()
    third = await c.tick("stopped", None)
    assert third.gpus.state == "ok"


async def test_engine_restarted_on_the_same_port(http: httpx.AsyncClient) -> None:
    """The kept-alive /metrics connection dies with the old server; the next tick reads the new one."""
    state = ScriptedSglang(metrics=page(decode_tokens=50_000))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    clock = Clock()
    c = Collector(f"http://127.0.0.1:{port}", profile("local-sim"), NoGpuSampler(), http, clock)
    async with serve_scripted(state, port):
        assert (await c.tick("ready", 1)).metrics_source == "metrics"
    clock.now += 1
    down = await c.tick("ready", 1)
    assert down.metrics_source == "none" and c.last_error is not None
    state.metrics = page(decode_tokens=100)  # a fresh process: counters start again
    async with serve_scripted(state, port):
        clock.now += 1
        back = await c.tick("ready", 1)
        assert back.metrics_source == "metrics"
        assert back.throughput.output_tok_s is None  # no rate across a restart
        clock.now += 1
        state.metrics = page(decode_tokens=400)
        assert (await c.tick("ready", 1)).throughput.output_tok_s == 300.0
    await c.aclose()


async def test_a_counter_that_appears_later_gets_a_rate(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    """SGLang creates a labelled series at its first use: older points lack it, and must not block the rate."""
    clock = Clock()
    c = collector(scripted_sglang, http, clock)
    scripted_sglang.metrics = page(realtime=False)  # idle server: no decode series yet
    await c.tick("ready", 1)
    for tokens, expected in ((800, None), (1400, 600.0), (2400, 800.0)):
        clock.now += 1
        scripted_sglang.metrics = page(decode_tokens=tokens)
        assert (await c.tick("ready", 1)).throughput.output_tok_s == expected


async def test_without_the_patch_the_profiles_threshold_explains_speculation_off(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    """Unpatched SGLang has no live read-back, but the launch-time 0-step slot still applies."""
    info = server_info()
    del info["internal_states"][0][READBACK_FIELD]
    scripted_sglang.server_info = info
    threshold = profile("kimi-k25-eagle3").speculation.threshold
    assert threshold is not None
    c = collector(scripted_sglang, http, Clock())
    scripted_sglang.metrics = page(running=threshold + 5, steps=0)
    spec = (await c.tick("ready", 1)).speculation
    assert spec.threshold is None and spec.threshold_available is False  # nothing live to show
    assert spec.off_reason == "above_threshold"
    assert f"at or above the threshold of {threshold}" in (spec.off_detail or "")
    scripted_sglang.metrics = page(running=threshold - 5, steps=0)
    assert (await c.tick("ready", 1)).speculation.off_reason == "adaptive_chose_zero"


async def test_an_idle_tick_shares_what_did_not_change(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    """Frozen parts equal to the last tick's are the same objects: an hour of idle ticks costs little."""
    clock = Clock()
    c = collector(scripted_sglang, http, clock)
    scripted_sglang.server_info = server_info()
    scripted_sglang.metrics = page()
    a = await c.tick("ready", 1)
    clock.now += 1
    b = await c.tick("ready", 1)
    clock.now += 1
    d = await c.tick("ready", 1)
    assert b.kv is d.kv and b.speculation is d.speculation and b.gpus is d.gpus and b.load is d.load
    assert a.time != b.time != d.time  # the observations themselves are distinct
    clock.now += 1
    scripted_sglang.metrics = page(running=9)
    e = await c.tick("ready", 1)
    assert e.load is not d.load and e.load.running == 9


async def test_a_page_with_infinite_values_still_gives_the_rest_of_the_tick(
    scripted_sglang: ScriptedSglang, http: httpx.AsyncClient
) -> None:
    """One +Inf gauge once stopped telemetry altogether (int(inf) raised); now it costs one field."""
    scripted_sglang.server_info = server_info()
    scripted_sglang.metrics = (FIXTURES / "repro" / "inf-gauge.prom").read_text()
    c = collector(scripted_sglang, http, Clock())
    snap = await c.tick("ready", 1)
    assert snap.metrics_source == "metrics" and c.last_error is None
    assert snap.load.running == 12 and snap.load.queued is None and snap.kv.used_tokens is None
    assert snap.speculation.on is True and snap.throughput.gauge_tok_s is None
    assert snap.gpus.state == "ok" and len(snap.gpus.devices) == 8
    assert c.last_reading is not None and len(c.last_reading.problems) == 6
