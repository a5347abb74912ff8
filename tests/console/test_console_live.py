"""The real app (Pilot) against a real agent on the simulated engine, over its real UNIX socket."""

from __future__ import annotations

from pathlib import Path

from console_testkit import RunningAgent, text_of, until
from textual.widgets import Button, DataTable, Input, RichLog, Select

from agent.profile.versions import profile_digest
from agent.wire import WIRE_VERSION
from console.app import ConsoleApp
from console.link.backoff import Backoff
from console.link.local import LocalLink
from console.screens.bench import BenchScreen
from console.screens.confirm import ConfirmPlan
from console.screens.confirm_dialog import ConfirmDialog
from console.screens.controls import ControlsScreen
from console.screens.gpus import GpusScreen
from console.screens.kv import KvScreen
from console.screens.logs import LogsScreen
from console.screens.overview import OverviewScreen
from console.screens.profiles import ProfilesScreen
from console.widgets.stacked_bar import StackedBar


def make_app(agent: RunningAgent, **kwargs: object) -> ConsoleApp:
    return ConsoleApp(LocalLink(agent.socket), operator="pilot", **kwargs)  # type: ignore[arg-type]


async def test_every_screen_renders_what_the_agent_sends(agent: RunningAgent) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.model.link.state == "connected", what="the link")
        await until(lambda: len(app.model.snapshots) >= 2, what="two snapshots")
        assert app.model.latest is not None and app.model.latest.wire_version == WIRE_VERSION

        assert isinstance(app.screen, OverviewScreen)
        await until(lambda: "SPEC" in text_of(app, "#badge"), what="the speculation badge")
        assert "Output" in text_of(app, "#figures")

        await pilot.press("k")
        assert isinstance(app.screen, KvScreen)
        bar = app.screen.query_one(StackedBar)
        await until(lambda: sum(s.value for s in bar.segments) > 0, what="the KV pool bar")
        await pilot.click("#whatif-ask")
        await until(lambda: "requests that fit" in text_of(app, "#whatif-result"), what="the what-if answer")

        await pilot.press("g")
        assert isinstance(app.screen, GpusScreen)
        await until(lambda: "GPU telemetry" in text_of(app, "#gpu-source") or "source" in text_of(app, "#gpu-source"),
                    what="the GPU source line")  # fmt: skip

        await pilot.press("c")
        assert isinstance(app.screen, ControlsScreen)
        await until(lambda: "built steps: 1, 2, 3" in text_of(app, "#controls-now"), what="the live controls")

        await pilot.press("b")
        assert isinstance(app.screen, BenchScreen)
        await until(lambda: app.screen.available is not None, what="the bench availability check")  # type: ignore[attr-defined]

        await pilot.press("p")
        assert isinstance(app.screen, ProfilesScreen)
        table = app.screen.query_one("#profile-list", DataTable)
        await until(lambda: "local-sim" in [str(k.value) for k in table.rows], what="the profile list")
        assert "running" in str(table.get_cell("local-sim", "name"))

        await pilot.press("l")
        assert isinstance(app.screen, LogsScreen)
        events = app.screen.query_one("#event-log", RichLog)
        await until(lambda: len(events.lines) > 0, what="events in the log screen")


async def test_threshold_from_controls_reaches_the_engine(agent: RunningAgent) -> None:
    before = (await agent.live_state())["threshold"]
    new = 17 if before != 17 else 18
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("c")
        app.screen.query_one("#in-threshold", Input).value = str(new)
        await pilot.click("#apply-threshold")
        dialog = await until(
            lambda: isinstance(app.screen, ConfirmPlan) and app.screen, what="the confirm dialog"
        )
        assert dialog.plan.mode == "live"
        assert any(c.key == "speculation.threshold" and c.new == new for c in dialog.plan.changes)
        await pilot.press("y")
        await until(lambda: isinstance(app.screen, ControlsScreen), what="the dialog to close")
        await until(lambda: "applied" in text_of(app, "#control-result"), what="the applied result")
    state = await agent.live_state()
    assert state["threshold"] == new


async def test_a_rejected_threshold_shows_why_and_changes_nothing(agent: RunningAgent) -> None:
    before = await agent.live_state()
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("c")
        app.screen.query_one("#in-threshold", Input).value = "-3"
        await pilot.click("#apply-threshold")
        shown = await until(lambda: "Rejected" in text_of(app, "#control-result") and text_of(app, "#control-result"),
                            what="the rejection")  # fmt: skip
        assert "threshold: -3 is outside what it takes; threshold takes a running batch size" in shown
        assert "Nothing was changed" in shown
        assert not isinstance(app.screen, ConfirmPlan)
    assert (await agent.live_state())["threshold"] == before["threshold"]


