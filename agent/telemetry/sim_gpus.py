"""A simulated 8-GPU host for the demo (``agent serve --gpus sim``), labelled as simulated everywhere.

The GPUs are the target host's, as a real ``nvidia-smi -q`` captured them (8 × RTX PRO 6000 Blackwell
Server Edition, PCIe only: names, UUIDs, memory, power limits, clocks, link widths, the idle readings;
``HOST_CARD`` is the extract, and a test rebuilds it from the capture in tests/fixtures/gpu). What
changes tick by tick (utilization, power, temperature, clocks, memory held, the engine's process) is
modelled from the simulated engine's load, so the GPU screen moves with the traffic instead of
showing an idle machine or nothing. Every sample says ``source="simulated"`` and its ``detail``
names the capture, so nobody takes it for a measurement.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from agent.telemetry.smi import parse_smi_q
from agent.wire import Gpu, GpuProcess, Gpus

HOST_CARD: Final = Path(__file__).with_name("sim_host_rtx_pro_6000_8x.json")
BUSY_POWER_W: Final = 540.0
"""Board power with a saturated decode batch: under the 600 W limit (no power-cap note in the demo)."""
ONE_STREAM_POWER_SHARE: Final = 0.35
"""Share of the idle-to-busy power range a single decoding stream already draws (memory-bound)."""
FULL_BATCH: Final = 200
"""Running requests at which the modelled GPUs are as busy as they get."""
HEAT_TIME_CONSTANT_S: Final = 40.0
DEGREES_PER_WATT: Final = 0.085


@dataclass(frozen=True)
class SimGpuLoad:
    """What the modelled readings follow: the engine's running batch, its pid, its memory fraction."""

    running: int
    engine_pid: int | None
    memory_fraction: float


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        return None


def _get(tree: Any, *path: str) -> str | None:
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            return None
        tree = tree[key]
    return tree if isinstance(tree, str) else None


def host_card_from_smi_q(text: str, capture: str) -> dict[str, Any]:
    """The static facts and idle readings of every GPU in an ``nvidia-smi -q`` capture."""
    tree = parse_smi_q(text)
    gpus = []
    for index, (bus_id, gpu) in enumerate(tree["GPUs"].items()):
        link = ("PCI", "GPU Link Info")
        width = _get(gpu, *link, "Link Width", "Max")
        gpus.append(
            {
                "index": index,
                "bus_id": bus_id,
                "name": _get(gpu, "Product Name"),
                "uuid": _get(gpu, "GPU UUID"),
                "memory_total_mib": _float(_get(gpu, "FB Memory Usage", "Total")),
                "memory_reserved_mib": _float(_get(gpu, "FB Memory Usage", "Reserved")),
                "power_limit_w": _float(_get(gpu, "GPU Power Readings", "Current Power Limit")),
                "idle_power_w": _float(_get(gpu, "GPU Power Readings", "Instantaneous Power Draw")),
                "idle_temperature_c": _float(_get(gpu, "Temperature", "GPU Current Temp")),
                "idle_sm_clock_mhz": _float(_get(gpu, "Clocks", "SM")),
                "idle_mem_clock_mhz": _float(_get(gpu, "Clocks", "Memory")),
                "max_sm_clock_mhz": _float(_get(gpu, "Max Clocks", "SM")),
                "max_mem_clock_mhz": _float(_get(gpu, "Max Clocks", "Memory")),
                "pcie_gen_idle": _float(_get(gpu, *link, "PCIe Generation", "Current")),
                "pcie_gen_max": _float(_get(gpu, *link, "PCIe Generation", "Max")),
                "pcie_width_max": _float(width.rstrip("x")) if width else None,
            }
        )
    return {
        "capture": capture,
        "driver_version": _get(tree, "Driver Version"),
        "cuda_version": _get(tree, "CUDA Version"),
        "gpus": gpus,
    }


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


