"""A fleet over the real sshd, behind SGLang's real router: three agents, each supervising its own
simulated engine, the router (``smg``, pinned in the test extra) in front of the three engines, and the
console's Fleet screen following all three.

One change goes to the three hosts under one change id; the third host's agent is SIGKILLed by its
own fault point right after its engine took the change, before its outcome is written
(``K25_FAULT_POINT=apply``, ``agent/control/faults.py``). The console names that host, retries
nothing, and its row shows what the host runs: first as last heard with the link down, then, once
the agent is back (as systemd would restart it), the threshold the engine itself reports.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_harness import AgentProc, prepare_profiles, short_root

from agent.control.faults import FAULT_ENV
from agent.sglang import live_control
from console.demo.router import Router
from console.fleet.app import FleetApp
from console.fleet.dialogs import AskChange, ConfirmFleetPlans
from console.fleet.hosts import HostTarget
from console.fleet.ledger import ChangesFile
from console.fleet.screen import FleetScreen
from console.fleet.table import FleetTable

from .console_kit import FAST_RECONNECT, engine_live_state, ssh_target, text_of
from .sshd import Sshd, free_port
from .waiting import until

NAMES = ("gpu-a", "gpu-b", "gpu-c")
NEW_THRESHOLD = 64


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[AgentProc], Router]]:
    router_port, metrics_port = free_port(), free_port()
    agents: list[AgentProc] = []
    router: Router | None = None
    try:
        for i, _name in enumerate(NAMES):
            root = short_root()
            extra = ["--router-url", f"http://127.0.0.1:{router_port}"] if i == 0 else []
            agent = AgentProc(root=root, profile=prepare_profiles(root), extra_args=extra)
            agents.append(agent)
            with monkeypatch.context() as env:
                if i == 2:  # the host whose agent dies in the middle of applying the change
                    env.setenv(FAULT_ENV, "apply")
                agent.start()
        urls = [a.status()["engine_url"] for a in agents]
        router = Router(urls, router_port, metrics_port, tmp_path / "router.log", policy="round_robin")
        router.start()
        yield agents, router
    finally:
        if router is not None:
            router.stop()
        for agent in agents:
            agent.stop()
            shutil.rmtree(agent.root, ignore_errors=True)


def fleet_rows(app: FleetApp) -> dict[str, dict[str, str]]:
    """The Fleet table as the operator reads it: host → column → the cell's words."""
    return app.fleet_screen.query_one("#fleet-table", FleetTable).as_text()


async def live_threshold(engine_url: str) -> dict[str, Any]:
    """The engine's own read-back, asked of the engine while its agent is dead."""
    async with httpx.AsyncClient(timeout=10.0) as client:
        info = (await client.get(f"{engine_url}/server_info")).json()
    state: dict[str, Any] = info["internal_states"][0][live_control.READBACK_FIELD]
    return state


def audit_of(agent: AgentProc, change_id: str) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in agent.audit_path.read_text().splitlines() if x.strip()]
    return [a for a in lines if a["action"].get("change_id") == change_id]


