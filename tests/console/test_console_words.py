"""Human words only: values in an operator's units, dialogs that name what they change."""

from __future__ import annotations

from dataclasses import replace
from io import StringIO

from rich.console import Console, RenderableType

from agent.telemetry.throttle import THROTTLE_BITS
from agent.wire import (
    ActionRequest,
    Change,
    Latency,
    Load,
    Plan,
    Snapshot,
    Speculation,
    Throughput,
    make_event,
)
from console.model.actions import ActionTracker
from console.model.bench import BenchRun
from console.model.points import ChartPoint
from console.screens.confirm import plan_text, plan_title
from console.screens.history import panel_notes
from console.screens.overview import bench_note, figures_text
from console.widgets.action_words import action_line
from console.widgets.badge import accept_text, badge_text
from console.widgets.format import duration, human, human_setting, latency, span, throttle

REPRS = ("{'", "None", "True", "False", "[]")


def rendered(renderable: RenderableType, width: int = 100) -> str:
    buffer = StringIO()
    Console(file=buffer, width=width, color_system=None).print(renderable)
    return buffer.getvalue()


def test_values_read_as_an_operator_writes_them() -> None:
    assert [human(v) for v in (None, True, False, [], [1, 2, 3], {"threshold": 64}, 0.85, 3.0, "x")] == [
        "unset", "on", "off", "none", "1, 2, 3", "threshold = 64", "0.85", "3", "x",
    ]  # fmt: skip
    assert human_setting("speculation.threshold", None) == "none (speculate at every batch size)"
    assert human_setting("speculation.live_steps", None) == "unset"
    assert [duration(s) for s in (5, 130, 1800, 3900)] == ["5 s", "2 m 10 s", "30 m", "1 h 5 m"]


def plan(kind: str, value: object, changes: list[Change], mode: str = "restart") -> Plan:
    request = ActionRequest(request_id="r" * 8, kind=kind, value=value)  # type: ignore[arg-type]
    return Plan(action_id="act-1", request=request, mode=mode, reason="why", changes=changes,  # type: ignore[arg-type]
                expected_downtime_s=20.0, drain_timeout_s=60.0)  # fmt: skip


def test_a_dialog_names_the_profile_and_writes_no_python() -> None:
    load = plan("apply_profile", "kimi-k25-baseline", [Change(key="speculation.threshold", old=64, new=None),
                Change(key="speculation.adaptive", old=True, new=False), Change(key="speculation.live_steps",
                old=[1, 2, 3], new=[])])  # fmt: skip
    assert (
        plan_title(load, "kimi-k25-eagle3") == "Load profile kimi-k25-baseline in place of kimi-k25-eagle3?"
    )
    text = rendered(plan_text(load))
    assert "64 → none (speculate at every batch size)" in text
    assert "on → off" in text and "1, 2, 3 → none" in text
    assert not [r for r in REPRS if r in text]
    adaptive = plan("adaptive", False, [])
    assert plan_title(adaptive, "local-sim") == "Turn adaptive speculation off on local-sim?"
    assert (
        plan_title(plan("threshold", 0, [], "live"))
        == "Remove the speculation threshold (speculate at every batch size)?"
    )


def test_the_badge_keeps_the_threshold_before_the_reason_and_the_whole_reason() -> None:
    detail = ("130 requests are running, at or above the threshold of 125: the server decodes without "
              "drafting until the batch is smaller than that.")  # fmt: skip
    spec = Speculation(configured=True, on=False, off_reason="above_threshold", off_detail=detail,
                       threshold=125, threshold_available=True)  # fmt: skip
    text = badge_text(spec, Load(running=130))
    first_line = text.plain.splitlines()[0]
    assert first_line.startswith(" SPEC OFF ") and "threshold 125 · 130 running" in first_line
    assert text.plain.splitlines()[1] == detail


def test_accept_length_is_a_dash_unless_drafting_with_traffic() -> None:
    on = Speculation(on=True, accept_length=2.46)
    assert accept_text(on, Load(running=3)).plain == "2.46"
    assert accept_text(on, Load(running=0)).plain == "– (idle)"
    assert (
        accept_text(Speculation(on=False, accept_length=1.0), Load(running=300)).plain == "– (not drafting)"
    )


def test_the_actions_log_uses_the_consoles_words_for_its_own_actions() -> None:
    tracker = ActionTracker()
    tracker.label("act-1", "adaptive → off")
    applied = make_event(1, 0.0, "action.applied", "adaptive False: done", {"action_id": "act-1"})
    assert action_line(applied, tracker).plain == "00:00:00 adaptive → off: applied"
    failed = make_event(2, 0.0, "action.failed", "topk 2: failed. engine crashed",
                        {"action_id": "act-2", "kind": "topk", "value": 2, "detail": "engine crashed"})  # fmt: skip
    assert action_line(failed, tracker).plain == "00:00:00 topk → 2: failed — engine crashed"


