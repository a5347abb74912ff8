"""SVG snapshots of every screen at 100x30, from a fixed recording of the real agent on the sim.

The recording (data/local-sim.jsonl, re-made by data/record_fixture.py) is played through the
console's own replay link, all at once; charts use times relative to the newest snapshot and the
clock is frozen, so the picture depends on the data alone. After a deliberate change to a screen:
``pytest tests/console/test_console_snapshots.py --snapshot-update`` and review the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from console_testkit import until
from textual.pilot import Pilot

from console.app import ConsoleApp
from console.link.replay import ReplayLink

RECORDING = Path(__file__).parent / "data" / "local-sim.jsonl"
SIZE = (100, 30)


def replay_app(readonly: bool = False) -> ConsoleApp:
    return ConsoleApp(
        ReplayLink(RECORDING, speed=0), readonly=readonly, clock=lambda: 1000.0, operator="snap"
    )


async def settled(pilot: Pilot[None]) -> None:
    app = pilot.app
    assert isinstance(app, ConsoleApp)
    await until(lambda: app.model.link.state == "ended", what="the whole recording")
    await pilot.pause()


def keys_then_settle(*keys: str) -> Any:
    async def run_before(pilot: Pilot[None]) -> None:
        await settled(pilot)
        for key in keys:
            await pilot.press(key)
        await pilot.pause()
        app = pilot.app
        assert isinstance(app, ConsoleApp)
        app.paint_now()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("key", ["o", "k", "g", "c", "b", "p", "l"])
def test_screen(snap_compare: Any, key: str) -> None:
    assert snap_compare(replay_app(), run_before=keys_then_settle(key), terminal_size=SIZE)


def test_help(snap_compare: Any) -> None:
    assert snap_compare(replay_app(), run_before=keys_then_settle("question_mark"), terminal_size=SIZE)
