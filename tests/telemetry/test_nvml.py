"""GPU sampling through the NVML code path, driven by real captures (the GPU is the one test double)."""

from __future__ import annotations

import json
from typing import Any

import pynvml
import pytest

from agent.telemetry.nvml import FixtureSampler, NoGpuSampler, NvmlSampler, make_sampler
from agent.telemetry.nvml_replay import ReplayNvml
from agent.telemetry.throttle import THROTTLE_BITS, decode_throttle_reasons

from .conftest import GPU


def capture(name: str) -> dict[str, Any]:
    path = {"h200": GPU / "h200" / "nvml.json", "h200x2": GPU / "h200x2-loaded" / "nvml-loaded.json"}[name]
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_idle_h200_reads_as_captured() -> None:
    gpus = FixtureSampler(GPU / "h200" / "nvml.json").sample()
    assert gpus.state == "ok" and gpus.source == "fixture"
    assert gpus.driver_version == "580.159.04"
    assert gpus.cuda_driver_version == "13.0"  # NVML's 13000
    (gpu,) = gpus.devices
    assert gpu.name == "NVIDIA H200"
    assert gpu.utilization_pct == 0.0
    assert gpu.memory_used_bytes == 644_939_776
    assert gpu.memory_total_bytes == 150_754_820_096
    assert gpu.power_w == pytest.approx(79.878)  # milliwatts → watts
    assert gpu.power_limit_w == pytest.approx(700.0)
    assert (gpu.pcie_gen, gpu.pcie_width) == (5, 16)
    assert gpu.throttle_reasons == ["gpu_idle"]
    assert gpu.ecc_uncorrected == 0
    assert gpu.processes == []
    # The capture holds no PCIe maxima: a driver that cannot say is "unknown", not 0.
    assert gpu.pcie_gen_max is None and gpu.pcie_width_max is None


def test_loaded_pair_shows_the_busy_gpu_and_its_process() -> None:
    busy, idle = FixtureSampler(capture("h200x2")).sample().devices
    assert busy.utilization_pct == 100.0
    assert busy.power_w == pytest.approx(695.022)
    assert busy.sm_clock_mhz == 1500
    assert busy.throttle_reasons == ["sw_power_cap"]
    assert [(p.pid, p.used_memory_bytes) for p in busy.processes] == [(558, 44_134_563_840)]
    assert idle.utilization_pct == 0.0 and idle.processes == []
    assert idle.uuid != busy.uuid


def test_scaled_to_eight_gpus_keeps_distinct_identities() -> None:
    gpus = FixtureSampler(capture("h200x2"), scale_to=8).sample()
    assert [g.index for g in gpus.devices] == list(range(8))
    assert len({g.uuid for g in gpus.devices}) == 8
    assert gpus.devices[6].utilization_pct == 100.0  # 6 repeats GPU 0 of the pair


