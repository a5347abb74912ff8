"""The console on what the real engine sent: a recording of the agent on the real patched SGLang 0.5.23
(one H200, tiny models, tests/fixtures/real-h200/README.md) played through the console's replay link.

The sim-made recordings behind the other console tests follow the real captures; this one is the real
thing: a live threshold of 0 ("no threshold"), thirty switches forced by a benchmark in two minutes, the
real engine's OFF reasons and counters.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from console_testkit import screen_text, until
from textual.pilot import Pilot

from console.app import ConsoleApp
from console.link.replay import ReplayLink

RECORDING = Path(__file__).parents[1] / "fixtures" / "real-h200" / "oracle-compare.jsonl"
SIZE = (100, 30)
REPRS = ("{'", "None", "True", "False", "[]")


def records(path: Path = RECORDING) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def replay_app(path: Path = RECORDING) -> ConsoleApp:
    return ConsoleApp(ReplayLink(path, speed=0), clock=lambda: 1000.0, operator="real")


async def played(pilot: Pilot[None]) -> ConsoleApp:
    app = pilot.app
    assert isinstance(app, ConsoleApp)
    await until(lambda: app.model.link.state == "ended", what="the whole recording")
    await pilot.pause()
    return app


async def test_every_switch_marker_is_one_of_the_real_agents_events() -> None:
    switches = [
        r["data"]
        for r in records()
        if r["kind"] == "event" and r["data"]["name"] in ("speculation.on", "speculation.off")
    ]
    assert len(switches) >= 10, "the comparison forced switches: the recording should hold them"
    async with replay_app().run_test(size=SIZE) as pilot:
        app = await played(pilot)
        assert [(s.time, s.on) for s in app.model.spec_switches] == [
            (e["time"], e["name"] == "speculation.on") for e in switches
        ]


async def test_the_badge_reads_the_real_engines_live_threshold() -> None:
    """The recording ends with the live threshold at 0: the real engine's read-back of "none"."""
    last = [r["data"] for r in records() if r["kind"] == "snapshot"][-1]["speculation"]
    assert last["threshold"] == 0 and last["threshold_available"] is True
    async with replay_app().run_test(size=SIZE) as pilot:
        app = await played(pilot)
        text = screen_text(app)
        assert "no threshold" in text
        assert ("SPEC ON" if last["on"] else "SPEC OFF") in text


async def test_an_off_moment_shows_the_threshold_and_the_reason(tmp_path: Path) -> None:
    """Cut where the real engine was off above a threshold of 1 (the bench's "off" arm)."""
    lines = RECORDING.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    off = [r for r in rows if r["kind"] == "snapshot"
           and r["data"]["speculation"]["off_reason"] == "above_threshold"]  # fmt: skip
    assert off, "the recording has an OFF above the threshold"
    cut = off[-1]["seq"]
    kept = [line for line, r in zip(lines, rows, strict=True) if r["kind"] == "response" or r["seq"] <= cut]
    path = tmp_path / "off.jsonl"
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    async with replay_app(path).run_test(size=SIZE) as pilot:
        app = await played(pilot)
        text = screen_text(app)
        assert "SPEC OFF" in text and "threshold 1" in text
        assert "running batch at or above the threshold" in text


@pytest.mark.parametrize("key", ["o", "h", "k", "g", "c", "p", "l"])
async def test_no_python_reprs_with_the_real_engines_data(key: str) -> None:
    async with replay_app().run_test(size=SIZE) as pilot:
        app = await played(pilot)
        await pilot.press(key)
        await pilot.pause()
        app.paint_now()
        await pilot.pause()
        text = screen_text(app)
    leaks = [r for r in REPRS if r in text]
    assert not leaks, f"{leaks} on screen {key!r}:\n{text}"
