"""SVG snapshots of every screen, from a fixed recording of the real agent on the sim (the demo's
traffic, a threshold change and a small on/off comparison), at 100x30 and, for Overview and Bench,
at 160x45; six screens again in the light and the high-contrast theme (--theme).

The recording (data/local-sim.jsonl, re-made by data/record_fixture.py) is played through the
console's own replay link, all at once; charts use times relative to the newest snapshot and the
clock is frozen, so the picture depends on the data alone. After a deliberate change to a screen:
``pytest tests/console/test_console_snapshots.py --snapshot-update``, then look at the report.

Besides the pictures, the same screens are read as text: no Python repr anywhere, and with
speculation off the badge shows the threshold and the whole reason at both sizes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from console_testkit import screen_text, until
from textual.pilot import Pilot

from console.app import ConsoleApp
from console.link.replay import ReplayLink

RECORDING = Path(__file__).parent / "data" / "local-sim.jsonl"
SIZE = (100, 30)
WIDE = (160, 45)
SMALL = (80, 24)
SCREEN_KEYS = ["o", "h", "k", "g", "c", "b", "p", "l", "a"]
REPRS = ("{'", "None", "True", "False", "[]")


def replay_app(recording: Path = RECORDING, readonly: bool = False, theme: str = "dark") -> ConsoleApp:
    return ConsoleApp(
        ReplayLink(recording, speed=0), readonly=readonly, clock=lambda: 1000.0, operator="snap", theme=theme
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
        if keys and keys[-1] == "b":  # the Bench screen fetches the run list, then the newest result
            await until(lambda: app.screen.query_one("#bench-chart").has_class("-shown"), what="the result")
        app.paint_now()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("key", SCREEN_KEYS)
def test_screen(snap_compare: Any, key: str) -> None:
    assert snap_compare(replay_app(), run_before=keys_then_settle(key), terminal_size=SIZE)


@pytest.mark.parametrize("key", SCREEN_KEYS)
def test_wide_screen(snap_compare: Any, key: str) -> None:
    assert snap_compare(replay_app(), run_before=keys_then_settle(key), terminal_size=WIDE)


THEMED_KEYS = ["o", "h", "k", "c", "b", "l"]
"""The screens with every kind of colour: badges, status, charts and their legends, the KV bar,
action results, the bench table and chart, log highlights."""


@pytest.mark.parametrize("theme", ["light", "high-contrast"])
@pytest.mark.parametrize("key", THEMED_KEYS)
def test_themed_screen(snap_compare: Any, key: str, theme: str) -> None:
    """The light and high-contrast themes (--theme): the same screens, every colour from the theme."""
    assert snap_compare(replay_app(theme=theme), run_before=keys_then_settle(key), terminal_size=SIZE)


@pytest.mark.parametrize("key", SCREEN_KEYS)
def test_small_screen(snap_compare: Any, key: str) -> None:
    """80x24: every screen usable (issue 27)."""
    assert snap_compare(replay_app(), run_before=keys_then_settle(key), terminal_size=SMALL)


@pytest.mark.parametrize("size", [SMALL, SIZE, WIDE], ids=["80x24", "100x30", "160x45"])
@pytest.mark.parametrize("key", SCREEN_KEYS)
async def test_the_footer_reads_as_words_and_the_header_keeps_its_clock(
    key: str, size: tuple[int, int]
) -> None:
    """Issue 27: below 150 columns the footer read "ohkgcbpl screensspace Pause"; at 100 the header's
    clock was cut ("@ 09:1…") and the GPU screen lost its clock, PCIe and throttle columns."""
    app = replay_app()
    async with app.run_test(size=size) as pilot:
        await keys_then_settle(key)(pilot)
        lines = screen_text(app).splitlines()
    footer, header = lines[-1], lines[0]
    assert "q Quit" in footer and "? Help" in footer, footer
    assert "screensspace" not in footer and re.search(r"\bPause\b", footer), footer
    if size != SMALL:  # at 80 the profile and the state come first; the clock gives way
        assert re.search(r"\d\d:\d\d:\d\d UTC", header), header
    if key == "g":  # every column in view; at 80 the history gives way (it cut PCIe and throttle)
        table = "\n".join(lines)
        for column in ("SM/mem MHz", "PCIe", "throttle"):
            assert column in table, f"{column} cut at {size}:\n{table}"
        assert re.search(r"Gen\d+x\d+\b", table), f"PCIe cut at {size}:\n{table}"
        assert ("history" in table) == (size != SMALL), table
    if key == "h":  # the two charts of a row start on the same line: no legend pushed one down
        tops = [i for i, line in enumerate(lines) if line.count("┌") >= 2]
        assert tops, "\n".join(lines)


async def test_the_gpu_history_gives_way_when_the_terminal_narrows() -> None:
    """Resized from 100 to 80 columns the GPU table drops its history and keeps throttle in view;
    back at 100 the history returns."""
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await keys_then_settle("g")(pilot)
        assert "history" in screen_text(app)
        for width, history in ((SMALL[0], False), (SIZE[0], True)):
            await pilot.resize_terminal(width, SIZE[1])
            await until(lambda h=history: ("history" in screen_text(app)) == h, what=f"the table at {width}")
            text = screen_text(app)
            assert "throttle" in text and re.search(r"Gen\d+x\d+\b", text), text


def test_help(snap_compare: Any) -> None:
    assert snap_compare(replay_app(), run_before=keys_then_settle("question_mark"), terminal_size=SIZE)


@pytest.mark.parametrize("key", [*SCREEN_KEYS, "question_mark"])
async def test_no_python_reprs_on_any_screen(key: str) -> None:
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await keys_then_settle(key)(pilot)
        text = screen_text(app)
    leaks = [r for r in REPRS if r in text]
    assert not leaks, f"{leaks} on screen {key!r}:\n{text}"


def until_speculation_off(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The recording cut after its last snapshot with speculation off above the threshold (the GET
    answers kept), and that snapshot's speculation state."""
    lines = RECORDING.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    off = [r for r in records if r.get("kind") == "snapshot"
           and r["data"]["speculation"].get("off_reason") == "above_threshold"]  # fmt: skip
    assert off, "the recording has no snapshot with speculation off above the threshold: re-record it"
    cut = off[-1]["seq"]
    kept = [
        line for line, r in zip(lines, records, strict=True) if r.get("kind") == "response" or r["seq"] <= cut
    ]
    path = tmp_path / "off.jsonl"
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return path, off[-1]["data"]["speculation"]


def words(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("size", [SIZE, WIDE], ids=["100x30", "160x45"])
async def test_with_speculation_off_the_threshold_and_the_whole_reason_are_on_screen(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    recording, spec = until_speculation_off(tmp_path)
    app = replay_app(recording)
    async with app.run_test(size=size) as pilot:
        await keys_then_settle("o")(pilot)
        text = screen_text(app)
    assert f"threshold {spec['threshold']}" in text
    assert words(spec["off_detail"]) in words(text), f"the OFF reason is cut:\n{text}"
    assert "q Quit" in text, "the footer is cut"


def test_speculation_off(snap_compare: Any, tmp_path: Path) -> None:
    recording, _ = until_speculation_off(tmp_path)
    assert snap_compare(replay_app(recording), run_before=keys_then_settle("o"), terminal_size=SIZE)
