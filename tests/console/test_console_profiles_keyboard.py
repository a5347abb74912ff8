"""Issue 39, item 4: a profile is saved from the keyboard, and the list says what runs, whole. Against
the real agent on the simulated engine and the real app (Pilot); fails on the code before issue 39,
where a name typed and Enter did nothing, the list's running mark was cut to "● running," at 80, 100
and 160 columns (so "changed: threshold" never showed) and its sideways scrollbar left a stray "▉"
in the left panel."""

from __future__ import annotations

from console_testkit import RunningAgent, screen_text, text_of, until
from textual.widgets import Button, DataTable, Input, TextArea

from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.profiles import ProfilesScreen

MARK = "● running, changed: threshold"


async def test_a_name_and_enter_saves_and_tab_then_enter_on_save_running_as_saves(
    agent: RunningAgent,
) -> None:
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: app.model.link.state == "connected" and app.model.readings, what="readings")
        await pilot.press("p")
        screen = app.screen
        assert isinstance(screen, ProfilesScreen)
        await until(lambda: screen.entries, what="the profile list")
        name = screen.query_one("#profile-new-name", Input)
        name.focus()
        await pilot.press(*"night-shift", "enter")
        await until(lambda: "Saved the running settings as night-shift" in text_of(app, "#profile-result"),
                    what="the save on Enter")  # fmt: skip
        await until(
            lambda: any(e.name == "night-shift" for e in screen.entries), what="the new profile listed"
        )
        # what was saved is under the list's cursor and shown, the save's words kept below it
        table = screen.query_one("#profile-list", DataTable)
        await until(lambda: 'name = "night-shift"' in screen.query_one(TextArea).text, what="the saved TOML")
        assert screen.selected == "night-shift" and "Saved the running settings" in text_of(
            app, "#profile-result"
        )
        assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value == "night-shift"
        name.focus()
        await pilot.press("ctrl+u", *"day-shift", "tab")
        assert isinstance(app.focused, Button) and app.focused.id == "profile-save", app.focused
        await pilot.press("enter")
        await until(lambda: "Saved the running settings as day-shift" in text_of(app, "#profile-result"),
                    what="the save from the button")  # fmt: skip
    names = {p.stem for p in (agent.root / "profiles").glob("*.toml")}
    assert {"night-shift", "day-shift"} <= names, names


async def test_the_running_mark_is_whole_at_80_100_and_160_columns_with_no_stray_block(
    agent: RunningAgent,
) -> None:
    await agent.act("threshold", 100, operator="pilot")
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: app.model.link.state == "connected" and app.model.readings, what="readings")
        await pilot.press("p")
        screen = app.screen
        assert isinstance(screen, ProfilesScreen)
        await until(lambda: any(e.running and e.changed for e in screen.entries), what="the running mark")
        left = screen.query_one("#profiles-left")
        for size in ((80, 24), (100, 30), (160, 45)):
            await pilot.resize_terminal(*size)
            await until(lambda s=size: app.size == s, what=f"the resize to {size}")
            await pilot.pause()
            text = screen_text(app)
            assert MARK in text, (size, text)
            panel = [line[left.region.x : left.region.right] for line in text.splitlines()]
            stray = [line for line in panel if any(c in line for c in "▉▊▋▌▍▎▏")]
            assert not stray, (size, stray)
