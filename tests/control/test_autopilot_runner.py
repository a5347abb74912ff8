"""The autopilot's runner against the simulated engine over real HTTP: it reads the agent's own telemetry
(the Collector), moves the live threshold through ``/set_internal_state`` and its read-back, and when
telemetry stops arriving its watchdog returns the engine to the operator's threshold by itself."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from agent.control.audit import AuditLog
from agent.control.autopilot.metrics import AutopilotMetrics
from agent.control.autopilot.runner import AutopilotRunner
from agent.control.live import LiveOutcome, apply_live
from agent.profile import Profile, load_profile
from agent.sim.server import run_sim
from agent.telemetry.collector import Collector, Identity
from agent.telemetry.nvml import NoGpuSampler

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
TICK_S = 0.25


def autopilot_on(profile: Profile, **changes: Any) -> Profile:
    spec = profile.speculation
    auto = spec.autopilot.model_copy(update={"enabled": True, **changes})
    return profile.model_copy(update={"speculation": spec.model_copy(update={"autopilot": auto})})


async def test_it_moves_through_the_engine_and_stale_telemetry_brings_back_the_operators_threshold(
    tmp_path: Path,
) -> None:
    profile = autopilot_on(load_profile(PROFILES / "local-sim.toml"), stale_after_s=2.0)
    operator = profile.speculation.threshold
    seen: dict[str, asyncio.Event] = {}
    events: list[tuple[str, str, dict[str, Any]]] = []

    def emit(name: str, message: str, data: dict[str, Any]) -> None:
        events.append((name, message, data))
        seen.setdefault(name, asyncio.Event()).set()

    def happened(name: str) -> asyncio.Event:
        return seen.setdefault(name, asyncio.Event())

    audit = AuditLog(tmp_path / "audit.jsonl")
    async with (
        run_sim(profile, port=0, speedup=20, seed=3, draft_acceptance="random") as sim,
        httpx.AsyncClient(timeout=30.0) as http,
    ):

        async def apply(args: dict[str, int]) -> LiveOutcome:
            return await apply_live(http, sim.url, args, {})

        runner = AutopilotRunner(profile, apply=apply, emit=emit, audit=audit)
        await runner.start()
        assert happened("autopilot.enabled").is_set()
        collector = Collector(sim.url, profile, NoGpuSampler(), http, sample_gpus_in_thread=False)
        body = {"text": "tell me", "sampling_params": {"max_new_tokens": 20_000, "ignore_eos": True}}
        load = [asyncio.create_task(http.post(sim.url + "/generate", json=body)) for _ in range(8)]
        identity = Identity("local-sim", False, "sim")
        try:
            async with asyncio.timeout(60):
                seq = 0
                while not happened("autopilot.move").is_set():  # the telemetry tick's own cadence
                    seq += 1
                    observed = await collector.tick("ready", 4242)
                    stamped = runner.stamp(observed.snapshot(seq, identity))
                    assert stamped.autopilot is not None and stamped.autopilot.enabled
                    await asyncio.sleep(TICK_S)
            assert sim.engine.controller is not None
            assert sim.engine.controller.threshold == 1  # the event comes after the engine's read-back
            # Telemetry stops: no tick, no snapshot. The watchdog alone must notice.
            await asyncio.wait_for(happened("autopilot.reverted").wait(), 15)
            assert sim.engine.controller.threshold == operator
            assert runner.state.mode == "holding"
        finally:
            for task in load:
                task.cancel()
            await asyncio.gather(*load, return_exceptions=True)
            await runner.close()
            await collector.aclose()

    move = next(d for n, _, d in events if n == "autopilot.move")
    assert move["after"]["threshold"] == 1 and move["readback"]["threshold"] == 1
    reverted = next(d for n, _, d in events if n == "autopilot.reverted")
    assert (
        reverted["after"] == {"threshold": operator, "steps": -1}
        and reverted["readback"]["threshold"] == operator
    )
    written = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(line["action"]["kind"], line["phase"]) for line in written] == [
        ("autopilot.move", "intent"), ("autopilot.move", "outcome"),
        ("autopilot.revert", "intent"), ("autopilot.revert", "outcome"),
    ]  # fmt: skip
    lines = written[1::2]
    assert all(line["operator"] == "autopilot" and line["result"]["status"] == "applied" for line in lines)
    assert "no fresh telemetry" in lines[1]["result"]["why"]

    # Its series for the exporter say the same, as prometheus-client writes and parses them.
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AutopilotMetrics(runner))  # type: ignore[arg-type]
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())}
    samples = {
        (x.name, tuple(sorted(x.labels.items()))): x.value for f in families.values() for x in f.samples
    }
    assert samples[("k25_autopilot_enabled", ())] == 1
    assert samples[("k25_autopilot_mode", (("mode", "holding"),))] == 1
    assert sum(v for (n, _), v in samples.items() if n == "k25_autopilot_mode") == 1
    assert samples[("k25_autopilot_commands_total", (("kind", "move"),))] == 1
    assert samples[("k25_autopilot_commands_total", (("kind", "revert"),))] == 1
    assert samples[("k25_autopilot_reverts_total", (("reason", "stale"),))] == 1
    assert samples[("k25_autopilot_operator_threshold_requests", ())] == operator
    assert ("k25_autopilot_crossover_requests", ()) not in samples  # unknown is absent, never 0
    for name, family in families.items():
        assert name.startswith("k25_autopilot_") and family.documentation
        assert (family.type == "counter") == name.endswith(("commands", "reverts")), name


async def test_an_agent_stopping_takes_its_setting_back_first(tmp_path: Path) -> None:
    profile = autopilot_on(load_profile(PROFILES / "local-sim.toml"))
    operator = profile.speculation.threshold
    moved = asyncio.Event()
    names: list[str] = []

    def emit(name: str, message: str, data: dict[str, Any]) -> None:
        names.append(name)
        if name == "autopilot.move":
            moved.set()

    async with (
        run_sim(profile, port=0, speedup=20, seed=4, draft_acceptance="random") as sim,
        httpx.AsyncClient(timeout=30.0) as http,
    ):

        async def apply(args: dict[str, int]) -> LiveOutcome:
            return await apply_live(http, sim.url, args, {})

        runner = AutopilotRunner(profile, apply=apply, emit=emit, audit=AuditLog(tmp_path / "audit.jsonl"))
        await runner.start()
        collector = Collector(sim.url, profile, NoGpuSampler(), http, sample_gpus_in_thread=False)
        body = {"text": "tell me", "sampling_params": {"max_new_tokens": 20_000, "ignore_eos": True}}
        load = [asyncio.create_task(http.post(sim.url + "/generate", json=body)) for _ in range(8)]
        try:
            async with asyncio.timeout(60):
                seq = 0
                while not moved.is_set():  # the telemetry tick's own cadence
                    seq += 1
                    runner.stamp(
                        (await collector.tick("ready", 4242)).snapshot(seq, Identity("x", False, "sim"))
                    )
                    await asyncio.sleep(TICK_S)
            assert sim.engine.controller is not None and sim.engine.controller.threshold == 1
            await runner.close()
            assert sim.engine.controller.threshold == operator
        finally:
            for task in load:
                task.cancel()
            await asyncio.gather(*load, return_exceptions=True)
            await collector.aclose()
    assert names[-1] == "autopilot.reverted" and runner.reverts == {"stopping": 1}
