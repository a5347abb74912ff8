"""The demo's simulated 8-GPU host: the real capture's GPUs, readings that follow the load, labelled."""

from __future__ import annotations

import json

from agent.telemetry.sim_gpus import HOST_CARD, SimGpuLoad, SimulatedGpus, host_card_from_smi_q

from .conftest import FIXTURES

CAPTURE = FIXTURES / "gpu" / "rtx-pro-6000-8x" / "nvidia-smi-q.log"


def test_the_shipped_host_card_is_the_real_capture_extracted() -> None:
    shipped = json.loads(HOST_CARD.read_text())
    rebuilt = host_card_from_smi_q(CAPTURE.read_text(), shipped["capture"])
    assert rebuilt == shipped
    assert len(shipped["gpus"]) == 8 and shipped["driver_version"] == "595.58.03"
    assert {g["name"] for g in shipped["gpus"]} == {"NVIDIA RTX PRO 6000 Blackwell Server Edition"}
    assert len({g["uuid"] for g in shipped["gpus"]}) == 8


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_readings_follow_the_engines_load_and_say_they_are_simulated() -> None:
    load = SimGpuLoad(running=0, engine_pid=None, memory_fraction=0.9)
    clock = Clock()
    gpus = SimulatedGpus(lambda: load, clock=clock)
    idle = gpus.sample()
    assert idle.source == "simulated" and idle.state == "ok"
    assert idle.detail is not None and idle.detail.startswith("simulated host: 8 × NVIDIA RTX PRO 6000")
    assert all(g.utilization_pct == 0 and g.processes == [] for g in idle.devices)
    assert all(g.power_w is not None and g.power_w < 50 for g in idle.devices)

    load = SimGpuLoad(running=1, engine_pid=4242, memory_fraction=0.9)
    one = gpus.sample()
    load = SimGpuLoad(running=250, engine_pid=4242, memory_fraction=0.9)
    busy = gpus.sample()
    for a, b in zip(one.devices, busy.devices, strict=True):
        assert a.power_w is not None and b.power_w is not None and a.power_w < b.power_w < b.power_limit_w
        assert a.utilization_pct is not None and 70 <= a.utilization_pct <= (b.utilization_pct or 0) <= 100
        assert b.processes[0].pid == 4242 and b.memory_used_bytes and b.memory_total_bytes
        assert 0.85 < b.memory_used_bytes / b.memory_total_bytes < 0.95
    hot_start = [g.temperature_c for g in busy.devices]
    clock.now += 120.0  # two minutes at full load: the cards warm up towards their load temperature
    warm = gpus.sample()
    assert all((w.temperature_c or 0) > (h or 0) + 10 for w, h in zip(warm.devices, hot_start, strict=True))
    assert len({g.power_w for g in warm.devices}) > 1  # eight cards never read exactly alike
