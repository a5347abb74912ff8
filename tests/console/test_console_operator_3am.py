"""Issue 27, the operator at 3 a.m.: each numbered item against the real app (Pilot) and the real
agent on the simulated engine, and the CLI where it is the CLI's. Every test here fails on the code
before issue 27."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from typing import Any

from console_testkit import REPO, RunningAgent, screen_text, text_of, until, until_async
from textual.command import CommandPalette
from textual.widgets import Button, DataTable, Input

from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.audit import AuditScreen
from console.screens.bench import BenchScreen
from console.screens.confirm_dialog import ConfirmDialog
from console.screens.controls import ControlsScreen
from console.screens.overview import OverviewScreen

LONG_BENCH = {"mode": "compare", "concurrency": [1, 2, 4, 8, 16, 32], "repeats": 3, "min_window_s": 3,
              "input_len": 32, "output_len": 64}  # fmt: skip
"""A run long enough to be cancelled while it goes (minutes on the sim at speedup 1)."""


def make_app(agent: RunningAgent) -> ConsoleApp:
    return ConsoleApp(LocalLink(agent.socket), operator="pilot")


def agent_cli(agent: RunningAgent, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "agent.cli.main", *args, "--state-dir", str(agent.state_dir)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          stdin=subprocess.DEVNULL)  # fmt: skip


async def post(agent: RunningAgent, path: str, body: dict[str, Any]) -> Any:
    async with agent.client() as client:
        response = await client.post(path, json=body)
        response.raise_for_status()
        return response.json() if response.content else None


async def connected(app: ConsoleApp) -> None:
    await until(lambda: app.model.link.state == "connected" and app.model.readings, what="readings")


# -- 1. a running benchmark can be cancelled, and the screen is true after it ----------------------


async def test_a_running_bench_is_cancelled_from_the_console_and_the_screen_says_so(
    agent: RunningAgent,
) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await connected(app)
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        await until(lambda: screen.available, what="the bench runner")
        # The start's confirm says how long the plan should take, before anything runs.
        await pilot.click("#bench-start")
        dialog = await until(lambda: isinstance(app.screen, ConfirmDialog) and app.screen, what="the confirm")
        assert "duration" in text_of(app, "#confirm-plan") and "about" in text_of(app, "#confirm-plan")
        await pilot.press("escape")
        await until(lambda: app.screen is screen, what="the confirm to close")
        assert dialog is not app.screen

        bench_id = (await post(agent, "/v1/bench", LONG_BENCH))["bench_id"]
        run = await until(lambda: app.model.bench.running, what="the run on the stream")
        assert run.bench_id == bench_id
        # A first progress tick within seconds (it sat at 0 % for 90 s).
        await until(lambda: (r := app.model.bench.runs.get(bench_id)) is not None and r.phase is not None,
                    timeout_s=10, what="a first progress event")  # fmt: skip
        # The palette finds it; ctrl+k on the Bench screen asks, y cancels.
        await until(lambda: not screen.query_one("#bench-cancel", Button).disabled, what="the cancel button")
        await pilot.press("ctrl+k")
        confirm = await until(
            lambda: isinstance(app.screen, ConfirmDialog) and app.screen, what="its confirm"
        )
        assert confirm.title_text == f"Cancel benchmark {bench_id}?"
        await pilot.press("y")
        await until(lambda: app.model.bench.runs[bench_id].state == "cancelled", what="the cancel")
        await until(lambda: "cancelled" in text_of(app, "#bench-status"), what="the status line")
        shown = screen_text(app)
        assert f"Run {bench_id} is running" not in shown and "cancelled" in shown
    runs = await agent.bench_runs()
    assert runs[0]["bench_id"] == bench_id and runs[0]["state"] == "cancelled"
    async with agent.client() as client:
        audit = (await client.get("/v1/audit")).json()["lines"]
    assert any(line["action"].get("kind") == "bench_cancel" and line["operator"] == "pilot" for line in audit)


async def test_the_palette_finds_cancel_and_colon_opens_it(agent: RunningAgent) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await connected(app)
        await pilot.press("colon")  # k9s' command mode
        palette = await until(
            lambda: isinstance(app.screen, CommandPalette) and app.screen, what="the palette"
        )
        await pilot.press(*"cancel")
        await until(lambda: "Cancel bench run" in screen_text(app), what="the cancel command")
        await pilot.press("escape")
        assert palette is not None


async def test_agent_bench_cancel_stops_the_running_one(agent: RunningAgent) -> None:
    bench_id = (await post(agent, "/v1/bench", LONG_BENCH))["bench_id"]
    done = await asyncio.to_thread(agent_cli, agent, "bench", "cancel", "--yes")
    assert done.returncode == 0, done.stderr
    assert bench_id in done.stdout and "cancelled" in done.stdout
    await until_async(lambda: _state(agent, bench_id, "cancelled"), what="the cancelled run")
    again = await asyncio.to_thread(agent_cli, agent, "bench", "cancel", "--yes")
    assert again.returncode == 0 and "nothing to cancel" in again.stdout


async def _state(agent: RunningAgent, bench_id: str, state: str) -> bool:
    return any(r["bench_id"] == bench_id and r["state"] == state for r in await agent.bench_runs())


# -- 2. a pinned step count can be released -------------------------------------------------------


async def test_a_pin_is_released_from_controls_through_plan_and_confirm(agent: RunningAgent) -> None:
    await agent.act("steps", 2)
    await until_async(lambda: _pinned(agent, 2), what="the pin")
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await connected(app)
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, ControlsScreen)
        button = screen.query_one("#release-steps", Button)
        await until(
            lambda: not button.disabled and "pinned at 2" in text_of(app, "#live-steps"), what="the pin"
        )
        await pilot.click("#release-steps")
        dialog = await until(lambda: isinstance(app.screen, ConfirmDialog) and app.screen, what="the confirm")
        assert "Release the pinned step count" in dialog.title_text
        await pilot.press("y")
        await until_async(lambda: _pinned(agent, -1), what="the release on the engine")
        await until(lambda: "live not pinned" in text_of(app, "#live-steps"), what="the live hint")
    async with agent.client() as client:
        audit = (await client.get("/v1/audit")).json()["lines"]
    assert audit[-1]["action"]["kind"] == "steps" and audit[-1]["after"] == {"speculation.pinned_steps": None}


async def test_agent_control_pins_and_releases_steps_and_sets_the_threshold(agent: RunningAgent) -> None:
    pinned = await asyncio.to_thread(agent_cli, agent, "control", "steps", "2", "--yes")
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    assert "plan: LIVE" in pinned.stdout and "applied" in pinned.stdout
    await until_async(lambda: _pinned(agent, 2), what="the pin")
    released = await asyncio.to_thread(agent_cli, agent, "control", "steps", "release", "--yes")
    assert released.returncode == 0, released.stdout + released.stderr
    assert "not pinned (SGLang's policy chooses)" in released.stdout
    await until_async(lambda: _pinned(agent, -1), what="the release")
    refused = await asyncio.to_thread(agent_cli, agent, "control", "steps", "7", "--yes")
    assert refused.returncode == 1 and "REJECTED" in refused.stdout and "[" not in refused.stdout
    unasked = await asyncio.to_thread(agent_cli, agent, "control", "threshold", "40")  # no terminal, no --yes
    assert unasked.returncode == 2 and "--yes" in unasked.stderr
    assert (await agent.live_state())["threshold"] != 40
    async with agent.client() as client:
        audit = (await client.get("/v1/audit")).json()["lines"]
    outcomes = [line for line in audit if line["phase"] != "intent"]  # each change: its intent, then this
    # the pin, the release, the refused 7 (audited as rejected since issue 39) and the unconfirmed 40
    assert [line["result"]["status"] for line in outcomes[-4:]] == [
        "applied",
        "applied",
        "rejected",
        "cancelled",
    ]


async def _pinned(agent: RunningAgent, steps: int) -> bool:
    return bool((await agent.live_state())["pinned_steps"] == steps)


# -- 3. never a false "healthy" ----------------------------------------------------------------


async def test_a_console_that_lost_its_agent_calls_nothing_healthy_or_ready(agent: RunningAgent) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await connected(app)
        await until(lambda: "healthy" in screen_text(app) or "finding" in screen_text(app), what="health")
        # wait for the engine's ready, not only the link's (on a loaded machine it is still starting)
        await until(lambda: "engine sim ready" in screen_text(app), what="the engine ready")
        os.killpg(agent.proc.pid, signal.SIGKILL)
        await until(lambda: app.model.link.state == "reconnecting", what="the drop")
        app.paint_now()
        await pilot.pause()
        text = screen_text(app)
        assert "✓ healthy" not in text and "health unkno" in text  # the status line may cut the word
        assert "engine sim ready" not in text and "engine was ready" in text
        assert "SPEC ON " not in text.replace("SPEC ON (last heard)", "")
        assert isinstance(app.screen, OverviewScreen)


# -- 4. no stale or contradictory text ------------------------------------------------------------


async def test_profiles_marks_what_changed_and_controls_forget_an_older_result(agent: RunningAgent) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await connected(app)
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, ControlsScreen)
        # A refused value goes back to what runs, not "edited".
        field = screen.query_one("#in-steps", Input)
        field.value = "7"
        await pilot.click("#apply-steps")
        await until(lambda: "Rejected" in text_of(app, "#control-result"), what="the refusal")
        await until(lambda: "edited" not in text_of(app, "#live-steps") and field.value != "7", what="reset")
        # Another console's later action replaces this screen's result line.
        await agent.act("threshold", 77)
        await until(lambda: "threshold → 77" in text_of(app, "#control-result"), what="the newer action")
        # Overview and Controls say the same about steps.
        await until(lambda: "not pinned" in text_of(app, "#live-steps"), what="the steps hint")
        await pilot.press("p")
        table = app.screen.query_one("#profile-list", DataTable)
        await until(lambda: "changed: threshold" in str(table.get_cell("local-sim", "name")),
                    what="the running mark saying what changed")  # fmt: skip


# -- 5. focus: a used field lets go; Esc always leaves one -----------------------------------------


async def test_screen_keys_work_after_a_field_was_used_and_esc_leaves_every_field(
    agent: RunningAgent,
) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await connected(app)
        await pilot.press("c")
        await pilot.click("#in-threshold")
        await until(lambda: isinstance(app.focused, Input), what="the field")
        await pilot.press("enter")  # the live value, planned as nothing to do
        await until(lambda: app.focused is None, what="the field to let go")
        await pilot.press("o")
        await until(lambda: isinstance(app.screen, OverviewScreen), what="o to switch screens")
        for key, selector in (("l", "#log-search"), ("b", "#bench-filter"), ("p", "#profile-filter"),
                              ("k", "#whatif-context")):  # fmt: skip
            await pilot.press(key)
            await pilot.pause()
            app.screen.query_one(selector, Input).focus()
            await pilot.pause()
            footer = screen_text(app).splitlines()[-1]
            assert "esc Leave field" in footer, f"the footer does not say how out of {selector}: {footer!r}"
            await pilot.press("escape")
            await until(lambda: app.focused is None, what=f"Esc to leave {selector}")


# -- 10. "/" filters lists; log search covers the events pane --------------------------------------


async def test_slash_filters_lists_and_search_counts_the_events_pane(agent: RunningAgent) -> None:
    await agent.act("threshold", 66)
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await connected(app)
        await pilot.press("p", "slash")
        await until(lambda: isinstance(app.focused, Input), what="the filter field")
        await pilot.press(*"baseline")
        table = app.screen.query_one("#profile-list", DataTable)
        await until(lambda: [str(k.value) for k in table.rows] == ["kimi-k25-baseline"], what="the filter")
        await pilot.press("escape", "l", "slash", *"threshold", "enter")
        await until(lambda: " in events for " in text_of(app, "#log-status"), what="the search status")
        status = text_of(app, "#log-status")
        count = int(status.split(" in events for ")[0].rsplit(", ", 1)[1])
        assert count >= 1, status


# -- still standing --------------------------------------------------------------------------------


async def test_a_bench_straight_at_the_engine_draws_its_band(agent: RunningAgent) -> None:
    url = (await agent.status())["engine_url"]
    app = make_app(agent)
    async with app.run_test(size=(100, 30)):
        await connected(app)
        done = await asyncio.to_thread(
            agent_cli, agent, "bench", "sweep", "--url", url, "--concurrency", "1", "--repeats", "1",
            "--input-len", "16", "--output-len", "8", "--min-requests", "2", "--min-window-s", "0", timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        run = await until(lambda: next(iter(app.model.bench.runs.values()), None), what="the announced run")
        await until(lambda: app.model.bench.runs[run.bench_id].state == "finished", what="its end")
        assert run.external and run.bench_id in done.stdout
        spans = app.model.bench.spans()
        assert len(spans) == 1 and spans[0].end is not None


# -- 9. agent status says what runs; Ctrl-C on agent serve is quiet ---------------------------------


async def test_agent_status_shows_speculation_findings_and_bench(agent: RunningAgent) -> None:
    await until_async(lambda: _has_snapshot(agent), what="a snapshot")
    done = await asyncio.to_thread(agent_cli, agent, "status")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "speculation: on" in out or "speculation: off" in out, out
    assert "findings:" in out and "bench: none has run" in out
    assert "last seq" not in out


async def _has_snapshot(agent: RunningAgent) -> bool:
    return (await agent.status()).get("latest_snapshot_at") is not None


async def test_ctrl_c_on_agent_serve_with_a_console_attached_prints_no_traceback(agent: RunningAgent) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)):
        await connected(app)
        agent.proc.send_signal(signal.SIGINT)
        code = await asyncio.to_thread(agent.proc.wait, 30)
    assert code == 0
    assert "Traceback" not in agent.log and "CancelledError" not in agent.log, agent.log


# -- 10. agent audit: what changed, who asked, what came of it, with filters -------------------------


async def test_agent_audit_lists_filters_and_prints_json(agent: RunningAgent) -> None:
    first = await asyncio.to_thread(agent_cli, agent, "audit")
    assert first.returncode == 0, first.stdout + first.stderr
    start = first.stdout.splitlines()  # the agent's start: its reconciliation with the engine
    assert start and all("  agent  reconcile  " in line for line in start), first.stdout
    for change in (("threshold", "40"), ("steps", "2")):
        done = await asyncio.to_thread(agent_cli, agent, "control", *change, "--yes", "--operator", "nightly")
        assert done.returncode == 0, done.stdout + done.stderr
    shown = await asyncio.to_thread(agent_cli, agent, "audit")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()[len(start) :]  # one line an action: its intent is not shown again
    assert len(lines) == 2 and all("nightly" in line and "applied" in line for line in lines), lines
    assert "threshold" in lines[0] and "→ 40" in lines[0] and "→ 2" in lines[1]
    assert not any(s in shown.stdout for s in ("{'", "None", "True", "[]"))
    steps = await asyncio.to_thread(agent_cli, agent, "audit", "--kind", "steps", "--since", "1h")
    assert steps.stdout.splitlines() == lines[1:], steps.stdout
    later = await asyncio.to_thread(agent_cli, agent, "audit", "--since", "2099-01-01T00:00")
    assert later.stdout.strip() == "no audit lines match"
    as_json = await asyncio.to_thread(agent_cli, agent, "audit", "--json", "--kind", "threshold")
    records = [json.loads(x) for x in as_json.stdout.splitlines()]
    assert [(r["action"]["kind"], r["phase"], r["operator"]) for r in records] == [
        ("threshold", "intent", "nightly"),
        ("threshold", "outcome", "nightly"),
    ]
    bad = await asyncio.to_thread(agent_cli, agent, "audit", "--since", "yesterday")
    assert bad.returncode == 2 and "--since" in bad.stderr and "30m" in bad.stderr


async def test_the_audit_screen_lists_one_row_a_change_and_filters_them(agent: RunningAgent) -> None:
    """Item 10's console audit view: what changed, who asked, from where, what came of it; "/" filters."""
    await agent.act("threshold", 40, operator="night-shift")
    await agent.act("steps", 2, operator="night-shift")
    app = make_app(agent)
    async with app.run_test(size=(120, 30)) as pilot:
        await connected(app)
        await pilot.press("a")
        screen = app.screen
        assert isinstance(screen, AuditScreen)
        table = screen.query_one("#audit-table", DataTable)
        await until(lambda: table.row_count >= 3, what="the audit rows")  # the start's reconcile, two changes
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert rows[0][2] == "steps" and rows[1][2] == "threshold", rows  # newest first
        assert rows[0][1] == "night-shift" and rows[0][3] == "applied" and rows[0][5] == "unix socket"
        assert "→ 40" in rows[1][4]
        assert "steps applied: " in text_of(app, "#audit-detail")  # the row under the cursor, whole
        assert not any(cell.startswith("intent") for row in rows for cell in row)  # one row a change
        await pilot.press("slash")
        await pilot.press(*"night")
        await until(lambda: table.row_count == 2, what="the filter")  # not the agent's own reconcile
        assert "shown by the filter" in text_of(app, "#audit-status")
        text = screen_text(app)
        assert not any(s in text for s in ("{'", "None", "True", "[]"))
        await pilot.press("ctrl+u", "escape")  # the filter cleared: every row again
        await until(lambda: table.row_count >= 3, what="every row")
        # A change made while the screen is in view comes in once it ends.
        await agent.act("threshold", 64, operator="day-shift")
        await until(lambda: any("day-shift" in str(c) for c in table.get_row_at(0)) if table.row_count else False,
                    what="the new change")  # fmt: skip
