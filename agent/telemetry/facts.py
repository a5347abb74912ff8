"""Static GPU facts of the host, for ``agent doctor``: what the hardware is, not what it is doing.

NVML gives name, compute capability, memory and PCIe maxima; ``nvidia-smi topo -m`` is the only
place that says whether GPUs are joined by NVLink (the target host has none: 8 PCIe cards). When
NVML cannot load, ``nvidia-smi -q`` supplies what it can (it does not print compute capability).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from agent.telemetry.nvml import NvmlSampler, StaticNvmlFacts
from agent.telemetry.smi import Topology, parse_topology, smi_q_facts

FactsState = Literal["ok", "no_driver", "no_gpu", "error"]


@dataclass(frozen=True)
class GpuFacts:
    index: int
    name: str | None
    uuid: str | None = None
    compute_capability: str | None = None
    memory_total_bytes: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None


@dataclass(frozen=True)
class HostGpuFacts:
    state: FactsState
    detail: str | None
    source: Literal["nvml", "nvidia-smi", "fixture", "simulated", "none"]
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    gpus: list[GpuFacts] = field(default_factory=list)
    nvlink: bool | None = None
    topology: Topology | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("topology")
        if self.topology is not None:
            data["topology"] = {
                "devices": self.topology.devices,
                "links": {f"{a}-{b}": kind for (a, b), kind in self.topology.links.items()},
                "numa_affinity": self.topology.numa_affinity,
            }
        return data


def run_smi(args: list[str], *, timeout_s: float = 10.0) -> str | None:
    """``nvidia-smi ARGS`` stdout, or None when it is missing or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        done = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def facts_from_smi_q(q_text: str, topo_text: str | None = None) -> HostGpuFacts:
    """Facts from saved ``nvidia-smi -q`` (and ``topo -m``) text, e.g. a report from another host."""
    driver, cuda, gpus = smi_q_facts(q_text)
    topology = parse_topology(topo_text) if topo_text else None
    return HostGpuFacts(
        state="ok" if gpus else "no_gpu",
        detail=None if gpus else "nvidia-smi -q lists no GPUs",
        source="nvidia-smi",
        driver_version=driver,
        cuda_driver_version=cuda,
        gpus=[
            GpuFacts(
                index=i,
                name=g.name,
                uuid=g.uuid,
                memory_total_bytes=g.memory_total_bytes,
                pcie_gen_max=g.pcie_gen_max,
                pcie_width_max=g.pcie_width_max,
            )
            for i, g in enumerate(gpus)
        ],
        nvlink=None if topology is None else topology.nvlink,
        topology=topology,
    )


def gpu_host_facts(
    sampler: NvmlSampler | None = None,
    *,
    topo_text: str | None = None,
    smi_q_text: str | None = None,
    use_nvidia_smi: bool = True,
) -> HostGpuFacts:
    """Static facts of every GPU; never raises. ``topo_text``/``smi_q_text`` replace running nvidia-smi."""
    nvml = sampler if sampler is not None else NvmlSampler(process_names=False)
    if topo_text is None and use_nvidia_smi:
        topo_text = run_smi(["topo", "-m"])
    topology = parse_topology(topo_text) if topo_text else None
    facts: StaticNvmlFacts | None
    try:
        facts = nvml.static_facts()
        failure_detail = facts.detail
    except Exception as exc:  # doctor must report, not crash
        facts = None
        failure_detail = f"NVML failed: {exc}"
    if facts is not None and facts.state == "ok":
        return HostGpuFacts(
            state="ok",
            detail=None,
            source=nvml.source,
            driver_version=facts.driver_version,
            cuda_driver_version=facts.cuda_driver_version,
            gpus=[GpuFacts(**g) for g in facts.gpus],
            nvlink=None if topology is None else topology.nvlink,
            topology=topology,
        )
    if smi_q_text is None and use_nvidia_smi:
        smi_q_text = run_smi(["-q"])
    if smi_q_text:
        from_smi = facts_from_smi_q(smi_q_text, topo_text)
        if from_smi.state == "ok":
            return from_smi
    state: FactsState = "error" if facts is None else facts.state
    return HostGpuFacts(state=state, detail=failure_detail, source="none", topology=topology)
