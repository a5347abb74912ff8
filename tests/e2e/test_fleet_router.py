"""The router's view beside the agents', on the real router: three agents, each supervising its own
simulated engine, SGLang's router (``smg``, pinned in the test extra) in front of the three engines
with its metrics port read, and the Fleet screen following the three agents over the real sshd.

The router reaches ``gpu-b``'s engine through a TCP relay (``relay.py``), the network between the
router and that host. First the three views agree: every worker healthy, its circuit closed, the
router's figures beside each agent's, and the router's split against each host's threshold. Then:

- the relay is cut: the router's health checks fail and it marks ``gpu-b`` unhealthy, while
  ``gpu-b``'s agent, which reads its engine directly, still says ready: a finding must say the router
  does not send to a ready host;
- ``gpu-c``'s agent is killed with SIGKILL: its engine lives on and the router still routes to it,
  while the console hears nothing from its agent: a finding must say the router still sends there.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from agent_harness import AgentProc, prepare_profiles, short_root

from console.demo.router import Router
from console.fleet.app import FleetApp
from console.fleet.hosts import HostTarget
from console.fleet.screen import FleetScreen

from .console_kit import FAST_RECONNECT, ssh_target, text_of
from .relay import Relay
from .sshd import Sshd, free_port
from .waiting import until

NAMES = ("gpu-a", "gpu-b", "gpu-c")


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[list[AgentProc], Router, Relay]]:
    router_port, metrics_port = free_port(), free_port()
    agents: list[AgentProc] = []
    router: Router | None = None
    relay: Relay | None = None
    try:
        for i, _name in enumerate(NAMES):
            root = short_root()
            extra = (
                ["--router-url", f"http://127.0.0.1:{router_port}",
                 "--router-metrics-url", f"http://127.0.0.1:{metrics_port}"]
                if i == 0 else []
            )  # fmt: skip
            agent = AgentProc(root=root, profile=prepare_profiles(root), extra_args=extra)
            agents.append(agent)
            agent.start()
        urls = [a.status()["engine_url"] for a in agents]
        port = urlsplit(urls[1]).port
        assert port is not None
        relay = Relay(port)
        urls[1] = relay.url  # the router reaches gpu-b through the relay
        router = Router(urls, router_port, metrics_port, tmp_path / "router.log", policy="round_robin")
        router.start()
        yield agents, router, relay
    finally:
        if router is not None:
            router.stop()
        if relay is not None:
            relay.cut()
        for agent in agents:
            agent.stop()
            shutil.rmtree(agent.root, ignore_errors=True)


async def test_the_router_view_beside_the_agents_and_a_finding_wherever_the_two_disagree(
    sshd: Sshd, fleet: tuple[list[AgentProc], Router, Relay]
) -> None:
    agents, router, relay = fleet
    targets = [HostTarget(n, ssh_target(sshd, a)) for n, a in zip(NAMES, agents, strict=True)]
    targets[1] = HostTarget("gpu-b", targets[1].ssh, worker_url=relay.url)  # as the router names it
    app = FleetApp(targets, operator="e2e", backoff=FAST_RECONNECT)

    def panel() -> str:
        return text_of(app, "#fleet-router")

    def worker_of(host: str) -> object:
        return next((r.worker for r in app.fleet.router_rows() if r.host == host), None)

    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(app.screen, FleetScreen)
        # The three views agree: each worker healthy with its circuit closed, the router's figures
        # read from smg's own endpoints beside each agent's, and no finding.
        await until(
            lambda: (
                {r.host for r in app.fleet.router_rows()} == set(NAMES)
                and all(r.worker.healthy and r.worker.circuit == "closed" for r in app.fleet.router_rows())
                and all(r.agent is not None and r.agent.engine == "ready" for r in app.fleet.router_rows())
            ),
            what="the router's three workers, healthy, beside three ready hosts",
            timeout_s=60,
        )
        assert app.fleet.router is not None and app.fleet.router.metrics_error is None
        await until(lambda: panel().count("closed") == 3, what="the router panel with three circuits")
        text = panel()
        assert router.url.removeprefix("http://") in text and text.count("healthy") == 3
        assert "Split: the router sends" in text and "(threshold 143: drafting)" in text, text
        assert all(f"to {n}" in text for n in NAMES[1:]) and "running to gpu-" in text, text
        assert "read " in text and " s ago" in text, text
        assert app.fleet.router_findings() == []
        await pilot.pause()

        # The network between the router and gpu-b goes: the router takes gpu-b out, its agent
        # still reads the engine as ready.
        relay.cut()
        await until(
            lambda: getattr(worker_of("gpu-b"), "healthy", None) is False,
            what="the router to mark gpu-b unhealthy",
            timeout_s=60,
        )
        assert agents[1].status()["engine_state"] == "ready"
        await until(
            lambda: "The router does not send to gpu-b, whose agent says its engine is ready" in panel(),
            what="a finding: the router skips a ready host",
        )
        assert "UNHEALTHY" in panel() and "none to gpu-b (not routed)" in panel(), panel()
        assert [f.code for f in app.fleet.router_findings()] == ["router_skips_ready_host"]

        # gpu-c's agent dies; its engine lives on, and the router goes on sending to it.
        agents[2].kill()
        await until(lambda: app.fleet.models["gpu-c"].stale, what="gpu-c's link to drop")
        await until(
            lambda: "The router still sends to gpu-c, whose agent this console has not heard from" in panel(),
            what="a finding: the router sends to a host no agent reports on",
        )
        assert getattr(worker_of("gpu-c"), "healthy", None) is True
        codes = {f.code for f in app.fleet.router_findings()}
        assert codes == {"router_skips_ready_host", "router_sends_to_unheard_host"}