def test_throttle_bits_match_pynvml() -> None:
    for bit, name in THROTTLE_BITS:
        constant = "nvmlClocksEventReason" + "".join(part.capitalize() for part in name.split("_"))
        assert getattr(pynvml, constant) == bit, constant
    assert decode_throttle_reasons(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert decode_throttle_reasons(0x1000) == ["bit_0x1000"]
    assert decode_throttle_reasons(0) == []


class CountingNvml(ReplayNvml):
    """Counts calls, to check that handles are cached and unsupported fields are not asked again."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.calls: dict[str, int] = {}

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if not (name.startswith("nvml") and callable(attr)):
            return attr
        calls = super().__getattribute__("calls")

        def counted(*args: Any) -> Any:
            calls[name] = calls.get(name, 0) + 1
            return attr(*args)

        return counted


def test_init_once_handles_cached_and_not_supported_not_asked_again() -> None:
    data = capture("h200")
    data["gpus"][0]["temperature_c"] = {"error": "NVMLError_NotSupported", "msg": "Not Supported"}
    lib = CountingNvml(data)
    sampler = NvmlSampler(lib, process_names=False)
    for _ in range(5):
        gpus = sampler.sample()
    assert gpus.devices[0].temperature_c is None
    assert lib.calls["nvmlInit"] == 1
    assert lib.calls["nvmlDeviceGetHandleByIndex"] == 1
    assert lib.calls["nvmlDeviceGetTemperature"] == 1
    assert lib.calls["nvmlDeviceGetUtilizationRates"] == 5  # every tick
    assert lib.calls["nvmlDeviceGetComputeRunningProcesses"] == 1  # every 5th tick
    assert lib.calls["nvmlDeviceGetEnforcedPowerLimit"] == 1  # every 30th tick
    sampler.sample()
    assert lib.calls["nvmlDeviceGetComputeRunningProcesses"] == 2


def test_no_driver_through_the_real_pynvml(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_library() -> None:
        raise pynvml.NVMLError_LibraryNotFound()

    monkeypatch.setattr(pynvml, "nvmlInit", no_library)
    gpus = NvmlSampler().sample()
    assert gpus.state == "no_driver"
    assert gpus.source == "nvml"
    assert "NVMLError_LibraryNotFound" in (gpus.detail or "")
    assert gpus.devices == []


@pytest.mark.parametrize(
    ("error", "state"),
    [
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "no_driver"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "error"),
        (pynvml.NVML_ERROR_UNKNOWN, "error"),
    ],
)
def test_init_errors_become_states(monkeypatch: pytest.MonkeyPatch, error: int, state: str) -> None:
    def failing() -> None:
        raise pynvml.NVMLError(error)

    monkeypatch.setattr(pynvml, "nvmlInit", failing)
    assert NvmlSampler().sample().state == state


def test_driver_without_gpus_is_no_gpu() -> None:
    gpus = NvmlSampler(ReplayNvml({"driver": "580.159.04", "cuda_driver": 13000, "gpus": []})).sample()
    assert gpus.state == "no_gpu"
    assert gpus.driver_version == "580.159.04"


def test_a_failed_init_is_retried_later_not_every_tick() -> None:
    now = [0.0]
    lib = CountingNvml(capture("h200"))
    broken = [True]
    real_init = lib.nvmlInit

    def init() -> None:
        if broken[0]:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
        real_init()

    lib.nvmlInit = init  # type: ignore[method-assign]
    sampler = NvmlSampler(lib, clock=lambda: now[0])
    assert sampler.sample().state == "no_driver"
    broken[0] = False
    now[0] = 5.0
    assert sampler.sample().state == "no_driver"  # within the retry interval: not tried again
    now[0] = 31.0
    assert sampler.sample().state == "ok"  # the driver came up (e.g. after an install)


def test_a_device_call_that_blows_up_costs_one_field_not_the_tick() -> None:
    lib = ReplayNvml(capture("h200"))

    def broken(handle: int) -> Any:
        raise RuntimeError("driver hiccup")

    lib.nvmlDeviceGetPowerUsage = broken  # type: ignore[method-assign]
    gpu = NvmlSampler(lib).sample().devices[0]
    assert gpu.power_w is None
    assert gpu.memory_used_bytes == 644_939_776


def test_make_sampler_kinds() -> None:
    assert isinstance(make_sampler("none"), NoGpuSampler)
    assert make_sampler("none").sample().state == "no_gpu"
    assert make_sampler("fixture", fixture=GPU / "h200" / "nvml.json").sample().state == "ok"
    with pytest.raises(ValueError, match="capture file"):
        make_sampler("fixture")
    with pytest.raises(ValueError, match="allowed: auto, nvml, smi, fixture, none"):
        make_sampler("cuda")


def test_csv_capture_replays_the_nvidia_smi_path() -> None:
    sampler = make_sampler("fixture", fixture=GPU / "h200x2-loaded" / "smi-query-loaded.csv", scale_to=8)
    gpus = sampler.sample()
    assert (gpus.source, gpus.state, gpus.driver_version) == ("fixture", "ok", "580.159.04")
    assert [g.index for g in gpus.devices] == list(range(8))
    assert gpus.devices[2].utilization_pct == 100.0 and gpus.devices[3].utilization_pct == 0.0
    assert gpus.devices[0].memory_used_bytes == 42099 * 1024 * 1024


def test_an_unchanged_gpu_is_shared_between_ticks_and_a_change_shows() -> None:
    data = capture("h200x2")
    lib = ReplayNvml(data)
    sampler = NvmlSampler(lib, process_names=False)
    first, second = sampler.sample(), sampler.sample()
    assert first.devices[1] is second.devices[1]  # same frozen model: no new memory per tick
    lib._gpus[1]["utilization"] = {"gpu": 55, "memory": 3}
    third = sampler.sample()
    assert third.devices[1] is not second.devices[1]
    assert third.devices[1].utilization_pct == 55.0
    assert third.devices[0] is second.devices[0]


def test_a_gpu_that_fell_off_the_bus_is_an_error_state() -> None:
    data = capture("h200x2")
    data["gpus"][1]["utilization"] = {"error": "NVMLError_GpuIsLost", "msg": "GPU is lost"}
    gpus = NvmlSampler(ReplayNvml(data), process_names=False).sample()
    assert gpus.state == "error"
    assert "GPU 1: NVMLError_GpuIsLost" in (gpus.detail or "")
    assert gpus.devices[1].utilization_pct is None and gpus.devices[0].utilization_pct == 100.0
