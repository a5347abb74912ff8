"""Print what the agent's NVML sampler reads on this host, and the static GPU facts, as JSON.

Usage (on a GPU host, from the repository root):  python -m bench.real.gpu_probe [--samples N]

Needs only nvidia-ml-py (``pip install nvidia-ml-py``). When the agent's own packages import (pydantic
and psutil present), it runs the real ``NvmlSampler`` and ``gpu_host_facts``; otherwise it makes the
same NVML calls itself, so the figures are comparable either way. It also times a sample of every
GPU (CPU and wall per sample, and per GPU), which is the NVML share of a telemetry tick.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from typing import Any


def _timed(fn: Any, samples: int) -> dict[str, float]:
    fn()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(samples):
        fn()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {
        "samples": samples,
        "cpu_ms_per_sample": cpu / samples * 1e3,
        "wall_ms_per_sample": wall / samples * 1e3,
    }


def with_agent(samples: int) -> dict[str, Any]:
    from agent.telemetry.facts import gpu_host_facts
    from agent.telemetry.nvml import NvmlSampler

    sampler = NvmlSampler()
    first = sampler.sample()
    timing = _timed(sampler.sample, samples) if first.state == "ok" else {}
    if timing and first.devices:
        timing["cpu_us_per_gpu"] = timing["cpu_ms_per_sample"] * 1e3 / len(first.devices)
    return {
        "via": "agent.telemetry.nvml.NvmlSampler",
        "sample": first.model_dump(),
        "timing": timing,
        "facts": gpu_host_facts(sampler).to_json(),
    }


def _safe(fn: Any, *args: Any) -> Any:
    try:
        value = fn(*args)
    except Exception as exc:
        return {"error": type(exc).__name__}
    return value.decode() if isinstance(value, bytes) else value


def without_agent(samples: int) -> dict[str, Any]:
    """The NvmlSampler's calls, made directly (for a host without the agent's dependencies)."""
    import pynvml as N

    try:
        N.nvmlInit()
    except Exception as exc:
        return {"via": "pynvml directly", "state": "no_driver", "error": f"{type(exc).__name__}: {exc}"}
    handles = [N.nvmlDeviceGetHandleByIndex(i) for i in range(N.nvmlDeviceGetCount())]

    def read(h: Any) -> dict[str, Any]:
        mem = _safe(N.nvmlDeviceGetMemoryInfo, h)
        util = _safe(N.nvmlDeviceGetUtilizationRates, h)
        procs = _safe(N.nvmlDeviceGetComputeRunningProcesses, h)
        return {
            "name": _safe(N.nvmlDeviceGetName, h),
            "uuid": _safe(N.nvmlDeviceGetUUID, h),
            "utilization_pct": getattr(util, "gpu", util),
            "memory_used_bytes": getattr(mem, "used", mem),
            "memory_total_bytes": getattr(mem, "total", mem),
            "power_mw": _safe(N.nvmlDeviceGetPowerUsage, h),
            "power_limit_mw": _safe(N.nvmlDeviceGetEnforcedPowerLimit, h),
            "temperature_c": _safe(N.nvmlDeviceGetTemperature, h, N.NVML_TEMPERATURE_GPU),
            "sm_clock_mhz": _safe(N.nvmlDeviceGetClockInfo, h, N.NVML_CLOCK_SM),
            "mem_clock_mhz": _safe(N.nvmlDeviceGetClockInfo, h, N.NVML_CLOCK_MEM),
            "pcie_gen": _safe(N.nvmlDeviceGetCurrPcieLinkGeneration, h),
            "pcie_gen_max": _safe(N.nvmlDeviceGetMaxPcieLinkGeneration, h),
            "pcie_width": _safe(N.nvmlDeviceGetCurrPcieLinkWidth, h),
            "pcie_width_max": _safe(N.nvmlDeviceGetMaxPcieLinkWidth, h),
            "throttle_reasons": _safe(N.nvmlDeviceGetCurrentClocksEventReasons, h),
            "ecc_uncorrected": _safe(
                N.nvmlDeviceGetTotalEccErrors, h, N.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, N.NVML_VOLATILE_ECC
            ),
            "compute_capability": _safe(N.nvmlDeviceGetCudaComputeCapability, h),
            "processes": (
                [{"pid": p.pid, "used_gpu_memory": p.usedGpuMemory} for p in procs]
                if isinstance(procs, list)
                else procs
            ),
        }

    readings = [read(h) for h in handles]
    timing = _timed(lambda: [read(h) for h in handles], samples) if handles else {}
    if timing:
        timing["cpu_us_per_gpu"] = timing["cpu_ms_per_sample"] * 1e3 / len(handles)
    topo = None
    if shutil.which("nvidia-smi"):
        done = subprocess.run(
            ["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30, check=False
        )
        topo = done.stdout
    return {
        "via": "pynvml directly (agent packages not importable)",
        "driver": _safe(N.nvmlSystemGetDriverVersion),
        "cuda_driver": _safe(N.nvmlSystemGetCudaDriverVersion_v2),
        "gpus": readings,
        "timing": timing,
        "topo": topo,
        "nvlink": None
        if topo is None
        else any(cell.startswith("NV") and cell[2:].isdigit() for cell in topo.split()),
    }


def main() -> int:
    samples = 200
    if "--samples" in sys.argv:
        samples = int(sys.argv[sys.argv.index("--samples") + 1])
    try:
        out = with_agent(samples)
    except ImportError as exc:
        out = without_agent(samples)
        out["agent_import_error"] = str(exc)
    print(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