async def test_fleet_of_three_behind_the_real_router_one_change_one_id_a_host_killed_mid_change(
    sshd: Sshd, fleet: tuple[list[AgentProc], Router], tmp_path: Path
) -> None:
    agents, router = fleet
    engine_url = agents[2].status()["engine_url"]  # asked while its agent lives: the engine outlives it
    targets = [HostTarget(n, ssh_target(sshd, a)) for n, a in zip(NAMES, agents, strict=True)]
    app = FleetApp(targets, operator="e2e", backoff=FAST_RECONNECT, changes_file=tmp_path / "changes.jsonl")
    async with app.run_test(size=(120, 36)) as pilot:
        assert isinstance(app.screen, FleetScreen)
        await until(
            lambda: (
                all(r["link"] == "● live" and r["engine"] == "ready" for r in fleet_rows(app).values())
                and len(fleet_rows(app)) == 3
            ),
            what="the three hosts live on the Fleet screen",
        )
        # The router's own view, beside the hosts: each worker it has is one of the fleet's engines.
        await until(
            lambda: app.fleet.router is not None and len(app.fleet.router.workers) == 3,
            what="the router's view of its workers",
        )
        assert {r.host for r in app.fleet.router_rows()} == set(NAMES)
        assert all(r.worker.healthy for r in app.fleet.router_rows())
        await until(lambda: "127.0.0.1:" in text_of(app, "#fleet-router"), what="the router panel")
        panel = text_of(app, "#fleet-router")
        assert router.url.removeprefix("http://") in panel and panel.count("healthy") == 3
        assert {row["thr"] for row in fleet_rows(app).values()} == {"143"}

        # One change for the three hosts: pick all, ask, see the three plans, confirm once.
        await pilot.press("a", "c")
        await until(lambda: isinstance(app.screen, AskChange), what="the change dialog")
        await pilot.press(*str(NEW_THRESHOLD), "enter")
        await until(lambda: isinstance(app.screen, ConfirmFleetPlans), what="the hosts' plans")
        plans = app.screen.plans
        assert [p.host for p in plans] == list(NAMES)
        assert all(p.plan is not None and p.plan.mode == "live" for p in plans)
        await pilot.press("y")
        change = app.fleet.change
        assert change is not None
        await until(lambda: len(change.outcomes) == 3 and not app.fleet.change_note, what="the change to end")
        outcomes = {o.host: o.outcome for o in change.outcomes}
        assert outcomes == {"gpu-a": "applied", "gpu-b": "applied", "gpu-c": "lost"}
        # The whole change's account is kept on the console's side, the lost host named with why.
        (kept,) = ChangesFile(tmp_path / "changes.jsonl").changes()
        assert kept["change_id"] == change.change_id and kept["step"] == "ended"
        assert {h["host"]: h["outcome"] for h in kept["hosts"]} == outcomes
        assert "gpu-c: link lost while applying" in text_of(app, "#fleet-change")

        # Each host's audit holds the change under its one id: two with their outcome, the killed
        # one with its intent (written before its engine was touched) and no outcome yet.
        for agent in agents[:2]:
            lines = audit_of(agent, change.change_id)
            assert [a["phase"] for a in lines] == ["intent", "outcome"]
            assert lines[1]["result"]["status"] == "applied" and lines[1]["operator"] == "e2e"
        killed = audit_of(agents[2], change.change_id)
        assert [a["phase"] for a in killed] == ["intent"]

        # While it is down the row says so and keeps what it was last heard doing, greyed.
        await until(lambda: fleet_rows(app)["gpu-c"]["link"] == "◌ retry", what="gpu-c's link to drop")
        row = fleet_rows(app)["gpu-c"]
        assert row["engine"] == "was ready"
        # The engine took the change before the kill: that is what it runs, and what comes back.
        assert (await live_threshold(engine_url))["threshold"] == NEW_THRESHOLD
        agents[2].start()
        await until(
            lambda: (
                fleet_rows(app)["gpu-c"]["link"] == "● live"
                and fleet_rows(app)["gpu-c"]["thr"] == str(NEW_THRESHOLD)
            ),
            what="gpu-c back, showing the threshold its engine runs",
            timeout_s=40,
        )
        assert {row["thr"] for row in fleet_rows(app).values()} == {str(NEW_THRESHOLD)}
        for agent in agents:
            assert (await engine_live_state(agent))["threshold"] == NEW_THRESHOLD
        # Nothing was retried: one confirm per host, and the restarted agent settled the killed
        # one's intent from what its engine shows.
        settled = audit_of(agents[2], change.change_id)
        assert [a["phase"] for a in settled] == ["intent", "outcome"]
        assert settled[1]["result"]["status"] == "applied"
        for agent in agents[:2]:
            assert len(audit_of(agent, change.change_id)) == 2
        # Enter opens a host's own console, F comes back; the title names the host in view.
        await pilot.press("down", "enter")
        await until(
            lambda: app.in_host == "gpu-b" and "gpu-b" in text_of(app, "#status"), what="gpu-b's console"
        )
        await pilot.press("F")
        await until(lambda: isinstance(app.screen, FleetScreen), what="back to the fleet")