async def test_cancel_in_the_confirm_dialog_changes_nothing(agent: RunningAgent) -> None:
    before = await agent.live_state()
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("c")
        app.screen.query_one("#in-threshold", Input).value = str((before["threshold"] or 4) + 5)
        await pilot.click("#apply-threshold")
        await until(lambda: isinstance(app.screen, ConfirmPlan), what="the confirm dialog")
        await pilot.press("n")
        await until(lambda: "Cancelled" in text_of(app, "#control-result"), what="the cancel message")
        assert "expires" not in text_of(app, "#control-result"), "the agent was told of the cancel"
    assert (await agent.live_state())["threshold"] == before["threshold"]
    async with agent.client() as client:
        audit = (await client.get("/v1/audit")).json()["lines"]
    actions = [line for line in audit if "action_id" in line["action"] and line["phase"] != "intent"]
    assert [(line["result"]["status"], line["operator"]) for line in actions] == [("cancelled", "pilot")]


async def test_readonly_greys_controls_and_refuses_the_palette_action(agent: RunningAgent) -> None:
    before = await agent.live_state()
    app = make_app(agent, readonly=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("c")
        assert app.screen.query_one("#apply-threshold").disabled
        assert app.screen.query_one("#in-threshold").disabled
        assert app.screen.check_action("apply", ("threshold",)) is None
        await app.run_action("apply('threshold')", app.screen)
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmPlan)
    assert (await agent.live_state())["threshold"] == before["threshold"]


async def test_a_bench_sweep_from_the_console_ends_with_a_table_and_a_recommendation(
    agent: RunningAgent,
) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        await until(lambda: screen.available, what="the agent's bench runner")
        screen.query_one("#bench-levels", Input).value = "1,8"
        screen.query_one("#bench-requests", Input).value = "8"
        screen.query_one("#bench-output", Input).value = "32"
        screen.query_one("#bench-input", Input).value = "64"
        await pilot.click("#bench-start")
        dialog = await until(lambda: isinstance(app.screen, ConfirmDialog) and app.screen, what="the confirm")
        assert dialog.challenge is None, "local-sim is not a production profile: y is enough"
        shown = text_of(app, "#confirm-plan")
        assert "1, 8 concurrent streams (up to 8 at once)" in shown and "local-sim" in shown
        await pilot.press("y")
        await until(lambda: screen.bench_id is not None, what="the run to start")
        table = await until(lambda: "asked" in text_of(app, "#bench-table") and text_of(app, "#bench-table"),
                            timeout_s=120, what="the results table",
                            explain=lambda: text_of(app, "#bench-status"))  # fmt: skip
        assert "on" in table and "off" in table and "ran" in table
        assert f"Run {screen.bench_id}" in table, "the table names the run it belongs to"
        status = text_of(app, "#bench-status")
        assert "Recommended threshold" in status or "No recommendation" in status


async def test_profiles_diff_and_save_running_settings_as_a_new_profile(agent: RunningAgent) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("p")
        screen = app.screen
        assert isinstance(screen, ProfilesScreen)
        table = screen.query_one("#profile-list", DataTable)
        await until(
            lambda: "kimi-k25-baseline" in [str(k.value) for k in table.rows], what="the profile list"
        )
        screen.show_profile("kimi-k25-baseline")
        await until(lambda: screen.selected == "kimi-k25-baseline" and "kimi-k25-baseline" in
                    screen.query_one("#profile-toml").text, what="the profile's TOML")  # type: ignore[attr-defined]  # fmt: skip
        await pilot.click("#profile-diff")
        diff = await until(lambda: "against what runs" in text_of(app, "#profile-result") and
                           text_of(app, "#profile-result"), what="the diff")  # fmt: skip
        assert "speculation.algorithm" in diff and "restart" in diff
        screen.query_one("#profile-new-name", Input).value = "pilot-saved"
        await pilot.click("#profile-save")
        await until(lambda: "Saved the running settings" in text_of(app, "#profile-result"), what="the save")
        await until(
            lambda: "pilot-saved" in [str(k.value) for k in table.rows], what="the new profile listed"
        )
    saved = (agent.root / "profiles" / "pilot-saved.toml").read_text()
    assert 'name = "pilot-saved"' in saved and "threshold = " in saved


