"""GPU samplers: what each GPU is doing now, as ``wire.Gpus``.

NVML (through nvidia-ml-py's ``pynvml``) is the source of truth: the nvidia-smi man page says its
text is not guaranteed stable while NVML and its bindings are. ``SmiSampler`` is the fallback for a
host where the NVML library cannot be loaded by this interpreter but ``nvidia-smi`` runs, and
``FixtureSampler`` replays real captures (tests, the demo, the tick benchmark).

A sampler never raises: a host without a driver or without GPUs is a state the console draws
(``no_driver`` / ``no_gpu``), not an error. NVML is initialised once and device handles are cached,
because a tick must cost well under a millisecond of CPU.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import psutil

from agent.telemetry.nvml_replay import ReplayNvml
from agent.telemetry.smi import CsvFixtureSampler, SmiSampler
from agent.telemetry.throttle import decode_throttle_reasons
from agent.wire import Gpu, GpuProcess, Gpus
from agent.wire.snapshot import GpuSource

__all__ = [
    "CsvFixtureSampler",
    "FixtureSampler",
    "GpuSampler",
    "NoGpuSampler",
    "NvmlSampler",
    "SmiSampler",
    "make_sampler",
]

_NO_DRIVER_ERRORS = frozenset(
    {"NVMLError_LibraryNotFound", "NVMLError_DriverNotLoaded", "NVMLError_FunctionNotFound"}
)
_DEVICE_GONE_ERRORS = frozenset({"NVMLError_GpuIsLost", "NVMLError_ResetRequired"})
_RETRY_INIT_S = 30.0
"""A driver can be loaded after the agent started (e.g. after an install); try again this often."""
_SLOW_FIELDS_EVERY = 30
"""Ticks between re-reads of values that change rarely (power limit, max PCIe link, ECC counters)."""
_MEDIUM_FIELDS_EVERY = 5
"""Ticks between re-reads of values an operator does not watch second by second (processes, PCIe
link state, memory clock): each NVML call is a driver ioctl, and 8 GPUs multiply it."""


class GpuSampler(Protocol):
    """What the collector needs from a GPU source. ``sample`` must not raise."""

    def sample(self) -> Gpus: ...

    def close(self) -> None: ...


class NoGpuSampler:
    """For a host the operator declared GPU-less (the demo on a laptop): says so on every tick."""

    def __init__(self, detail: str = "GPU sampling is off") -> None:
        self._detail = detail

    def sample(self) -> Gpus:
        return Gpus(source="none", state="no_gpu", detail=self._detail)

    def close(self) -> None:
        return None


def _error_name(exc: BaseException) -> str:
    return type(exc).__name__


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{_error_name(exc)}: {text}" if text else _error_name(exc)


@dataclass
class _Device:
    """A cached handle and the values of it that change rarely."""

    index: int
    handle: Any
    name: str | None = None
    uuid: str | None = None
    memory_total: int | None = None
    power_limit_w: float | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    ecc_uncorrected: int | None = None
    unsupported: set[str] = field(default_factory=set)
    procs: list[Any] = field(default_factory=list)
    pcie_gen: int | None = None
    pcie_width: int | None = None
    mem_clock: int | None = None
    last_key: tuple[Any, ...] | None = None
    last_gpu: Gpu | None = None
    gone: str | None = None
    """The NVML error that says this GPU stopped answering (fell off the bus, needs a reset)."""


class NvmlSampler:
    """Samples every GPU through an NVML binding (``pynvml`` unless another one is given)."""

    source: GpuSource = "nvml"

    def __init__(
        self,
        nvml: Any | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        process_names: bool = True,
    ) -> None:
        self._nvml = nvml
        self._clock = clock
        self._process_names = process_names
        self._ready = False
        self._failure: Gpus | None = None
        self._failed_at = 0.0
        self._devices: list[_Device] = []
        self._driver: str | None = None
        self._cuda_driver: str | None = None
        self._ticks = 0
        self._names: dict[int, str | None] = {}

    # -- set-up -------------------------------------------------------------------------------
    def _lib(self) -> Any:
        if self._nvml is None:
            # Here, not at the top: a host without NVIDIA's library still runs the agent (no GPU sampling).
            import pynvml

            self._nvml = pynvml
        return self._nvml

    def _start(self) -> Gpus | None:
        """Initialise NVML and cache handles; return the state to report when that is impossible."""
        if self._ready:
            return None
        if self._failure is not None and self._clock() - self._failed_at < _RETRY_INIT_S:
            return self._failure
        try:
            lib = self._lib()
        except ImportError as exc:
            return self._fail("error", f"nvidia-ml-py is not installed ({exc})")
        try:
            lib.nvmlInit()
        except Exception as exc:
            if _error_name(exc) in _NO_DRIVER_ERRORS:
                return self._fail("no_driver", f"No NVIDIA driver: {_describe(exc)}")
            return self._fail("error", f"NVML would not start: {_describe(exc)}")
        try:
            self._driver = _text(lib.nvmlSystemGetDriverVersion())
            self._cuda_driver = _cuda_version(self._safe_call(lib.nvmlSystemGetCudaDriverVersion_v2))
            count = int(lib.nvmlDeviceGetCount())
            self._devices = [_Device(i, lib.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
        except Exception as exc:
            self._shutdown()
            return self._fail("error", f"NVML could not list GPUs: {_describe(exc)}")
        for dev in self._devices:
            dev.name = _text(self._safe_call(lib.nvmlDeviceGetName, dev.handle))
            dev.uuid = _text(self._safe_call(lib.nvmlDeviceGetUUID, dev.handle))
        self._ready = True
        self._failure = None
        return None

    def _fail(self, state: Literal["no_driver", "no_gpu", "error"], detail: str) -> Gpus:
        self._failure = Gpus(source=self.source, state=state, detail=detail)
        self._failed_at = self._clock()
        return self._failure

    def _shutdown(self) -> None:
        if self._nvml is None:
            return
        try:
            self._nvml.nvmlShutdown()
        except Exception:
            return

    def close(self) -> None:
        if self._ready:
            self._shutdown()
        self._ready = False
        self._devices = []

    # -- reading ------------------------------------------------------------------------------
    @staticmethod
    def _safe_call(fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:
            return None

    def _read(self, dev: _Device, key: str, fn: Callable[..., Any], *args: Any) -> Any:
        """One NVML reading; a field the GPU does not support is never asked for again."""
        if key in dev.unsupported:
            return None
        try:
            return fn(dev.handle, *args)
        except Exception as exc:
            name = _error_name(exc)
            if name == "NVMLError_NotSupported":
                dev.unsupported.add(key)
            elif name in _DEVICE_GONE_ERRORS:
                dev.gone = name
            return None

    def sample(self) -> Gpus:
        try:
            return self._sample()
        except Exception as exc:  # a sampler must never take the tick down
            return Gpus(source=self.source, state="error", detail=f"GPU sampling failed: {_describe(exc)}")

    def _sample(self) -> Gpus:
        failure = self._start()
        if failure is not None:
            return failure
        if not self._devices:
            return Gpus(
                source=self.source,
                state="no_gpu",
                detail="The NVIDIA driver is loaded but reports no GPUs",
                driver_version=self._driver,
                cuda_driver_version=self._cuda_driver,
            )
        slow = self._ticks % _SLOW_FIELDS_EVERY == 0
        medium = self._ticks % _MEDIUM_FIELDS_EVERY == 0
        self._ticks += 1
        devices = [self._sample_device(dev, slow, medium) for dev in self._devices]
        gone = [f"GPU {dev.index}: {dev.gone}" for dev in self._devices if dev.gone]
        for dev in self._devices:
            dev.gone = None
        return Gpus(
            source=self.source,
            state="error" if gone else "ok",
            detail=f"GPU(s) not answering, reset or reboot needed ({'; '.join(gone)})" if gone else None,
            driver_version=self._driver,
            cuda_driver_version=self._cuda_driver,
            devices=devices,
        )

    def _sample_device(self, dev: _Device, slow: bool, medium: bool) -> Gpu:
        lib = self._nvml
        assert lib is not None
        mem = self._read(dev, "memory", lib.nvmlDeviceGetMemoryInfo)
        util = self._read(dev, "utilization", lib.nvmlDeviceGetUtilizationRates)
        if slow:
            limit = self._read(dev, "power_limit", lib.nvmlDeviceGetEnforcedPowerLimit)
            dev.power_limit_w = None if limit is None else limit / 1000.0
            dev.pcie_gen_max = self._read(dev, "pcie_gen_max", lib.nvmlDeviceGetMaxPcieLinkGeneration)
            dev.pcie_width_max = self._read(dev, "pcie_width_max", lib.nvmlDeviceGetMaxPcieLinkWidth)
            dev.ecc_uncorrected = self._read(
                dev,
                "ecc",
                lib.nvmlDeviceGetTotalEccErrors,
                lib.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                lib.NVML_VOLATILE_ECC,
            )
        power = self._read(dev, "power", lib.nvmlDeviceGetPowerUsage)
        reasons = self._read(dev, "throttle", _clock_event_reasons(lib))
        if medium:
            dev.procs = self._read(dev, "processes", lib.nvmlDeviceGetComputeRunningProcesses) or []
            dev.mem_clock = self._read(dev, "mem_clock", lib.nvmlDeviceGetClockInfo, lib.NVML_CLOCK_MEM)
            dev.pcie_gen = self._read(dev, "pcie_gen", lib.nvmlDeviceGetCurrPcieLinkGeneration)
            dev.pcie_width = self._read(dev, "pcie_width", lib.nvmlDeviceGetCurrPcieLinkWidth)
        procs, mem_clock, pcie_gen, pcie_width = dev.procs, dev.mem_clock, dev.pcie_gen, dev.pcie_width
        temperature = self._read(dev, "temperature", lib.nvmlDeviceGetTemperature, lib.NVML_TEMPERATURE_GPU)
        sm_clock = self._read(dev, "sm_clock", lib.nvmlDeviceGetClockInfo, lib.NVML_CLOCK_SM)
        proc_key = tuple((p.pid, getattr(p, "usedGpuMemory", None)) for p in procs)
        key = (
            None if util is None else util.gpu,
            None if mem is None else (mem.used, mem.total),
            power,
            dev.power_limit_w,
            temperature,
            sm_clock,
            mem_clock,
            pcie_gen,
            pcie_width,
            dev.pcie_gen_max,
            dev.pcie_width_max,
            reasons,
            dev.ecc_uncorrected,
            proc_key,
        )
        if key == dev.last_key and dev.last_gpu is not None:
            return dev.last_gpu  # an idle GPU reads the same every tick: share the frozen model
        gpu = Gpu(
            index=dev.index,
            name=dev.name,
            uuid=dev.uuid,
            utilization_pct=None if util is None else float(util.gpu),
            memory_used_bytes=None if mem is None else int(mem.used),
            memory_total_bytes=None if mem is None else int(mem.total),
            power_w=None if power is None else power / 1000.0,
            power_limit_w=dev.power_limit_w,
            temperature_c=_float(temperature),
            sm_clock_mhz=sm_clock,
            mem_clock_mhz=mem_clock,
            pcie_gen=pcie_gen,
            pcie_gen_max=dev.pcie_gen_max,
            pcie_width=pcie_width,
            pcie_width_max=dev.pcie_width_max,
            throttle_reasons=[] if reasons is None else decode_throttle_reasons(int(reasons)),
            ecc_uncorrected=dev.ecc_uncorrected,
            processes=[self._process(p) for p in procs],
        )
        dev.last_key, dev.last_gpu = key, gpu
        return gpu

    def _process(self, proc: Any) -> GpuProcess:
        pid = int(proc.pid)
        used = getattr(proc, "usedGpuMemory", None)
        return GpuProcess(
            pid=pid, used_memory_bytes=None if used is None else int(used), name=self._name_of(pid)
        )

    def _name_of(self, pid: int) -> str | None:
        if not self._process_names:
            return None
        if pid not in self._names:
            if len(self._names) > 4096:
                self._names.clear()
            try:
                self._names[pid] = psutil.Process(pid).name()
            except (psutil.Error, OSError):
                self._names[pid] = None
        return self._names[pid]

    # -- static facts ----------------------------------------------------------------------------
    def static_facts(self) -> StaticNvmlFacts:
        """Name, compute capability, memory and PCIe maxima per GPU, for ``agent doctor``."""
        failure = self._start()
        if failure is not None:
            return StaticNvmlFacts(state=failure.state, detail=failure.detail)
        lib = self._nvml
        assert lib is not None
        gpus: list[dict[str, Any]] = []
        for dev in self._devices:
            cc = self._read(dev, "compute_capability", lib.nvmlDeviceGetCudaComputeCapability)
            mem = self._read(dev, "memory", lib.nvmlDeviceGetMemoryInfo)
            gpus.append(
                {
                    "index": dev.index,
                    "name": dev.name,
                    "uuid": dev.uuid,
                    "compute_capability": None if cc is None else f"{cc[0]}.{cc[1]}",
                    "memory_total_bytes": None if mem is None else int(mem.total),
                    "pcie_gen_max": self._read(dev, "pcie_gen_max", lib.nvmlDeviceGetMaxPcieLinkGeneration),
                    "pcie_width_max": self._read(dev, "pcie_width_max", lib.nvmlDeviceGetMaxPcieLinkWidth),
                }
            )
        state: Literal["ok", "no_gpu"] = "ok" if gpus else "no_gpu"
        return StaticNvmlFacts(
            state=state,
            detail=None,
            driver_version=self._driver,
            cuda_driver_version=self._cuda_driver,
            gpus=gpus,
        )


@dataclass(frozen=True)
class StaticNvmlFacts:
    """What NVML says about the host's GPUs that does not change while it runs."""

    state: Literal["ok", "no_driver", "no_gpu", "error"]
    detail: str | None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    gpus: list[dict[str, Any]] = field(default_factory=list)


