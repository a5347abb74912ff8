"""Issue 39, item 2: an audit to trust at a glance. Against the real agent on the simulated engine and
the real app (Pilot), the console's doors and the command line's; every test fails on the code before
issue 39, where

* the audit table ran past the screen's edge, so its change column read ``143 → 10`` at 80×24 and its
  "from" column ``unix soc`` at 100×30 (a value cut into another value);
* ``bench_start``, ``bench_end`` and ``profile_save`` recorded operator ``unknown``, while a threshold
  from the same console recorded its user; ``profile_save`` and ``bench_start`` recorded ``–`` as the
  change (no profile name, no run id);
* a refused threshold (-5, 9999) or steps (5, not built) was in the actions log, not in the audit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from console_testkit import REPO, RunningAgent, screen_text, text_of, until
from textual.widgets import DataTable, Input

from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.audit import CHANGE, COLUMNS, AuditScreen
from console.screens.bench import BenchScreen
from console.screens.confirm_dialog import ConfirmDialog
from console.screens.controls import ControlsScreen
from console.screens.profiles import ProfilesScreen


def agent_cli(agent: RunningAgent, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "agent.cli.main", *args, "--state-dir", str(agent.state_dir)]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=60, cwd=REPO, stdin=subprocess.DEVNULL
    )


def records(agent: RunningAgent) -> list[dict[str, Any]]:
    """Every record but intents (one per change: its outcome, or its one line), oldest first."""
    done = agent_cli(agent, "audit", "--json", "--limit", "1000")
    assert done.returncode == 0, done.stderr
    return [r for r in map(json.loads, done.stdout.splitlines()) if r["phase"] != "intent"]


async def confirm(app: ConsoleApp, pilot: Any) -> None:
    await until(lambda: isinstance(app.screen, ConfirmDialog), what="the confirm")
    await pilot.press("y")
    await until(lambda: not isinstance(app.screen, ConfirmDialog), what="the confirm to close")


async def test_every_change_from_the_console_is_audited_with_its_operator_and_what_it_acted_on(
    agent: RunningAgent,
) -> None:
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.model.link.state == "connected" and app.model.readings, what="readings")
        await pilot.press("c")
        controls = app.screen
        assert isinstance(controls, ControlsScreen)
        for kind, typed in (("threshold", "-5"), ("steps", "9999"), ("steps", "5")):
            controls.query_one(f"#in-{kind}", Input).value = typed
            controls.apply(kind)
            await until(lambda t=typed: f"→ {t}" in text_of(app, "#control-result") and "Rejected" in
                        text_of(app, "#control-result"), what=f"{kind} {typed} refused")  # fmt: skip
        controls.query_one("#in-threshold", Input).value = "100"
        controls.apply("threshold")
        await confirm(app, pilot)
        await until(lambda: "applied" in text_of(app, "#control-result"), what="threshold 100 applied")

        await pilot.press("p")
        profiles = app.screen
        assert isinstance(profiles, ProfilesScreen)
        profiles.query_one("#profile-new-name", Input).value = "night-shift"
        profiles.act("save")
        await until(lambda: "Saved" in text_of(app, "#profile-result"), what="the save")

        await pilot.press("b")
        bench = app.screen
        assert isinstance(bench, BenchScreen)
        await until(lambda: bench.available, what="the bench runner")
        bench.query_one("#bench-levels", Input).value = "1,2"
        bench.query_one("#bench-output", Input).value = "64"
        bench.query_one("#bench-input", Input).value = "32"
        bench.start()
        await confirm(app, pilot)
        run = await until(lambda: app.model.bench.running, what="the run on the stream")
        bench.cancel()
        await confirm(app, pilot)
        await until(lambda: (r := app.model.bench.runs.get(run.bench_id)) is not None and r.state != "running",
                    what="the run to end")  # fmt: skip

    lines = await until(lambda: (r := records(agent)) and any(x["action"]["kind"] == "bench_end" for x in r) and r,
                        what="the run's end in the audit")  # fmt: skip
    mine = [r for r in lines if r["action"]["kind"] not in ("reconcile", "live_restore")]
    assert all(r["operator"] == "pilot" for r in mine), [(r["action"]["kind"], r["operator"]) for r in mine]
    refused = [
        (r["action"]["kind"], r["action"]["value"]) for r in mine if r["result"]["status"] == "rejected"
    ]
    assert refused == [("threshold", -5), ("steps", 9999), ("steps", 5)], refused
    assert all(
        r["source"]["via"] == "api" for r in mine if r["action"]["kind"] != "bench_end"
    )  # the agent's own
    by_kind = {r["action"]["kind"]: r for r in mine}
    assert by_kind["profile_save"]["action"]["name"] == "night-shift"
    start = by_kind["bench_start"]
    assert (start["action"]["bench_id"], start["action"]["mode"], start["action"]["levels"]) == (
        run.bench_id, "compare", [1, 2],
    )  # fmt: skip
    end = by_kind["bench_end"]
    assert end["action"]["bench_id"] == run.bench_id and end["result"]["status"] == "cancelled"
    assert by_kind["bench_cancel"]["operator"] == "pilot"

    shown = agent_cli(agent, "audit").stdout
    assert f"pilot  bench_start  run {run.bench_id} (compare at 1, 2)  applied" in shown, shown
    assert "pilot  profile_save  profile night-shift  applied" in shown, shown
    assert "pilot  threshold  threshold → -5  rejected" in shown, shown
    assert "unknown" not in shown, shown


def _cell_slices(app: ConsoleApp, table: DataTable[Any]) -> list[list[str]]:
    """What the screen shows of each row, column by column: each cell's lines read off the screen at
    the column's place and joined (a wrapped change reads whole again)."""
    lines = screen_text(app).splitlines()
    region = table.content_region
    starts, x = [], region.x
    for column in table.ordered_columns:
        width = column.get_render_width(table)
        starts.append((x + 1, x + width - 1))
        x += width
    y = region.y + table.header_height - int(table.scroll_y)
    out = []
    for key in table.rows:
        height = table.rows[key].height
        if y + height > region.bottom:
            break  # below the table's bottom: not on screen whole
        cells = []
        for left, right in starts:
            parts = [lines[y + n][left:right].strip() for n in range(height) if y + n < len(lines)]
            cells.append(" ".join(p for p in parts if p))
        out.append(cells)
        y += height
    return out


