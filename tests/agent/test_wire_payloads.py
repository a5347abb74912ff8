"""The wire is typed through (issue 40): every event name has its family and payload, a console of
this version reads a newer agent's unknown name without failing, events recorded before the payloads
were typed still read, and no model of agent/wire carries a ``dict[str, Any]``."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import get_args

import pytest

from agent.wire import EVENT, EventBase, make_event, read_event
from agent.wire.events import EVENT_NAMES, Event, UnknownEvent

REPO = Path(__file__).resolve().parents[2]
RECORDING = REPO / "tests" / "console" / "data" / "local-sim.jsonl"
REQUIRED = {
    "engine.profile_differs": {"running": "a", "given": "b"},
    "engine.port_held": {"host": "127.0.0.1", "port": 30000},
    "engine.record_unreadable": {"record": "/state/engine.json", "problem": "torn"},
    "finding.raised": {"code": "queueing"},
    "finding.cleared": {"code": "queueing"},
    "agent.unknown_event": {"name": "engine.newer"},
}
"""The fields a payload cannot do without, by event name (any other family's are optional)."""


def _minimal(name: str) -> dict[str, object]:
    if name.startswith("action."):
        return {"action_id": "act-1", "kind": "threshold", "value": 64}
    if name.startswith("bench.") and name != "bench.progress":
        return {"bench_id": "b1"}
    if name == "bench.progress":
        return {"bench_id": "b1", "arm": "on", "concurrency": 1, "level_index": 0, "levels": 1,
                "completed": 0, "requests": 8, "fraction": 0.1}  # fmt: skip
    return REQUIRED.get(name, {})


@pytest.mark.parametrize("name", sorted(EVENT_NAMES))
def test_every_event_name_has_its_family_and_payload(name: str) -> None:
    event = make_event(1, 2.0, name, "m", _minimal(name))
    assert isinstance(event, EventBase) and event.name == name and event.kind == name.split(".")[0]
    assert (
        type(event.data).__module__ == "agent.wire.payloads" or type(event.data).__name__ == "PortHolderView"
    )
    again = EVENT.validate_json(EVENT.dump_json(event))
    assert again == event, "a published event reads back as the same typed event"


def test_the_schema_discriminates_every_name() -> None:
    schema = EVENT.json_schema()
    mapping = schema["discriminator"]["mapping"]
    assert set(mapping) == EVENT_NAMES
    members = {ref.rsplit("/", 1)[-1] for ref in mapping.values()}
    assert len(members) == len(get_args(get_args(Event)[0])) == 15


def test_a_newer_agents_name_is_kept_as_an_unknown_event() -> None:
    event = read_event(
        {"seq": 3, "time": 4.0, "kind": "engine", "name": "engine.warmed", "message": "hot", "data": {}}
    )
    assert isinstance(event, UnknownEvent)
    assert (event.seq, event.message, event.data.name) == (3, "hot", "engine.warmed")
    with pytest.raises(
        ValueError, match="pid"
    ):  # a known name whose payload is wrong is an error, not hidden
        read_event({"seq": 3, "time": 4.0, "name": "engine.ready", "message": "m", "data": {"pid": "x"}})


def test_the_events_of_the_committed_recording_read_typed() -> None:
    """Recorded before the payloads were typed (tests/console/data): every event still reads, as its family."""
    events = []
    for line in RECORDING.read_text().splitlines():
        item = json.loads(line)
        if item.get("kind") == "event":
            events.append(read_event(item["data"]))
    assert len(events) > 20
    assert not [e for e in events if isinstance(e, UnknownEvent) and e.data.name != "agent.unknown_event"]
    assert {type(e).__name__ for e in events} >= {"ActionEvent", "SpeculationEvent", "BenchRunEvent"}


def _any_dicts(source: str) -> list[str]:
    """Every ``dict[str, Any]`` (or ``Dict[str, Any]``) in a module's source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and ast.unparse(node).replace(" ", "") in (
            "dict[str,Any]",
            "Dict[str,Any]",
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_dict_of_any_in_the_wire() -> None:
    assert sorted(_any_dicts("def f(x: dict[str, Any]) -> Dict[str, Any]: ...")) == [
        "1: Dict[str, Any]",
        "1: dict[str, Any]",
    ]
    modules = sorted((REPO / "agent" / "wire").glob("*.py"))
    assert len(modules) >= 10
    assert {p.name: hits for p in modules if (hits := _any_dicts(p.read_text()))} == {}