class SimulatedGpus:
    """A ``GpuSampler`` whose devices are the captured host's and whose readings follow ``load``."""

    def __init__(
        self,
        load: Callable[[], SimGpuLoad | None],
        card: dict[str, Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._card = card if card is not None else json.loads(HOST_CARD.read_text(encoding="utf-8"))
        self._load = load
        self._clock = clock
        self._temps: list[float] = [float(g["idle_temperature_c"] or 30.0) for g in self._card["gpus"]]
        self._last: float | None = None
        first = self._card["gpus"][0] if self._card["gpus"] else {}
        self._detail = (
            f"simulated host: {len(self._card['gpus'])} × {first.get('name') or 'GPU'} as captured on the "
            f"target host ({self._card['capture']}); utilization, power, temperature and memory follow the "
            "simulated engine's load"
        )

    def close(self) -> None:
        return None

    def sample(self) -> Gpus:
        now = self._clock()
        dt = 0.0 if self._last is None else max(0.0, now - self._last)
        self._last = now
        load = self._load()
        running = load.running if load is not None else 0
        devices = [self._gpu(i, g, running, load, dt) for i, g in enumerate(self._card["gpus"])]
        return Gpus(
            source="simulated",
            state="ok",
            detail=self._detail,
            driver_version=self._card.get("driver_version"),
            cuda_driver_version=self._card.get("cuda_version"),
            devices=devices,
        )

    def _gpu(self, i: int, g: dict[str, Any], running: int, load: SimGpuLoad | None, dt: float) -> Gpu:
        busy = min(1.0, running / FULL_BATCH) if running > 0 else 0.0
        idle_w = float(g["idle_power_w"] or 40.0)
        limit_w = float(g["power_limit_w"] or 600.0)
        spread = (i * 13 % 7 - 3) * 2.0  # eight cards never read exactly alike
        if running > 0:
            share = ONE_STREAM_POWER_SHARE + (1 - ONE_STREAM_POWER_SHARE) * math.sqrt(busy)
            power = min(limit_w * 0.97, idle_w + (BUSY_POWER_W - idle_w) * share + spread)
            utilization = min(100.0, 72.0 + 27.0 * math.sqrt(busy) + (i % 3))
            sm_clock = float(g["max_sm_clock_mhz"] or 2400.0) - 180.0 * busy - 10 * (i % 4)
            mem_clock = float(g["max_mem_clock_mhz"] or 12000.0)
            pcie_gen = g["pcie_gen_max"]
        else:
            power, utilization = idle_w + spread / 4, 0.0
            sm_clock = float(g["idle_sm_clock_mhz"] or 180.0)
            mem_clock = float(g["idle_mem_clock_mhz"] or 405.0)
            pcie_gen = g["pcie_gen_idle"]
        target = float(g["idle_temperature_c"] or 30.0) + DEGREES_PER_WATT * (power - idle_w) + (i * 7 % 5)
        self._temps[i] += (target - self._temps[i]) * (1 - math.exp(-dt / HEAT_TIME_CONSTANT_S))
        total = int((g["memory_total_mib"] or 0) * 1024**2)
        reserved = int((g["memory_reserved_mib"] or 0) * 1024**2)
        processes: list[GpuProcess] = []
        used = reserved
        if load is not None and load.engine_pid is not None:
            held = int(total * load.memory_fraction)
            used += held
            processes = [GpuProcess(pid=load.engine_pid, used_memory_bytes=held, name="engine (simulated)")]
        return Gpu(
            index=i,
            name=g["name"],
            uuid=g["uuid"],
            utilization_pct=round(utilization, 1),
            memory_used_bytes=min(used, total),
            memory_total_bytes=total,
            power_w=round(power, 1),
            power_limit_w=limit_w,
            temperature_c=round(self._temps[i], 1),
            sm_clock_mhz=round(sm_clock),
            mem_clock_mhz=round(mem_clock),
            pcie_gen=_int(pcie_gen),
            pcie_gen_max=_int(g["pcie_gen_max"]),
            pcie_width=_int(g["pcie_width_max"]),
            pcie_width_max=_int(g["pcie_width_max"]),
            processes=processes,
        )
