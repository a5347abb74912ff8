"""The console reads what the agent sends (real app, real agent on the sim, over its real socket).

Switch markers and the events pane come from the agent's ``speculation.*`` events, never from the
console comparing two snapshots; the ``r`` key shows the agent's raw one-tick rate with its window;
every figure's label carries the window the agent says it covers; the client returns the typed
``agent.wire.api`` models.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from console_testkit import RunningAgent, text_of, until
from textual.widgets import RichLog

from agent.profile import parse_profile
from agent.wire import WIRE_VERSION, ActionEvent, Event, EventBase, read_event
from agent.wire.api import AgentStatus, KvWhatIf, ProfileDiff, ProfileList, ProfileRead, VersionInfo
from agent.wire.events import EngineEvent, ReconciledEvent, UnknownEvent
from console.app import ConsoleApp
from console.link import LinkError
from console.link.client import AgentClient
from console.link.local import LocalLink
from console.link.replay import ReplayLink
from console.screens.logs import LogsScreen
from console.widgets.format import num, span

LONG_REQUEST = {"text": "hello " * 64, "sampling_params": {"max_new_tokens": 4000, "ignore_eos": True}}
STREAMS = 4


@pytest.fixture
async def loaded(agent: RunningAgent) -> AsyncIterator[RunningAgent]:
    """The agent with four long requests running on its engine (the engine's own API, as a client)."""
    url = (await agent.status())["engine_url"]
    async with agent.client() as client:
        await client.put("/v1/telemetry", json={"tick_interval_s": 0.25})
    async with httpx.AsyncClient(timeout=300) as engine:
        load = [
            asyncio.create_task(engine.post(f"{url}/generate", json=LONG_REQUEST)) for _ in range(STREAMS)
        ]
        try:
            yield agent
        finally:
            for task in load:
                task.cancel()
            await asyncio.gather(*load, return_exceptions=True)


def switch_events(app: ConsoleApp) -> list[Event]:
    return [e for e in app.model.events if e.name in ("speculation.on", "speculation.off")]


def event_lines(app: ConsoleApp) -> str:
    """The events pane's text, its wrapped lines joined again (a wrap breaks at a space)."""
    lines = app.screen.query_one("#event-log", RichLog).lines
    return " ".join(" ".join(line.text.split()) for line in lines)


async def test_switch_markers_and_the_events_pane_come_from_the_agents_events(loaded: RunningAgent) -> None:
    app = ConsoleApp(LocalLink(loaded.socket), operator="pilot")
    async with app.run_test(size=(160, 45)) as pilot:

        def drafting() -> bool:
            latest = app.model.latest
            return (
                latest is not None and bool(latest.speculation.on) and (latest.load.running or 0) >= STREAMS
            )

        await until(drafting, timeout_s=30, what="speculation on with the four streams running")
        before = len(switch_events(app))
        await loaded.act("threshold", 2)  # 4 running >= 2: the server stops drafting
        off = await until(
            lambda: [e for e in switch_events(app)[before:] if e.name == "speculation.off"],
            timeout_s=30,
            what="the agent's speculation.off event",
        )
        await loaded.act("threshold", 0)  # no threshold: it drafts again
        await until(
            lambda: any(e.name == "speculation.on" and e.seq > off[0].seq for e in switch_events(app)),
            timeout_s=30,
            what="the agent's speculation.on event",
        )
        # Every marker is one of the agent's events, at its time; none is made up from snapshots.
        assert [(s.time, s.on) for s in app.model.spec_switches] == [
            (e.time, e.name == "speculation.on") for e in switch_events(app)
        ]
        newest = app.model.latest
        assert newest is not None
        assert [on for _, on in app.model.chart_marks(300).switches][-2:] == [False, True]

        await pilot.press("l")
        assert isinstance(app.screen, LogsScreen)
        await until(
            lambda: "at or above the threshold of 2" in event_lines(app), what="the off event's words"
        )
        lines = event_lines(app)
        assert "speculation off: " in lines and "speculation on: " in lines
        assert "live speculation threshold 2 → none (speculate at every batch size)" in lines
        assert not [r for r in ("None", "True", "False", "{'", "[]") if r in lines], lines


async def test_r_shows_the_agents_raw_rate_and_every_label_its_window(loaded: RunningAgent) -> None:
    app = ConsoleApp(LocalLink(loaded.socket), operator="pilot")
    async with app.run_test(size=(100, 30)) as pilot:

        def windows_known() -> bool:
            latest = app.model.latest
            return latest is not None and None not in (
                latest.throughput.window_s,
                latest.throughput.raw_window_s,
                latest.throughput.output_tok_s_raw,
                latest.latency.window_s,
            )

        await until(windows_known, timeout_s=30, what="a snapshot with its windows")
        await pilot.press("r")
        figures = await until(lambda: "raw, last" in text_of(app, "#figures") and text_of(app, "#figures"),
                              what="the raw line")  # fmt: skip
        # What is drawn is one of the snapshots the console holds (the stream moves on meanwhile).
        recent = list(app.model.snapshots)[-8:]

        def drawn_from(snap_index: int) -> bool:
            s = recent[snap_index]
            t, lat = s.throughput, s.latency
            assert t.window_s is not None and t.raw_window_s is not None and lat.window_s is not None
            return (
                f"Output {num(t.output_tok_s, unit=' tok/s')} over {span(t.window_s)}" in figures
                and f"raw, last {span(t.raw_window_s)}: output {num(t.output_tok_s_raw, unit=' tok/s')}"
                in figures
                and f"over {span(lat.window_s)}" in figures.splitlines()[-1]
            )

        assert any(drawn_from(n) for n in range(len(recent)) if recent[n].throughput.window_s), figures
        chart_legend = text_of(app, "#throughput-panel .chart-legend")
        assert "raw, last" in chart_legend and "over" in chart_legend
        assert "gauge" not in figures, "r shows the agent's raw rate, not SGLang's gauge"
        await pilot.press("r")
        await until(lambda: "raw, last" not in text_of(app, "#figures"), what="the raw line to go")


async def test_the_client_returns_the_agents_typed_models(agent: RunningAgent) -> None:
    link = LocalLink(agent.socket)
    client = AgentClient(link)
    await link.connect()
    try:
        version = await client.version()
        assert isinstance(version, VersionInfo) and version.wire_version == WIRE_VERSION
        status = await client.status()
        assert isinstance(status, AgentStatus) and status.engine_state == "ready"
        listed = await client.profiles()
        assert isinstance(listed, ProfileList)
        assert {p.name for p in listed.profiles if p.running} == {"local-sim"}
        read = await client.profile("local-sim")
        assert isinstance(read, ProfileRead) and 'name = "local-sim"' in read.toml
        diff = await client.profile_diff("kimi-k25-baseline")
        assert isinstance(diff, ProfileDiff) and diff.plan.mode == "restart" and diff.changes
        whatif = await client.kv_whatif(running=8, context=4000)
        assert isinstance(whatif, KvWhatIf) and whatif.baseline.requests_that_fit > 0
        running = await client.running_profile()
        assert running.name == "local-sim"
        assert parse_profile(running.toml, "running") == parse_profile(read.toml, "file"), (
            "no live change yet"
        )
        lines = await client.logs(20)
        assert lines and all(isinstance(line, str) for line in lines)
        # The stream's events come typed too: each family's payload, none an unknown event (issue 40).
        assert status.speculation is not None and status.speculation.configured
        await agent.act("threshold", 77)
        events: list[Event] = []
        async for item in client.stream(0):
            if isinstance(item, EventBase):
                events.append(item)
                if isinstance(item, ActionEvent) and item.name == "action.applied":
                    break
        families = {type(e).__name__: e for e in events}
        assert not [e for e in events if isinstance(e, UnknownEvent)], [e.data for e in events]
        ready = families["EngineEvent"]
        assert isinstance(ready, EngineEvent) and ready.data.pid == status.engine_pid
        reconciled = families["ReconciledEvent"]
        assert isinstance(reconciled, ReconciledEvent) and reconciled.data.engine is not None
        applied = events[-1]
        assert isinstance(applied, ActionEvent) and (applied.data.kind, applied.data.value) == (
            "threshold",
            77,
        )
        assert applied.data.terminal and applied.data.status == "applied"
    finally:
        await link.close()


async def test_an_answer_of_the_wrong_shape_is_one_clear_error(tmp_path: Path) -> None:
    recording = tmp_path / "odd.jsonl"
    recording.write_text(
        '{"kind": "response", "method": "GET", "path": "/v1/version", '
        '"data": {"agent_version": "9", "api_version": 1, "wire_version": "two"}}\n'
    )
    link = ReplayLink(recording)
    await link.connect()
    with pytest.raises(LinkError, match=r"version this console cannot read \(wire_version: .*integer"):
        await AgentClient(link).version()


async def test_the_events_pane_lists_the_agents_events_and_counts_the_step_changes() -> None:
    """The recording of the demo (real agent, sim): the adaptive policy moved the step count dozens of
    times; those are counted in the pane's title, the switches and findings are listed in full."""
    recording = Path(__file__).parent / "data" / "local-sim.jsonl"
    events = [e for _, e in load_events(recording)]
    steps = [e for e in events if e.name == "speculation.steps"]
    switches = [e for e in events if e.name in ("speculation.on", "speculation.off")]
    assert len(steps) > 5 and switches, "the recording has step changes and switches: re-record it"
    app = ConsoleApp(ReplayLink(recording, speed=0), clock=lambda: 1000.0, operator="pilot")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.model.link.state == "ended", what="the whole recording")
        await pilot.press("l")
        await until(lambda: "speculation" in event_lines(app), what="the events pane")
        title = str(app.screen.query_one("#events-title").render())
        last = steps[-1]
        assert f"{len(steps)} speculation step changes, the last {last.data.old} → {last.data.new}" in title
        lines = event_lines(app)
        assert "speculation steps" not in lines
        assert lines.count("speculation off: ") == sum(e.name == "speculation.off" for e in switches)
        assert [(s.time, s.on) for s in app.model.spec_switches] == [
            (e.time, e.name == "speculation.on") for e in switches
        ]


def load_events(recording: Path) -> list[tuple[int, Event]]:
    from console.link.replay import load_recording

    items, _ = load_recording(recording)
    return [(item.seq, read_event(item.data)) for item in items if item.kind == "event"]
