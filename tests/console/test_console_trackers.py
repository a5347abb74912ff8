"""The model's trackers: actions by id, bench runs (coalesced, ETA), findings since, the log tail."""

from __future__ import annotations

from agent.wire import Event, Finding, Load, Snapshot, Speculation, make_event
from agent.wire.bench_result import BenchResult
from console.model import ConsoleModel
from console.model.bench_result import parse_result
from console.model.live_settings import live_settings
from console.model.logtail import matching_lines, new_lines, step_match
from console.model.points import point_of
from console.widgets.findings import findings_text


def event(seq: int, t: float, kind: str, name: str, **data: object) -> Event:
    assert name.startswith(f"{kind}.")
    return make_event(
        seq, t, name, f"{name} message", {**PROGRESS, **data} if name == "bench.progress" else data
    )


PROGRESS = {"arm": "sweep", "concurrency": 1, "level_index": 0, "levels": 1, "completed": 0, "requests": 1}
"""What every bench.progress carries (``agent.wire.bench.BenchProgress``) where a test does not say."""


def finding(code: str, severity: str = "warning") -> Finding:
    return Finding(code=code, severity=severity, title=code, explanation="why", action="do this")  # type: ignore[arg-type]


def test_an_action_is_pending_until_its_terminal_event_arrives() -> None:
    model = ConsoleModel()
    model.ingest(event(1, 10.0, "action", "action.planned", action_id="act-1"))
    model.ingest(event(2, 11.0, "action", "action.applying", action_id="act-1"))
    state = model.actions.get("act-1")
    assert state is not None and state.phase == "applying" and not state.ended
    model.ingest(event(3, 40.0, "action", "action.applied", action_id="act-1"))
    state = model.actions.get("act-1")
    assert state is not None and state.ended and state.time == 40.0
    model.ingest(event(4, 41.0, "action", "action.cancelled", action_id="act-2"))
    assert [s.action_id for s in model.actions.ended_since(40.0)] == ["act-1", "act-2"]


def test_bench_progress_is_coalesced_out_of_the_event_log_and_gives_an_eta() -> None:
    model = ConsoleModel()
    model.ingest(event(1, 100.0, "bench", "bench.started", bench_id="b1"))
    for n in range(1, 11):
        model.ingest(event(1 + n, 100.0 + n, "bench", "bench.progress", bench_id="b1", fraction=n / 40,
                           arm="on", concurrency=8, completed=n, requests=40, level_index=0, levels=3))  # fmt: skip
    assert [e.name for e in model.events] == ["bench.started"], "progress floods nothing"
    run = model.bench.latest
    assert run is not None and run.completed == 10 and run.level_index == 0
    assert run.eta_s is not None and abs(run.eta_s - 30.0) < 1e-6  # a quarter done in 10 s: 30 s to go
    model.ingest(event(20, 140.0, "bench", "bench.finished", bench_id="b1", state="finished"))
    assert model.bench.latest is not None and model.bench.latest.fraction == 1.0
    assert model.bench.latest.eta_s is None
    assert [e.name for e in model.events] == ["bench.started", "bench.finished"]


def test_no_eta_from_too_little_of_a_run() -> None:
    model = ConsoleModel()
    model.ingest(event(1, 100.0, "bench", "bench.progress", bench_id="b1", fraction=0.01))
    assert model.bench.latest is not None and model.bench.latest.eta_s is None


def test_a_finding_shows_the_agents_since_and_none_is_made_up() -> None:
    model = ConsoleModel()
    stamped = finding("queueing").model_copy(update={"since": 3.0})
    model.ingest(Snapshot(seq=1, time=10.0, findings=[stamped, finding("kv")]))
    assert {i.finding.code: i.since for i in model.health.items} == {"queueing": 3.0, "kv": None}
    text = findings_text(model.health.items, 70.0).plain
    assert "queueing  since 00:00:03 UTC (1 m 7 s)" in text
    assert "kv\n" in text, "no 'since' the agent did not say"


def test_findings_are_listed_most_severe_first() -> None:
    model = ConsoleModel()
    model.ingest(Snapshot(seq=1, time=1.0, findings=[finding("a", "info"), finding("b", "critical")]))
    assert [i.finding.code for i in model.health.items] == ["b", "a"]
    assert model.health.worst == "critical"