async def test_saving_over_an_existing_production_profile_wants_its_name_and_a_stale_one_is_refused(
    agent: RunningAgent,
) -> None:
    """Issue 25: "Save running as" an existing name replaces it only on a confirm (the name typed for a
    production profile), naming the version the list showed; a file changed since is not overwritten."""
    baseline = agent.root / "profiles" / "kimi-k25-baseline.toml"
    original = baseline.read_bytes()
    assert b"production = true" in original
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("p")
        screen = app.screen
        assert isinstance(screen, ProfilesScreen)
        await until(
            lambda: any(e.name == "kimi-k25-baseline" for e in screen.entries), what="the profile list"
        )
        screen.query_one("#profile-new-name", Input).value = "kimi-k25-baseline"
        await pilot.click("#profile-save")
        dialog = await until(lambda: isinstance(app.screen, ConfirmDialog) and app.screen, what="the confirm")
        assert dialog.challenge == "kimi-k25-baseline" and dialog.title_text == "Replace kimi-k25-baseline?"
        dialog.query_one("#confirm-challenge", Input).value = "kimi-k25-baseline"
        await until(lambda: not dialog.query_one("#confirm-yes", Button).disabled, what="the typed name")
        await pilot.click("#confirm-yes")
        await until(lambda: "Saved the running settings" in text_of(app, "#profile-result"), what="the save")
        assert 'name = "kimi-k25-baseline"' in baseline.read_text() and baseline.read_bytes() != original
        kept = sorted((agent.root / "profiles" / "versions" / "kimi-k25-baseline").iterdir())
        assert [v.read_bytes() for v in kept] == [original]
        # The list now holds the new digest; someone edits the file on the host before the next save.
        saved = profile_digest(baseline.read_bytes())
        await until(lambda: any(e.digest == saved for e in screen.entries), what="the list's new digest")
        baseline.write_text(baseline.read_text() + "\n# edited on the host\n")
        edited = baseline.read_bytes()
        await pilot.click("#profile-save")
        dialog = await until(lambda: isinstance(app.screen, ConfirmDialog) and app.screen, what="the confirm")
        await pilot.click("#confirm-yes")
        refused = await until(lambda: "Not saved" in text_of(app, "#profile-result") and
                              text_of(app, "#profile-result"), what="the refusal")  # fmt: skip
        assert "changed since it was read" in refused
    assert baseline.read_bytes() == edited


async def test_space_freezes_the_view_while_data_keeps_arriving(agent: RunningAgent) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 2, what="snapshots")
        await pilot.press("space")
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        frozen_at = screen.painted_version
        received = len(app.model.snapshots)
        await until(lambda: len(app.model.snapshots) >= received + 2, what="more snapshots while paused")
        app.paint_now()
        assert screen.painted_version == frozen_at
        assert "PAUSED" in text_of(app, "#status")
        await pilot.press("space")
        await until(lambda: screen.painted_version > frozen_at, what="the view to move again")


async def test_the_palette_lists_registry_commands_and_runs_them(agent: RunningAgent) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("ctrl+p")
        await pilot.press(*"GPUs")
        await until(lambda: "Screens: GPUs" in str(app.screen.query("CommandList").first().get_option_at_index(0).prompt),
                    what="the GPUs command in the palette")  # fmt: skip
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, GpusScreen), what="the GPUs screen")


async def test_with_no_agent_the_console_keeps_retrying_and_says_why(tmp_path: Path) -> None:
    app = ConsoleApp(LocalLink(tmp_path / "run" / "agent.sock"), operator="pilot", backoff=Backoff(0.05, 0.2))
    async with app.run_test(size=(100, 30)):
        await until(lambda: app.model.link.attempt >= 3, what="several reconnect attempts")
        await until(
            lambda: "Is `agent serve` running" in text_of(app, "#link-banner"), what="the reason on screen"
        )
        assert app.model.link.state == "reconnecting" and app.is_running


async def test_turning_adaptive_off_plans_a_restart_and_cancel_keeps_the_engine(agent: RunningAgent) -> None:
    pid_before = (await agent.status())["engine_pid"]
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 1, what="a snapshot")
        await pilot.press("c")
        app.screen.query_one("#in-adaptive", Select).value = False
        # the palette runs it on the screen; adaptive is start-up state
        await app.run_action("apply('adaptive')", app.screen)
        dialog = await until(lambda: isinstance(app.screen, ConfirmPlan) and app.screen, what="the plan",
                             explain=lambda: text_of(app, "#control-result"))  # fmt: skip
        assert dialog.plan.mode == "restart"
        shown = text_of(app, "#confirm-plan")
        assert "RESTART" in shown and "drain" in shown and "downtime" in shown
        assert "adaptive" in shown and "on → off" in shown and "speculation.adaptive" not in shown
        await pilot.press("escape")
        await until(lambda: "Cancelled" in text_of(app, "#control-result"), what="the cancel")
    assert (await agent.status())["engine_pid"] == pid_before
