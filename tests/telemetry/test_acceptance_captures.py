"""The acceptance findings stay silent on every real capture in tests/fixtures.

The real engine's recorded snapshot streams (the H200 oracle comparison: the always-accepted head,
accept length 4.0 of 4 in stretches between forced switches; the first snapshots of a starting
engine) go through the wasted-drafts minute and the health watch as the agent runs them, with the
profile's default thresholds and nothing excused as a benchmark; every captured ``/metrics`` page is
read by the real Collector over HTTP for three minutes of ticks, alone and in turn.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from agent.profile.health import Health
from agent.telemetry.collector import Collector
from agent.telemetry.draft_waste import DraftWaste
from agent.telemetry.health import HealthWatch
from agent.telemetry.nvml import NoGpuSampler
from agent.wire import Snapshot

from .conftest import FIXTURES, PAGE_0523, ScriptedSglang, profile

ACCEPTANCE_CODES = {"accept_collapse", "accept_loop", "wasted_drafts"}
REAL = FIXTURES / "sglang-0.5.23-real"
PAGES = [*sorted(REAL.glob("*.prom")), PAGE_0523]


def recorded_streams() -> dict[str, list[Snapshot]]:
    streams: dict[str, list[Snapshot]] = {}
    lines = (FIXTURES / "real-h200" / "oracle-compare.jsonl").read_text().splitlines()
    items = [json.loads(line) for line in lines]
    streams["oracle-compare"] = [Snapshot.model_validate(i["data"]) for i in items if i["kind"] == "snapshot"]
    starting = json.loads((REAL / "agent-snapshots-starting.json").read_text())
    streams["starting"] = [Snapshot.model_validate(s) for s in starting["snapshots"]]
    return streams


def test_the_recorded_real_streams_raise_no_acceptance_finding() -> None:
    limits = Health()
    for name, snaps in recorded_streams().items():
        waste, watch = DraftWaste(), HealthWatch()
        raised: set[str] = set()
        drafted = 0.0
        for snap in snaps:
            spec = waste.observe(snap.time, snap.speculation, snap.load.running)
            out = watch.observe(snap.model_copy(update={"speculation": spec, "findings": []}), limits)
            raised |= {f.code for f in out.findings}
            drafted = max(drafted, spec.drafting_s_per_min or 0.0)
        assert raised & ACCEPTANCE_CODES == set(), name
        if name == "oracle-compare":  # it was judged: the minute held real drafting, all of it accepted
            assert drafted >= 20.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_every_captured_metrics_page_raises_no_acceptance_finding(
    scripted_sglang: ScriptedSglang,
) -> None:
    pages = {p.name: p.read_text() for p in PAGES}
    server_info: dict[str, Any] = json.loads((REAL / "server_info.json").read_text())
    scripted_sglang.server_info = server_info
    orders: list[list[str]] = [[name] for name in pages] + [sorted(pages)]
    async with httpx.AsyncClient() as http:
        for order in orders:
            clock = Clock()
            collector = Collector(
                scripted_sglang.url,
                profile("local-sim"),
                NoGpuSampler(),
                http,
                clock,
                sample_gpus_in_thread=False,
            )
            watch, limits = HealthWatch(), Health()
            raised: set[str] = set()
            for tick in range(180):
                scripted_sglang.metrics = pages[order[tick // 20 % len(order)]]
                observation = await collector.tick("ready", 4242)
                snap = observation.snapshot(tick, _identity())
                raised |= {f.code for f in watch.observe(snap, limits).findings}
                clock.now += 1.0
            await collector.aclose()
            assert raised & ACCEPTANCE_CODES == set(), order


def _identity() -> Any:
    from agent.telemetry.collector import Identity

    return Identity(profile_name="local-sim", production=False, engine_kind="sglang")


def test_the_fixture_pages_are_all_there() -> None:
    assert {p.name for p in PAGES} >= {
        "metrics-idle-after-start.prom",
        "metrics-after-bench.prom",
        "metrics-later.prom",
        "sglang-0.5.23-tp8-loaded.txt",
    }
    assert all(isinstance(p, Path) and p.exists() for p in PAGES)