class FixtureSampler(NvmlSampler):
    """Replays a capture made by ``tools/gpu_capture.py`` through the NVML code path.

    ``scale_to`` repeats the captured GPUs (with their own indexes and UUID suffixes) to model a
    bigger host, e.g. the 8-GPU target from a 2-GPU capture.
    """

    source: GpuSource = "fixture"

    def __init__(self, capture: Path | str | dict[str, Any], *, scale_to: int | None = None) -> None:
        data = json.loads(Path(capture).read_text()) if isinstance(capture, (str, Path)) else capture
        super().__init__(ReplayNvml(data, scale_to=scale_to), process_names=False)


def make_sampler(
    kind: str = "auto", *, fixture: Path | str | None = None, scale_to: int | None = None
) -> GpuSampler:
    """The sampler for ``kind``: ``auto`` (NVML, else nvidia-smi when NVML cannot load), ``nvml``,
    ``smi``, ``fixture`` (needs ``fixture``) or ``none``."""
    if kind == "none":
        return NoGpuSampler()
    if kind == "fixture":
        if fixture is None:
            raise ValueError(
                "the fixture GPU sampler needs a capture file (nvml*.json or a --query-gpu .csv)"
            )
        if str(fixture).endswith(".csv"):
            return CsvFixtureSampler(fixture, scale_to=scale_to)
        return FixtureSampler(fixture, scale_to=scale_to)
    if kind == "smi":
        return SmiSampler()
    if kind == "nvml":
        return NvmlSampler()
    if kind != "auto":
        raise ValueError(f"unknown GPU sampler {kind!r}; allowed: auto, nvml, smi, fixture, none")
    nvml = NvmlSampler()
    first = nvml.sample()
    if first.state == "no_driver":
        smi = SmiSampler()
        if smi.sample().state == "ok":
            nvml.close()
            return smi
    return nvml


def _clock_event_reasons(lib: Any) -> Any:
    """NVML renamed "throttle reasons" to "clocks event reasons" (driver 535); older bindings have only the first."""
    fn = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
    return fn if fn is not None else lib.nvmlDeviceGetCurrentClocksThrottleReasons


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _cuda_version(value: Any) -> str | None:
    """NVML's 13000 → "13.0" (major·1000 + minor·10), as nvidia-smi prints it."""
    if not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"
