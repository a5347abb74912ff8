"""The router's view beside the agents' (``console.fleet.routing``): the real router's captured answers
(smg 1.13.0, ``fleet_kit``) read by the agent's reader, each worker joined to a host replayed from the
real agent's recording, the disagreements between the two views, and the router's split against each
host's threshold."""

from __future__ import annotations

from typing import Any

from fleet_kit import RECORDING, captured_view

from agent.wire import Finding, Snapshot
from agent.wire.router import RouterView
from console.fleet.model import row_of
from console.fleet.router_words import split_line
from console.fleet.routing import FRESH_S, disagreements, routed, router_rows, split
from console.fleet.state import FleetState
from console.link.replay import load_recording
from console.model import ConsoleModel, LinkStatus


def _model(upto: int, link: str = "connected", **latest: Any) -> ConsoleModel:
    """A host replayed from the real agent's recording; ``latest`` changes its newest snapshot."""
    model = ConsoleModel(clock=lambda: 1000.0)
    snapshots = [
        Snapshot.model_validate(i.data) for i in load_recording(RECORDING)[0][:upto] if i.kind == "snapshot"
    ]
    for snap in snapshots[:-1]:
        model.ingest(snap)
    model.ingest(snapshots[-1].model_copy(update=latest))
    model.set_link(LinkStatus(link))  # type: ignore[arg-type]
    return model


def _urls(view: RouterView) -> tuple[str, str, str]:
    """The captured workers: two healthy (circuit closed), then the killed one (unhealthy, circuit open)."""
    healthy = [w.url for w in view.workers if w.healthy]
    out = [w.url for w in view.workers if not w.healthy]
    return healthy[0], healthy[1], out[0]


def _fleet(models: dict[str, ConsoleModel], urls: dict[str, str], age_s: float = 1.0) -> FleetState:
    now = [1000.0]
    state = FleetState(models, engine_urls=urls, clock=lambda: now[0])
    state.take_router(captured_view(), "gpu-a")
    now[0] += age_s
    return state


def _codes(findings: list[Finding]) -> list[str]:
    return [f.code for f in findings]


def test_the_captured_view_carries_each_workers_health_circuit_and_load() -> None:
    view = captured_view()
    a, b, out = _urls(view)
    by_url = {w.url: w for w in view.workers}
    assert by_url[out].circuit == "open" and by_url[out].circuit_failures == 10 and not routed(by_url[out])
    assert by_url[out].running is None and by_url[out].load_polled_at is None  # smg dropped its load
    for url in (a, b):
        w = by_url[url]
        assert w.circuit == "closed" and routed(w)
        assert w.running == 19 and w.queued == 0 and w.cache_hit_rate == 0.0
        assert w.token_usage is not None and 0 < w.token_usage < 0.02
        assert view.read_at is not None and w.load_polled_at is not None
        assert 0 <= view.read_at - w.load_polled_at < 2


def test_views_that_agree_say_nothing() -> None:
    a, b, out = _urls(captured_view())
    models = {"gpu-a": _model(120), "gpu-b": _model(285), "gpu-c": _model(225, "reconnecting")}
    state = _fleet(models, {"gpu-a": a, "gpu-b": b, "gpu-c": out})
    rows = state.router_rows()
    assert [r.host for r in rows] == ["gpu-a", "gpu-b", "gpu-c"]
    assert all(r.agent is not None and r.agent.name == r.host for r in rows)
    # gpu-c's link is down and the router does not send to it either: the two views agree.
    assert state.router_findings() == []


def test_a_worker_the_router_skips_while_its_agent_says_ready_is_a_finding() -> None:
    a, _b, out = _urls(captured_view())
    state = _fleet({"gpu-a": _model(120), "gpu-b": _model(285)}, {"gpu-a": a, "gpu-b": out})
    findings = state.router_findings()
    assert _codes(findings) == ["router_skips_ready_host"]
    assert (
        "gpu-b" in findings[0].title
        and "circuit breaker is open after 10 failures" in findings[0].explanation
    )
    assert out in findings[0].action


def test_a_worker_the_router_still_sends_to_while_its_agent_is_unheard_crash_looping_or_stale() -> None:
    a, b, _out = _urls(captured_view())
    unheard = _fleet({"gpu-a": _model(120), "gpu-b": _model(285, "reconnecting")}, {"gpu-a": a, "gpu-b": b})
    assert _codes(unheard.router_findings()) == ["router_sends_to_unheard_host"]

    looping = _fleet(
        {"gpu-a": _model(120), "gpu-b": _model(285, engine_state="crash_loop")}, {"gpu-a": a, "gpu-b": b}
    )
    assert [(f.code, f.severity) for f in looping.router_findings()] == [
        ("router_sends_to_crash_loop", "critical")
    ]

    stale = Finding(
        code="telemetry_stale", severity="warning", title="No telemetry", explanation="e", action="a"
    )
    quiet = _fleet({"gpu-a": _model(120, findings=[stale]), "gpu-b": _model(285)}, {"gpu-a": a, "gpu-b": b})
    findings = quiet.router_findings()
    assert _codes(findings) == ["router_sends_to_stale_host"] and "gpu-a" in findings[0].title


def test_an_old_view_says_nothing_of_disagreements_and_a_ready_host_the_router_lacks_is_named() -> None:
    a, _b, out = _urls(captured_view())
    models = {"gpu-a": _model(120), "gpu-b": _model(285)}
    assert _fleet(models, {"gpu-a": a, "gpu-b": out}, age_s=FRESH_S + 1).router_findings() == []
    lacking = _fleet(models, {"gpu-a": a, "gpu-b": "http://10.0.0.6:30000"})
    findings = lacking.router_findings()
    assert [(f.code, f.severity) for f in findings] == [("router_lacks_ready_host", "info")]
    assert findings[0].title == "gpu-b is not one of the router's workers"
    # Where the router cannot be read, nothing is compared.
    unread = RouterView(configured=True, url="http://r", error="cannot reach the router")
    assert disagreements(unread, [], [], 0.0, {}) == []


def test_the_split_puts_each_host_on_its_side_of_its_own_threshold() -> None:
    view = captured_view()
    a, b, out = _urls(view)
    models = {"gpu-a": _model(120), "gpu-b": _model(285), "gpu-c": _model(225, "reconnecting")}
    hosts = [row_of(n, m) for n, m in models.items()]
    rows = router_rows(view, {"gpu-a": a, "gpu-b": b, "gpu-c": out}, hosts)
    entries = {e.host: e for e in split(rows)}
    thresholds = {h.name: h.threshold for h in hosts}
    assert thresholds["gpu-a"] is not None and thresholds["gpu-b"] is not None
    assert entries["gpu-a"].drafting is (thresholds["gpu-a"] > 19)
    assert entries["gpu-b"].drafting is (thresholds["gpu-b"] > 19)
    assert entries["gpu-c"].routed is False
    line = split_line(split(rows)).plain
    first = split(rows)[0]
    side = "drafting" if first.drafting else "not drafting"
    assert line.startswith(
        f"Split: the router sends 19 running to {first.host} (threshold {first.threshold}: {side})"
    )
    assert "none to gpu-c (not routed)" in line
