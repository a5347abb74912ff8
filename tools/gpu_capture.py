"""Capture real NVML readings from every GPU on this host, as JSON, for test fixtures."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

import pynvml as N


def safe(f: Callable[..., Any], *a: object) -> Any:
    """What NVML answered (pynvml is untyped: Any), bytes decoded; or, when it raised, its error as a dict."""
    try:
        v = f(*a)
        return v.decode() if isinstance(v, bytes) else v
    except Exception as e:  # record the NVML error name, as a caller would see it
        return {"error": type(e).__name__, "msg": str(e)}


N.nvmlInit()
out: dict[str, Any] = {
    "driver": safe(N.nvmlSystemGetDriverVersion),
    "nvml": safe(N.nvmlSystemGetNVMLVersion),
    "cuda_driver": safe(N.nvmlSystemGetCudaDriverVersion_v2),
    "gpus": [],
}
for i in range(N.nvmlDeviceGetCount()):
    h = N.nvmlDeviceGetHandleByIndex(i)
    mem = safe(N.nvmlDeviceGetMemoryInfo, h)
    util = safe(N.nvmlDeviceGetUtilizationRates, h)
    g = {
        "index": i,
        "name": safe(N.nvmlDeviceGetName, h),
        "uuid": safe(N.nvmlDeviceGetUUID, h),
        "compute_capability": safe(N.nvmlDeviceGetCudaComputeCapability, h),
        "memory": mem if isinstance(mem, dict) else {"total": mem.total, "used": mem.used, "free": mem.free},
        "utilization": util if isinstance(util, dict) else {"gpu": util.gpu, "memory": util.memory},
        "temperature_c": safe(N.nvmlDeviceGetTemperature, h, N.NVML_TEMPERATURE_GPU),
        "power_mw": safe(N.nvmlDeviceGetPowerUsage, h),
        "power_limit_mw": safe(N.nvmlDeviceGetEnforcedPowerLimit, h),
        "sm_clock_mhz": safe(N.nvmlDeviceGetClockInfo, h, N.NVML_CLOCK_SM),
        "mem_clock_mhz": safe(N.nvmlDeviceGetClockInfo, h, N.NVML_CLOCK_MEM),
        "pcie_gen": safe(N.nvmlDeviceGetCurrPcieLinkGeneration, h),
        "pcie_width": safe(N.nvmlDeviceGetCurrPcieLinkWidth, h),
        "pcie_tx_kbps": safe(N.nvmlDeviceGetPcieThroughput, h, N.NVML_PCIE_UTIL_TX_BYTES),
        "pcie_rx_kbps": safe(N.nvmlDeviceGetPcieThroughput, h, N.NVML_PCIE_UTIL_RX_BYTES),
        "fan_pct": safe(N.nvmlDeviceGetFanSpeed, h),
        "throttle_reasons": safe(N.nvmlDeviceGetCurrentClocksEventReasons, h),
        "ecc_uncorrected": safe(
            N.nvmlDeviceGetTotalEccErrors, h, N.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, N.NVML_VOLATILE_ECC
        ),
        "processes": [
            {"pid": p.pid, "used_gpu_memory": p.usedGpuMemory}
            for p in (safe(N.nvmlDeviceGetComputeRunningProcesses, h) or [])
            if not isinstance(p, str)
        ]
        if not isinstance(safe(N.nvmlDeviceGetComputeRunningProcesses, h), dict)
        else [],
    }
    out["gpus"].append(g)
t0 = time.perf_counter()
for _ in range(1000):
    for i in range(N.nvmlDeviceGetCount()):
        h = N.nvmlDeviceGetHandleByIndex(i)
        N.nvmlDeviceGetUtilizationRates(h)
        N.nvmlDeviceGetMemoryInfo(h)
        N.nvmlDeviceGetPowerUsage(h)
        N.nvmlDeviceGetTemperature(h, N.NVML_TEMPERATURE_GPU)
out["sample_cost_us_per_gpu"] = (time.perf_counter() - t0) / 1000 / max(1, N.nvmlDeviceGetCount()) * 1e6
json.dump(out, sys.stdout, indent=1, default=str)
