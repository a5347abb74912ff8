"""The router's view beside the hosts': each worker joined to its host, where the two disagree, and
how the router's split puts each host on its own side of its speculation threshold.

Plain Python over the router's view (``agent.wire.router``, read by an agent from smg's own
endpoints) and the hosts' rows (``console.fleet.model``); the screen draws what this returns.
A disagreement is said only from a router view read recently (``FRESH_S``): an old one could be
describing a fleet that has since moved on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.wire import Finding
from agent.wire.router import RouterView, RouterWorker
from console.fleet.model import FleetRow

FRESH_S = 10.0
"""A router view older than this (five of the console's 2 s polls) says nothing of disagreements."""
CRASH_LOOP = "engine_crash_loop"
TELEMETRY_STALE = "telemetry_stale"
"""The agent's own finding codes (``agent/telemetry/health.py``) this compares with the router's view."""


@dataclass(frozen=True)
class RouterRow:
    worker: RouterWorker
    host: str | None
    """The fleet host whose engine this worker is (by the agent's engine URL or the hosts file's
    worker_url); None: a worker the console has no host for."""
    agent: FleetRow | None = None
    """That host's row: the agent's figures beside the router's."""


def _key(url: str) -> str:
    return url.rstrip("/")


def routed(worker: RouterWorker) -> bool | None:
    """Whether the router sends it requests now: marked healthy and its circuit breaker not open."""
    if worker.healthy is None and worker.circuit is None:
        return None
    return worker.healthy is not False and worker.circuit != "open"


def router_rows(
    view: RouterView, engine_urls: dict[str, str], rows: Sequence[FleetRow] = ()
) -> list[RouterRow]:
    """The router's workers, each named by the host it is (``engine_urls``: host → its engine's URL)."""
    by_url = {_key(url): host for host, url in engine_urls.items()}
    by_name = {row.name: row for row in rows}
    joined = []
    for worker in view.workers:
        host = by_url.get(_key(worker.url))
        joined.append(RouterRow(worker, host, by_name.get(host) if host else None))
    return joined


def _why_out(worker: RouterWorker) -> str:
    if worker.circuit == "open":
        failures = f" after {worker.circuit_failures} failures" if worker.circuit_failures else ""
        return f"its circuit breaker is open{failures}"
    return "it marked the worker unhealthy (its health checks failed)"


def _not_routed(row: RouterRow, agent: FleetRow) -> Finding:
    w = row.worker
    return Finding(
        code="router_skips_ready_host",
        severity="warning",
        title=f"The router does not send to {agent.name}, whose agent says its engine is ready",
        explanation=(
            f"The router has {w.url} out of routing: {_why_out(w)}. {agent.name}'s agent reads the same "
            "engine as ready, so the router cannot reach it at that address, or the engine fails the "
            "router's requests but not the agent's reads. Its share of the traffic goes to the other "
            "hosts, which run fuller (and speculate less) than they would."
        ),
        action=(
            f"From the router's host, curl {w.url}/health and check the network to it; the router's log "
            "says why. It takes the worker back once its health checks pass."
        ),
        unit="host",
    )


def _still_routed(row: RouterRow, agent: FleetRow) -> Finding | None:
    w, name = row.worker, agent.name
    if agent.stale:
        age = f" for {agent.age_s:.0f} s" if agent.age_s is not None and agent.age_s >= 1 else ""
        return Finding(
            code="router_sends_to_unheard_host",
            severity="warning",
            title=f"The router still sends to {name}, whose agent this console has not heard from{age}",
            explanation=(
                f"The router counts {w.url} healthy and routes to it, but the link to {name}'s agent is down: "
                "nothing here says whether that engine still serves. Requests may be going to a host no one "
                "is watching."
            ),
            action=f"Reach {name} (its link says why it is down); read its engine's health from the host.",
            value=agent.age_s,
            unit="s",
        )
    if agent.engine == "crash_loop" or CRASH_LOOP in agent.codes:
        return Finding(
            code="router_sends_to_crash_loop",
            severity="critical",
            title=f"The router still sends to {name}, whose agent reports its engine crash-looping",
            explanation=(
                f"The router counts {w.url} healthy and routes to it, while {name}'s agent saw the engine "
                "die again and again: requests sent there fail or wait for a restart."
            ),
            action=(
                f"Take {w.url} out of the router until the engine holds (smg's DELETE /workers/<id>); read "
                f"{name}'s engine log (open it, then its Logs screen)."
            ),
        )
    if TELEMETRY_STALE in agent.codes:
        return Finding(
            code="router_sends_to_stale_host",
            severity="warning",
            title=f"The router still sends to {name}, whose agent has no telemetry from its engine",
            explanation=(
                f"The router counts {w.url} healthy and routes to it, while {name}'s agent cannot read the "
                "engine's metrics: a hung scheduler can still answer the router's health checks."
            ),
            action=f"Open {name} (enter) and read its finding; curl the engine's /metrics from the host.",
        )
    return None


def _ready(agent: FleetRow) -> bool:
    """Its agent is heard from now and says the engine is ready."""
    return agent.link == "connected" and not agent.stale and agent.engine == "ready"


def _not_a_worker(agent: FleetRow, url: str) -> Finding:
    return Finding(
        code="router_lacks_ready_host",
        severity="info",
        title=f"{agent.name} is not one of the router's workers",
        explanation=(
            f"{agent.name}'s agent says its engine ({url}) is ready, but the router has no worker at that "
            "address: it sends this host nothing. A restarted engine that listens elsewhere, or a host the "
            "router was never told of, reads this way."
        ),
        action=(
            "Add the engine to the router (smg's POST /workers), or give this host its worker_url in the "
            "hosts file where the router names it differently."
        ),
    )


def disagreements(
    view: RouterView | None,
    rows: Sequence[RouterRow],
    hosts: Sequence[FleetRow],
    age_s: float | None,
    engine_urls: dict[str, str] | None = None,
) -> list[Finding]:
    """Where the router's view and the agents' disagree, worst first; none from an old or unread view.

    ``hosts`` with a known engine URL (``engine_urls``) that no worker of the router is are named too."""
    if view is None or not view.reachable or age_s is None or age_s > FRESH_S:
        return []
    found: list[Finding] = []
    mapped = {row.host for row in rows if row.host is not None}
    for host in hosts:
        url = (engine_urls or {}).get(host.name)
        if url is not None and host.name not in mapped and _ready(host):
            found.append(_not_a_worker(host, url))
    for row in rows:
        agent, is_routed = row.agent, routed(row.worker)
        if agent is None or agent.engine is None or is_routed is None:
            continue
        if not is_routed and _ready(agent):
            found.append(_not_routed(row, agent))
        elif is_routed:
            finding = _still_routed(row, agent)
            if finding is not None:
                found.append(finding)
    rank = {"critical": 0, "warning": 1, "info": 2}
    return sorted(found, key=lambda f: rank.get(f.severity, 3))


@dataclass(frozen=True)
class SplitEntry:
    """One host's side of its threshold under the router's split."""

    host: str
    running: int | None
    """Running requests on it, as the router last polled them (None: no load on file)."""
    threshold: int | None
    configured: bool
    """The host has a drafter (a server without one never drafts, whatever its load)."""
    routed: bool | None

    @property
    def drafting(self) -> bool | None:
        """Below its threshold it drafts; at or above it, not (SGLang's adaptive threshold)."""
        if not self.configured:
            return False
        if self.running is None or self.threshold is None:
            return None
        return self.running < self.threshold


def split(rows: Sequence[RouterRow]) -> list[SplitEntry]:
    """Each host the router has, its running share against its own threshold, busiest first."""
    entries = [
        SplitEntry(
            host=r.host,
            running=r.worker.running,
            threshold=r.agent.threshold if r.agent is not None else None,
            configured=r.agent is None or r.agent.spec_configured is not False,
            routed=routed(r.worker),
        )
        for r in rows
        if r.host is not None
    ]
    return sorted(entries, key=lambda e: (-(e.running if e.running is not None else -1), e.host))
