"""The findings that need time: each fires when its condition has held long enough, says since when,
and stays quiet just short of it. Snapshots are built by hand and fed in order, one per second."""

from __future__ import annotations

from typing import Any

import pytest

from agent.profile.schema import Health
from agent.telemetry.health import EngineCounts, HealthWatch
from agent.wire import Finding, KvView, Latency, Load, Snapshot

T0 = 1_700_000_000.0
LIMITS = Health(queue_window_s=10, queue_min_requests=5, ttft_p99_target_s=2.0, kv_used_max_pct=90,
                idle_after_s=20, restart_window_s=60, crash_loop_crashes=3, stale_after_s=5)  # fmt: skip


def snap(t: float, **parts: Any) -> Snapshot:
    base: dict[str, Any] = {
        "seq": int(t),
        "time": T0 + t,
        "engine_state": "ready",
        "engine_pid": 100,
        "metrics_source": "metrics",
        "load": Load(running=4, queued=0, max_running_requests=256),
    }
    return Snapshot(**(base | parts))


def feed(watch: HealthWatch, snaps: list[Snapshot], counts: list[EngineCounts] | None = None) -> Snapshot:
    out = snaps[0]
    for i, s in enumerate(snaps):
        out = watch.observe(s, LIMITS, counts[i] if counts else None)
    return out


def found(s: Snapshot, code: str) -> Finding | None:
    return next((f for f in s.findings if f.code == code), None)


def test_a_growing_queue_fires_after_its_window_with_the_value_and_since() -> None:
    queue = [0, 0, 3, 5, 6, 8, 9, 12, 14, 15, 18, 20, 22, 25, 30]
    snaps = [snap(t, load=Load(running=79, queued=q, max_running_requests=256)) for t, q in enumerate(queue)]
    watch = HealthWatch()
    early = feed(watch, snaps[:12])  # non-empty since t=2: 9 s so far, short of the 10 s window
    assert found(early, "queue_growing") is None
    last = feed(watch, snaps[12:])
    f = found(last, "queue_growing")
    assert f is not None and f.severity == "warning"
    assert (f.value, f.limit, f.unit, f.since) == (30, 5, "requests", T0 + 2)
    assert "30 requests wait" in f.title and "+" in f.title
    assert f.action


def test_a_queue_that_shrinks_or_empties_is_not_growing() -> None:
    shrinking = [
        snap(t, load=Load(running=79, queued=40 - 2 * t, max_running_requests=256)) for t in range(15)
    ]
    assert found(feed(HealthWatch(), shrinking), "queue_growing") is None
    emptied = [snap(t, load=Load(running=79, queued=0 if t == 8 else 20 + t)) for t in range(15)]
    assert found(feed(HealthWatch(), emptied), "queue_growing") is None  # empty 6 s ago: window not full


def test_ttft_over_the_profiles_target() -> None:
    over = snap(0, latency=Latency(ttft_p50_s=1.5, ttft_p99_s=62.4), load=Load(running=79, queued=186))
    f = found(HealthWatch().observe(over, LIMITS), "ttft_over_target")
    assert f is not None and (f.value, f.limit, f.unit) == (62.4, 2.0, "s")
    assert "186 requests wait" in f.explanation and "over capacity" in f.explanation
    at = snap(0, latency=Latency(ttft_p99_s=2.0))
    assert found(HealthWatch().observe(at, LIMITS), "ttft_over_target") is None


@pytest.mark.parametrize(("used", "code_expected", "severity"), [(89_999, False, None), (90_000, True, "warning"),
                                                                  (99_500, True, "critical")])  # fmt: skip
def test_kv_above_the_limit(used: int, code_expected: bool, severity: str | None) -> None:
    s = HealthWatch().observe(snap(0, kv=KvView(pool_tokens=100_000, used_tokens=used)), LIMITS)
    f = found(s, "kv_nearly_full")
    assert (f is not None) is code_expected
    if f is not None:
        assert f.severity == severity and f.unit == "%" and f.limit == 90
        assert f"{used:,} of 100,000 tokens" in f.title