def test_figures_say_the_window_each_number_covers() -> None:
    snap = Snapshot(
        seq=1,
        time=0.0,
        throughput=Throughput(
            output_tok_s=661.0,
            output_tok_s_raw=702.0,
            prompt_tok_s=1200.0,
            prompt_tok_s_raw=1310.0,
            requests_per_s=2.2,
            gauge_tok_s=1730.0,
            window_s=10.0,
            raw_window_s=1.0,
        ),
        load=Load(running=12, queued=0),
        latency=Latency(
            ttft_p50_s=0.062,
            ttft_p99_s=30.0,
            ttft_p99_above_top=True,
            itl_p50_s=0.019,
            itl_p99_s=0.15,
            ttft_count=48,
            itl_count=9812,
            window_s=30.0,
        ),
        speculation=Speculation(on=True, accept_length=2.31, accept_window_s=10.0, accept_source="counters"),
    )
    text = figures_text(snap, raw=False).plain
    assert "Output 661 tok/s over 10 s" in text and "raw" not in text
    assert "TTFT p50 62 ms p99 >30 s (48 requests)" in text and "30,000 ms" not in text
    assert text.splitlines()[-1].endswith("over 30 s")
    assert "Accept len 2.31 over 10 s" in text
    raw = figures_text(snap, raw=True).plain
    assert "raw, last 1 s: output 702 tok/s   prompt 1,310 tok/s" in raw
    assert "1,730" not in raw, "r shows the agent's raw rate, not SGLang's gauge"
    assert not [r for r in REPRS if r in raw]


def test_a_percentile_above_the_top_bucket_reads_as_a_lower_bound() -> None:
    assert [latency(v, top) for v, top in ((30.0, True), (0.5, True), (0.25, False), (None, False))] == [
        ">30 s", ">500 ms", "250 ms", "–",
    ]  # fmt: skip
    assert [span(s) for s in (10.0, 9.99, 6.24, 1.0, 0.25, 0.0, 120.0)] == [
        "10 s", "10 s", "6.2 s", "1 s", "0.2 s", "0 s", "2 m",
    ]  # fmt: skip


def test_the_accept_length_says_where_it_came_from_and_agrees_with_the_off_reason() -> None:
    running = Load(running=5)
    window = Speculation(on=True, accept_length=2.4, accept_window_s=9.5, accept_source="counters")
    assert accept_text(window, running).plain == "2.40 over 9.5 s"
    assert accept_text(window, running, since_switch_on=6.0).plain == (
        "2.40 over 9.5 s, 3.5 s of it before the switch on"
    ), "a window reaching back before the agent's switch-on event says so"
    assert accept_text(window, running, since_switch_on=12.0).plain == "2.40 over 9.5 s"
    gauge = Speculation(on=True, accept_length=2.4, accept_source="gauge")
    assert accept_text(gauge, running).plain == "2.40 (SGLang's gauge: its last decode-log window)"
    lifetime = Speculation(on=True, accept_length=2.4, accept_source="server_info")
    assert accept_text(lifetime, running).plain == "2.40 (lifetime average from /server_info)"
    detail = "SGLang's adaptive policy chose 0 draft steps for this batch size (accept length 1.73): ..."
    chose_zero = Speculation(on=False, off_reason="adaptive_chose_zero", off_detail=detail,
                             accept_length=1.73, accept_window_s=10.0, accept_source="counters")  # fmt: skip
    field = accept_text(chose_zero, running).plain
    assert field == "1.73 over 10 s · not drafting now" and "1.73" in badge_text(chose_zero, running).plain


def test_the_bench_note_names_the_counter_the_agent_reads() -> None:
    run = BenchRun("b1", "running", 0.0, 0.0)
    decode = bench_note(run, "decode")
    generation = bench_note(run, "generation")
    assert decode is not None and "decode-token counter" in decode.plain
    assert generation is not None and "when each request finishes" in generation.plain
    assert bench_note(replace(run, state="finished"), "decode") is None


def test_latency_panels_say_when_they_draw_a_lower_bound() -> None:
    snap = Snapshot(seq=1, time=0.0, latency=Latency(window_s=30.0), throughput=Throughput(window_s=10.0))
    points = [ChartPoint(time=0.0, ttft_p99_ms=30_000.0, ttft_above_top=True), ChartPoint(time=1.0)]
    notes = panel_notes(snap, points)
    assert notes["ttft"] == "over 30 s; >30 s drawn at the top bucket"
    assert notes["itl"] == "over 30 s" and notes["throughput"] == "tok/s over 10 s"


def test_every_clock_event_reason_the_agent_decodes_reads_as_words() -> None:
    """The GPU table's throttle column: each NVML reason the agent can send has short words (no
    snake_case names), several are joined, and nothing held back reads "none"."""
    for _, name in THROTTLE_BITS:
        words = throttle([name])
        assert "_" not in words and len(words) <= 14, (name, words)
    assert throttle(["sw_power_cap", "hw_thermal_slowdown"]) == "power cap, hot (HW)"
    assert throttle(["bit_0x200"]) == "bit 0x200"
    assert throttle([]) == "none"