async def test_the_audit_table_never_cuts_a_value_at_80_or_100_columns(agent: RunningAgent) -> None:
    # more rows than the table's height at 80x24: its vertical scrollbar must not hide a column's end
    for value in (10, 143, 120, 110, 130, 125, 115, 105, 135, 128, 118, 108, 138, 122, 112, 143, 100):
        await agent.act("threshold", value, operator="night-shift-operator-on-call")
    await agent.act("steps", 2, operator="night-shift-operator-on-call")
    # a run's id ("run 20261206-094512-9c5c63 (sweep at 1)") is one word wider than the change column's
    # floor: it must keep to one line (at 80 columns it once folded after "-094512-")
    async with agent.client() as c:
        started = await c.post("/v1/bench", json={"mode": "sweep", "concurrency": [1], "operator": "pilot"})
        run = started.json()["bench_id"]
        assert (await c.post(f"/v1/bench/{run}/cancel", json={"operator": "pilot"})).status_code == 200
    await agent.act("steps", -1, operator="night-shift-operator-on-call")
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: app.model.link.state == "connected", what="the link")
        await pilot.press("a")
        screen = app.screen
        assert isinstance(screen, AuditScreen)
        table = screen.query_one("#audit-table", DataTable)
        await until(lambda: table.row_count >= 6, what="the audit rows")
        for size in ((80, 24), (100, 30), (160, 45)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            await until(
                lambda s=size: app.size == s and table.size.width <= s[0], what=f"the resize to {size}"
            )
            await pilot.pause()
            assert table.virtual_size.width <= table.scrollable_content_region.width, (
                size
            )  # no sideways scroll
            shown = _cell_slices(app, table)
            for n, record in enumerate(screen.rows[: len(shown)]):
                whole = dict(
                    zip(COLUMNS, [" ".join(str(c).split()) for c in screen.changes[n][1]], strict=True)
                )
                seen = dict(zip(COLUMNS, shown[n], strict=True))
                if not seen["time"]:
                    break  # below the screen's bottom
                assert seen["change"] == whole["change"], (size, seen, whole)  # wrapped, never cut
                for name in ("time", "operator", "kind", "outcome", "from"):
                    cut = seen[name].endswith("…") and whole[name].startswith(seen[name][:-1])
                    assert seen[name] == whole[name] or cut, (size, name, seen[name], whole[name])
                if size != (80, 24):
                    assert seen["from"] == whole["from"] and seen["outcome"] == whole["outcome"], (size, seen)
                assert record.status
            assert any(f"run {run}" in cells[CHANGE] for cells in shown), (size, shown)
        text = screen_text(app)
        assert "threshold 143 → 100" in text and "steps 2 → not pinned" in text, text
