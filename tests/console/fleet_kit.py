"""A fleet for the console's tests without processes: each host a link that answers like an agent.

``ScriptedLink`` plays a slice of the recording of the real agent on the sim (``data/local-sim.jsonl``)
and then holds the stream open (a live host), drops every reconnect after the first (a host whose
link went down, its last values kept), or refuses from the start (a host never reached). It answers
``/v1/version``, ``/v1/status`` (with the engine URL the router names) and ``/v1/router`` (the real
router's answers captured in ``data/smg-1.13.0-workers.json`` and ``data/smg-1.13.0-metrics.txt``,
read by the agent's own reader). The captures are smg 1.13.0 in front of three ``agent sim`` engines
under 40 streaming clients, one engine then killed with SIGKILL: its worker ``failed``, unhealthy,
its circuit breaker open; both answers read at the same moment.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from agent.sglang.router import parse_workers
from agent.sglang.router_metrics import parse_metrics
from agent.wire import API_VERSION, WIRE_VERSION
from agent.wire.router import RouterView
from console.fleet.hosts import HostTarget
from console.link import Link, LinkError, StreamItem
from console.link.replay import load_recording

DATA = Path(__file__).parent / "data"
RECORDING = DATA / "local-sim.jsonl"
ROUTER_CAPTURE = DATA / "smg-1.13.0-workers.json"
METRICS_CAPTURE = DATA / "smg-1.13.0-metrics.txt"
CAPTURED_AT = datetime(2026, 12, 7, 18, 45, 37, tzinfo=UTC).timestamp()
"""When the two answers were read (a second after the router's last poll of the workers' loads)."""
ROUTER_URL = "http://127.0.0.1:30000"
METRICS_URL = "http://127.0.0.1:29000"

Ending = Literal["hold", "drop", "refuse"]


def captured_view() -> RouterView:
    """The captured answers through the agent's reader, as ``GET /v1/router`` would answer them."""
    series = parse_metrics(METRICS_CAPTURE.read_text())
    data = json.loads(ROUTER_CAPTURE.read_text())
    return parse_workers(ROUTER_URL, data, CAPTURED_AT, series, metrics_url=METRICS_URL)


def captured_workers() -> list[str]:
    return [w["url"] for w in json.loads(ROUTER_CAPTURE.read_text())["workers"]]


class ScriptedLink(Link):
    writable = True

    def __init__(self, name: str, upto: int, ending: Ending, engine_url: str, router: bool = False) -> None:
        self.name = name
        self.items = load_recording(RECORDING)[0][:upto]
        self.ending = ending
        self.engine_url = engine_url
        self.router = router
        self.connects = 0
        self.requests: list[tuple[str, str, Any]] = []

    def describe(self) -> str:
        return f"test {self.name}"

    async def connect(self) -> None:
        self.connects += 1
        if self.ending == "refuse":
            raise LinkError(f"no agent socket at /run/{self.name}/agent.sock", retryable=False)
        if self.ending == "drop" and self.connects > 1:
            raise LinkError(f"{self.name}: connection refused")

    async def close(self) -> None:
        return None

    async def request(
        self,
        method: Literal["GET", "POST", "PUT", "DELETE"],
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        self.requests.append((method, path, body))
        if path == "/v1/version":
            return {"agent_version": "0.1.0", "api_version": API_VERSION, "wire_version": WIRE_VERSION}
        if path == "/v1/status":
            return {
                "profile": "local-sim", "profile_path": "/p/local-sim.toml", "engine_kind": "sim",
                "engine_state": "ready", "engine_url": self.engine_url, "last_seq": 0, "agent_pid": 1,
                "agent_version": "0.1.0", "started_at": 0.0, "tick_interval_s": 1.0, "state_dir": "/s",
                "router_url": ROUTER_URL if self.router else None,
            }  # fmt: skip
        if path == "/v1/router" and self.router:
            view = captured_view()
            return view.model_dump(mode="json")
        raise LinkError(f"{path}: not scripted", status=404)

    async def stream(self, since: int | None) -> AsyncIterator[StreamItem]:
        for item in self.items:
            if since is None or item.seq > since:
                yield item
        if self.ending == "drop":
            raise LinkError(f"{self.name}: the SSH connection dropped")
        await asyncio.Event().wait()  # a live host: the stream stays open


def scripted_fleet(disagreeing: bool = False) -> tuple[list[HostTarget], list[ScriptedLink]]:
    """Four hosts: two live (light load speculating, heavy load not), one whose link dropped (its last
    values kept, greyed), one never reached; the router's three workers are the first three's engines.
    ``disagreeing``: ``gpu-b`` (live, ready) is the worker the router took out and ``gpu-c`` (its link
    down) one it still sends to, so the two views disagree on both."""
    workers = captured_workers()
    if disagreeing:
        workers = [workers[0], workers[2], workers[1]]
    plan: list[tuple[str, int, Ending, str]] = [
        ("gpu-a", 120, "hold", workers[0]),
        ("gpu-b", 285, "hold", workers[1]),
        ("gpu-c", 225, "drop", workers[2]),
        ("gpu-d", 0, "refuse", "http://10.0.0.9:30000"),
    ]
    links = [ScriptedLink(n, upto, end, url, router=(n == "gpu-a")) for n, upto, end, url in plan]
    targets = [HostTarget(n, None, Path(f"/run/{n}/agent.sock")) for n, _, _, _ in plan]
    return targets, links