def test_switch_markers_come_from_the_agents_events_only() -> None:
    model = ConsoleModel()
    model.ingest(Snapshot(seq=1, time=1.0, speculation=Speculation(on=True)))
    model.ingest(Snapshot(seq=2, time=2.0, speculation=Speculation(on=False)))
    assert list(model.spec_switches) == [], "two snapshots that differ are no switch the agent reported"
    model.ingest(event(3, 2.0, "speculation", "speculation.off", reason="above_threshold", running=9))
    model.ingest(event(4, 2.5, "speculation", "speculation.threshold", old=4, new=16))
    model.ingest(event(5, 3.0, "speculation", "speculation.on", steps=3, running=9))
    assert [(s.time, s.on) for s in model.spec_switches] == [(2.0, False), (3.0, True)]
    assert [e.name for e in model.events] == ["speculation.off", "speculation.threshold", "speculation.on"]
    model.ingest(Snapshot(seq=6, time=4.0, speculation=Speculation(on=False)))
    assert model.chart_marks(window_s=10).switches == ((-2.0, False), (-1.0, True))


def test_accept_length_is_charted_only_while_drafting_with_traffic() -> None:
    drafting = Snapshot(
        seq=1, time=1.0, load=Load(running=3), speculation=Speculation(on=True, accept_length=2.4)
    )
    off = Snapshot(
        seq=2, time=2.0, load=Load(running=300), speculation=Speculation(on=False, accept_length=1.0)
    )
    idle = Snapshot(
        seq=3, time=3.0, load=Load(running=0), speculation=Speculation(on=True, accept_length=1.0)
    )
    assert [point_of(s).accept_length for s in (drafting, off, idle)] == [2.4, None, None]


def test_live_settings_follow_the_engines_read_back() -> None:
    adaptive = Speculation(
        configured=True, on=True, topk=1, threshold=64, threshold_available=True, pinned_steps=-1
    )
    live = live_settings(adaptive)
    assert (live.threshold, live.steps, live.topk, live.adaptive) == (64, None, 1, True)
    static = Speculation(configured=True, on=True, topk=1, threshold=None, threshold_available=False)
    assert live_settings(static).adaptive is False and live_settings(static).threshold is None
    assert live_settings(Speculation(configured=True, on=None, threshold_available=False)).adaptive is None


def test_log_fetches_are_joined_where_they_overlap() -> None:
    assert new_lines([], ["a", "b"]) == (["a", "b"], True)
    assert new_lines(["a", "b", "c"], ["b", "c", "d", "e"]) == (["d", "e"], False)
    assert new_lines(["x", "y", "x", "y"], ["x", "y", "z"]) == (["z"], False)
    assert new_lines(["a", "b"], ["a", "b"]) == ([], False)
    assert new_lines(["a", "b"], ["q", "r"]) == (["q", "r"], True)


def test_matches_are_case_insensitive_and_n_wraps() -> None:
    lines = ["INFO decode batch", "warn", "Decode again", "x"]
    matches = matching_lines(lines, "decode")
    assert matches == [0, 2] and matching_lines(lines, "") == []
    assert step_match(matches, None, forward=False) == 1
    assert step_match(matches, 1, forward=True) == 0
    assert step_match(matches, 0, forward=False) == 1
    assert step_match([], None, forward=True) is None


def test_a_bench_row_is_labelled_by_the_asked_concurrency_with_the_reached_one() -> None:
    result = parse_result(BenchResult.model_validate({
        "bench_id": "20260101-000000-abcdef", "mode": "compare", "state": "finished",
        "levels": [
            {"concurrency": 64, "on": {"output_throughput": 300.0, "engine_mean_running_reqs": 63.2},
             "off": {"output_throughput": 500.0, "engine_mean_running_reqs": 40.0}},
            {"concurrency": 1, "on": {"output_throughput": 96.0, "engine_mean_running_reqs": 1.0},
             "off": {"unavailable": "no off arm"}},
        ],
        "recommended_threshold": 48, "recommendation": {"reason": "off wins from 48"},
    }))  # fmt: skip
    assert result.arms == ("on", "off")
    first, second = result.levels
    assert first.asked == 64 and first.reached == 40.0 and first.short
    assert second.reached == 1.0 and not second.short and second.arms["off"].unavailable == "no off arm"
    assert result.recommended_threshold == 48 and result.reason == "off wins from 48"


def test_the_agents_own_eta_is_preferred_when_it_sends_one() -> None:
    model = ConsoleModel()
    model.ingest(event(1, 100.0, "bench", "bench.progress", bench_id="b1", fraction=0.5, eta_s=42.0))
    assert model.bench.latest is not None and model.bench.latest.eta_s == 42.0
