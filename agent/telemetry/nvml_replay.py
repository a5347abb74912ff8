"""A pynvml-shaped object that answers from a real NVML capture (``gpu_capture.py``'s JSON).

It lets the real ``NvmlSampler`` code (handles, unit conversions, NotSupported handling, throttle
decoding) run on a machine without a GPU. Errors recorded in the capture (``{"error":
"NVMLError_NotSupported"}``) are raised as the same pynvml exception classes the driver raised.
Fields the capture does not hold (older captures lack the PCIe maxima) answer NotSupported, exactly
as a driver that cannot report them would.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any, Final

NVML_TEMPERATURE_GPU: Final = 0
NVML_CLOCK_SM: Final = 1
NVML_CLOCK_MEM: Final = 2
NVML_MEMORY_ERROR_TYPE_UNCORRECTED: Final = 1
NVML_VOLATILE_ECC: Final = 0


def _nvml_error(name: str) -> Exception:
    try:
        # Here, not at the top: pynvml is optional (a replay runs on a host without it).
        import pynvml

        cls = getattr(pynvml, name, None)
        if isinstance(cls, type) and issubclass(cls, Exception):
            return cls()
    except ImportError:
        pass
    fallback: type[Exception] = type(name, (Exception,), {})
    return fallback()


def _scaled(gpus: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(count):
        gpu = copy.deepcopy(gpus[i % len(gpus)])
        gpu["index"] = i
        if i >= len(gpus) and isinstance(gpu.get("uuid"), str):
            gpu["uuid"] = f"{gpu['uuid'][:-4]}{i:04x}"
        out.append(gpu)
    return out


class ReplayNvml:
    """The subset of pynvml that ``NvmlSampler`` calls, answered from a capture."""

    NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = NVML_CLOCK_SM
    NVML_CLOCK_MEM = NVML_CLOCK_MEM
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    NVML_VOLATILE_ECC = NVML_VOLATILE_ECC

    def __init__(self, capture: dict[str, Any], *, scale_to: int | None = None) -> None:
        gpus = list(capture.get("gpus", []))
        if scale_to is not None:
            if scale_to < 0 or (scale_to > 0 and not gpus):
                raise ValueError("scale_to needs a capture with at least one GPU and a count >= 0")
            gpus = _scaled(gpus, scale_to)
        self._capture = capture
        self._gpus = gpus
        self.initialised = False

    # The capture stores an error as {"error": "<pynvml class name>", "msg": ...}.
    def _value(self, value: Any) -> Any:
        if isinstance(value, dict) and "error" in value:
            raise _nvml_error(str(value["error"]))
        return value

    def _field(self, handle: int, key: str) -> Any:
        if key not in self._gpus[handle]:
            raise _nvml_error("NVMLError_NotSupported")
        return self._value(self._gpus[handle][key])

    def nvmlInit(self) -> None:
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self.initialised = False

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(self._value(self._capture.get("driver")))

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return int(self._value(self._capture.get("cuda_driver")))

    def nvmlDeviceGetCount(self) -> int:
        return len(self._gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        if not 0 <= index < len(self._gpus):
            raise _nvml_error("NVMLError_InvalidArgument")
        return index

    def nvmlDeviceGetName(self, h: int) -> str:
        return str(self._field(h, "name"))

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return str(self._field(h, "uuid"))

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        cc = self._field(h, "compute_capability")
        return int(cc[0]), int(cc[1])

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(**self._field(h, "memory"))

    def nvmlDeviceGetUtilizationRates(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(**self._field(h, "utilization"))

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return int(self._field(h, "temperature_c"))

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return int(self._field(h, "power_mw"))

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return int(self._field(h, "power_limit_mw"))

    def nvmlDeviceGetClockInfo(self, h: int, clock: int) -> int:
        return int(self._field(h, "sm_clock_mhz" if clock == NVML_CLOCK_SM else "mem_clock_mhz"))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> int:
        return int(self._field(h, "pcie_gen"))

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> int:
        return int(self._field(h, "pcie_width"))

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int:
        return int(self._field(h, "pcie_gen_max"))

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int:
        return int(self._field(h, "pcie_width_max"))

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return int(self._field(h, "throttle_reasons"))

    def nvmlDeviceGetTotalEccErrors(self, h: int, kind: int, counter: int) -> int:
        return int(self._field(h, "ecc_uncorrected"))

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[SimpleNamespace]:
        procs = self._field(h, "processes")
        return [SimpleNamespace(pid=p["pid"], usedGpuMemory=p.get("used_gpu_memory")) for p in procs]