def test_no_traffic_while_ready_after_idle_after_s_and_not_while_starting() -> None:
    idle = [snap(t, load=Load(running=0, queued=0)) for t in range(25)]
    watch = HealthWatch()
    assert found(feed(watch, idle[:20]), "no_traffic") is None  # 19 s idle
    f = found(feed(watch, idle[20:]), "no_traffic")
    assert f is not None and f.since == T0 and f.value == 24.0 and f.severity == "warning"
    starting = [snap(t, engine_state="starting", load=Load(running=0, queued=0)) for t in range(25)]
    assert found(feed(HealthWatch(), starting), "no_traffic") is None
    off = Health(idle_after_s=0)
    assert found(HealthWatch().observe(idle[0], off), "no_traffic") is None


def test_a_planned_restart_is_info_a_crash_a_warning_and_three_crashes_a_crash_loop() -> None:
    snaps = [snap(t, engine_pid=100 if t < 5 else 200) for t in range(10)]
    planned = [EngineCounts(0, 0)] * 5 + [EngineCounts(1, 0)] * 5
    f = found(feed(HealthWatch(), snaps, planned), "engine_restarted")
    assert f is not None and f.severity == "info" and f.since == T0 + 5 and "after a crash" not in f.title
    crashed = [EngineCounts(0, 0)] * 5 + [EngineCounts(1, 1)] * 5
    f = found(feed(HealthWatch(), snaps, crashed), "engine_restarted")
    assert f is not None and f.severity == "warning" and f.title.endswith("after a crash")
    loop = [EngineCounts(n // 3, n // 3) for n in range(10)]  # a crash and a restart every 3 s
    s = feed(HealthWatch(), [snap(t) for t in range(10)], loop)
    f = found(s, "engine_crash_loop")
    assert f is not None and f.severity == "critical" and f.value == 3 and s.findings[0] == f
    gone = feed(HealthWatch(), [snap(t, engine_state="crash_loop", engine_pid=None) for t in range(2)])
    assert found(gone, "engine_crash_loop") is not None


def test_restarts_age_out_of_the_window() -> None:
    snaps = [snap(t) for t in range(70)]
    counts = [EngineCounts(0, 0)] + [EngineCounts(1, 0)] * 69
    assert (
        found(feed(HealthWatch(clear_after_s=0), snaps, counts), "engine_restarted") is None
    )  # 69 s > 60 s ago


def test_stale_telemetry_from_a_ready_engine_names_the_last_error() -> None:
    watch = HealthWatch(clear_after_s=0)
    watch.observe(snap(0), LIMITS)
    for t in range(1, 6):
        s = watch.observe(snap(t, metrics_source="none"), LIMITS, scrape_error="GET /metrics: ReadTimeout")
        assert found(s, "telemetry_stale") is None  # t - 1 < 5 s without a reading
    s = watch.observe(snap(6, metrics_source="none"), LIMITS, scrape_error="GET /metrics: ReadTimeout")
    f = found(s, "telemetry_stale")
    assert f is not None and f.since == T0 + 1 and "ReadTimeout" in f.explanation
    assert found(watch.observe(snap(7), LIMITS), "telemetry_stale") is None
    down = [snap(t, engine_state="stopped", metrics_source="none") for t in range(10)]
    assert found(feed(HealthWatch(clear_after_s=0), down), "telemetry_stale") is None


def test_every_finding_carries_since_when_it_began_and_a_break_resets_it() -> None:
    upstream = Finding(code="retractions", severity="warning", title="t", explanation="e", action="a")
    watch = HealthWatch(clear_after_s=0)
    first = watch.observe(snap(0, findings=[upstream]), LIMITS)
    later = watch.observe(snap(3, findings=[upstream]), LIMITS)
    assert first.findings[0].since == later.findings[0].since == T0
    watch.observe(snap(4), LIMITS)
    again = watch.observe(snap(5, findings=[upstream]), LIMITS)
    assert again.findings[0].since == T0 + 5


def test_a_saturated_tick_says_queue_ttft_and_kv_together() -> None:
    """The demo's 'no health findings' at Running 79 Queued 186, TTFT p50 62 s, KV 91 %."""
    snaps = [
        snap(t, load=Load(running=79, queued=150 + 3 * t, max_running_requests=256),
             latency=Latency(ttft_p50_s=62.4, ttft_p99_s=70.0), kv=KvView(pool_tokens=102_247, used_tokens=93_000))
        for t in range(12)
    ]  # fmt: skip
    codes = {f.code for f in feed(HealthWatch(), snaps).findings}
    assert {"queue_growing", "ttft_over_target", "kv_nearly_full"} <= codes


def test_a_finding_that_flickers_is_held_and_clears_only_after_its_hysteresis() -> None:
    """Issue 27: "runs its maximum of 256" rose and cleared every few seconds while the batch
    hovered at the cap. A finding absent for less than CLEAR_AFTER_S stays, with its first since;
    one absent longer clears."""
    watch = HealthWatch()
    flicker = Finding(code="queueing", severity="info", title="t", explanation="e", action="a")
    shown = []
    for t in range(20):  # the condition holds every other tick
        out = watch.observe(snap(t, findings=[flicker] if t % 2 == 0 else []), LIMITS)
        shown.append(found(out, "queueing"))
    assert all(f is not None for f in shown), "it flapped"
    assert {f.since for f in shown if f is not None} == {T0}
    after = [found(watch.observe(snap(t), LIMITS), "queueing") for t in range(20, 40)]
    cleared_at = next(i for i, f in enumerate(after) if f is None) + 20
    assert cleared_at - 18 >= 10  # last held at t=18, cleared 10 s later, not before
    assert all(f is None for f in after[cleared_at - 20 :])


def test_a_load_finding_the_agents_benchmark_caused_says_so_until_its_requests_leave_the_window() -> None:
    """Issue 39, item 7: the agent's own benchmark raised "Time to first token p99 39.6 s" with advice
    to tune chunked_prefill_size, as if clients caused it. While the benchmark runs, and for the
    telemetry's longest window after it ends, the finding names it, is info and advises nothing for
    it; after that a TTFT still over the target is the clients' again, a warning with its advice."""
    slow = Latency(ttft_p99_s=39.6, ttft_p50_s=20.0)
    watch = HealthWatch(traffic_window_s=30)
    running = watch.observe(snap(0, latency=slow), LIMITS, bench="20261206-064512-ab12cd")
    f = found(running, "ttft_over_target")
    assert f is not None and f.severity == "info", f
    assert "Time to first token p99 39.6 s" in f.title and "benchmark 20261206-064512-ab12cd" in f.title
    assert "its requests, not clients'" in f.explanation
    assert f.action.startswith("Nothing to change for the benchmark's load: this clears within 30 s")
    assert (
        "the clients cause it: check prompt lengths" in f.action
    )  # the usual advice, if it outlives the run
    assert "chunked_prefill_size" in f.action
    ended = found(watch.observe(snap(25, latency=slow), LIMITS), "ttft_over_target")
    assert ended is not None and ended.severity == "info" and "benchmark 20261206" in ended.title
    assert "ended less than a window ago" in ended.explanation
    clients = found(watch.observe(snap(31, latency=slow), LIMITS), "ttft_over_target")
    assert clients is not None and clients.severity == "warning" and "benchmark" not in clients.title
    assert clients.action.startswith("Check prompt lengths")


def test_a_benchmark_leaves_findings_about_the_deployment_as_they_are() -> None:
    """A finding about the deployment or the engine holds whoever sends the requests: a restart during
    a benchmark is still the engine's, and says nothing of the benchmark."""
    watch = HealthWatch()
    watch.observe(snap(0), LIMITS, EngineCounts(0, 0), bench="b1")
    out = watch.observe(snap(1, engine_pid=101), LIMITS, EngineCounts(1, 0), bench="b1")
    f = found(out, "engine_restarted")
    assert f is not None and "benchmark" not in f.title + f.explanation + f.action
