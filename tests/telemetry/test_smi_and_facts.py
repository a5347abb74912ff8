"""nvidia-smi formats (query CSV, topo -m, -q) and the static facts for ``agent doctor``."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pynvml
import pytest

from agent.telemetry.facts import facts_from_smi_q, gpu_host_facts
from agent.telemetry.nvml import FixtureSampler, NvmlSampler
from agent.telemetry.smi import (
    SmiSampler,
    attach_processes,
    parse_compute_apps,
    parse_query_gpu,
    parse_topology,
    smi_q_facts,
)

from .conftest import GPU

RTX = GPU / "rtx-pro-6000-8x"


def test_query_csv_with_units_header() -> None:
    busy, idle = parse_query_gpu((GPU / "h200x2-loaded" / "smi-query-loaded.csv").read_text())
    assert busy.memory_used_bytes == 42099 * 1024 * 1024
    assert busy.memory_total_bytes == 143771 * 1024 * 1024
    assert busy.power_w == pytest.approx(699.23)
    assert busy.utilization_pct == 100.0
    assert (busy.pcie_gen, busy.pcie_width) == (5, 16)
    assert idle.index == 1 and idle.sm_clock_mhz == 345


def test_query_csv_unknowns_and_hex_reasons() -> None:
    text = (
        "index, name, power.draw [W], pcie.link.gen.max, clocks_event_reasons.active, ecc.errors.uncorrected.volatile.total\n"
        "0, NVIDIA RTX PRO 6000 Blackwell Server Edition, [N/A], 5, 0x0000000000000044, [Not Supported]\n"
    )
    (gpu,) = parse_query_gpu(text)
    assert gpu.power_w is None
    assert gpu.pcie_gen_max == 5
    assert gpu.throttle_reasons == ["sw_power_cap", "hw_thermal_slowdown"]
    assert gpu.ecc_uncorrected is None


def test_processes_attach_by_uuid_only() -> None:
    gpus = parse_query_gpu((GPU / "h200x2-loaded" / "smi-query-loaded.csv").read_text())
    with_uuid = parse_compute_apps((GPU / "h200x2-loaded" / "apps-by-uuid.csv").read_text())
    busy, idle = attach_processes(gpus, with_uuid)
    assert [(p.pid, p.name, p.used_memory_bytes) for p in busy.processes] == [
        (558, "python3", 42090 * 1024 * 1024)
    ]
    assert idle.processes == []
    # The capture's own apps.csv has no gpu_uuid column: such rows cannot be placed on a GPU.
    assert all(
        g.processes == []
        for g in attach_processes(gpus, parse_compute_apps((GPU / "h200x2-loaded" / "apps.csv").read_text()))
    )


def fake_smi(tmp_path: Path, *, reject_extra_fields: bool) -> str:
    """An ``nvidia-smi`` stand-in (the GPU edge) that prints the captured CSV for the loaded pair."""
    query = (GPU / "h200x2-loaded" / "smi-query-loaded.csv").read_text()
    apps = (GPU / "h200x2-loaded" / "apps-by-uuid.csv").read_text()
    script = tmp_path / "nvidia-smi"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "args = ' '.join(sys.argv[1:])\n"
        f"if {reject_extra_fields!r} and 'clocks_event_reasons' in args:\n"
        "    print('Field \"clocks_event_reasons.active\" is not a valid field to query.'); sys.exit(2)\n"
        f"print({apps!r} if '--query-compute-apps' in args else {query!r}, end='')\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@pytest.mark.parametrize("reject_extra_fields", [False, True])
def test_smi_sampler_runs_nvidia_smi(tmp_path: Path, reject_extra_fields: bool) -> None:
    gpus = SmiSampler(fake_smi(tmp_path, reject_extra_fields=reject_extra_fields)).sample()
    assert gpus.state == "ok" and gpus.source == "nvidia-smi"
    assert [g.utilization_pct for g in gpus.devices] == [100.0, 0.0]
    assert [p.pid for p in gpus.devices[0].processes] == [558]


def test_smi_sampler_without_nvidia_smi(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    gpus = SmiSampler().sample()
    assert gpus.state == "no_driver"
    assert "nvidia-smi" in (gpus.detail or "")


def test_topology_h200_pair_has_nvlink() -> None:
    topo = parse_topology((GPU / "h200x2-loaded" / "topo.txt").read_text())
    assert topo.gpus == ["GPU0", "GPU1"]
    assert topo.link("GPU0", "GPU1") == "NV18"
    assert topo.nvlink is True


def test_topology_rtx_host_is_pcie_only_despite_ansi_header() -> None:
    text = (RTX / "topo.txt").read_text()
    assert "\x1b[4m" in text  # the capture really has the terminal's underline codes
    topo = parse_topology(text)
    assert topo.gpus == [f"GPU{i}" for i in range(8)]
    assert topo.nvlink is False
    assert topo.link("GPU0", "GPU1") == "PIX"
    assert topo.link("GPU0", "GPU4") == "SYS"
    assert topo.numa_affinity["GPU0"] == "0" and topo.numa_affinity["GPU7"] == "1"
    assert topo.cpu_affinity["GPU4"] == "64-127,192-238"


def test_topology_single_gpu() -> None:
    topo = parse_topology((GPU / "h200" / "topo.txt").read_text())
    assert topo.gpus == ["GPU0"] and topo.links == {} and topo.nvlink is False


def test_smi_q_text_of_the_target_host() -> None:
    driver, cuda, gpus = smi_q_facts((RTX / "nvidia-smi-q.log").read_text())
    assert (driver, cuda) == ("595.58.03", "13.2")
    assert len(gpus) == 8
    first = gpus[0]
    assert first.bus_id == "00000000:06:00.0"
    assert first.name == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert first.architecture == "Blackwell"
    assert first.memory_total_bytes == 97887 * 1024 * 1024
    # An idle link trains down: generation 1 now, 5 at most (the README's warning).
    assert (first.pcie_gen_current, first.pcie_gen_max) == (1, 5)
    assert (first.pcie_width_current, first.pcie_width_max) == (16, 16)
    assert len({g.uuid for g in gpus}) == 8


def test_host_facts_from_nvml_and_topology() -> None:
    facts = gpu_host_facts(
        FixtureSampler(GPU / "h200x2-loaded" / "nvml-loaded.json"),
        topo_text=(GPU / "h200x2-loaded" / "topo.txt").read_text(),
        use_nvidia_smi=False,
    )
    assert facts.state == "ok"
    assert (facts.driver_version, facts.cuda_driver_version) == ("580.159.04", "13.0")
    assert [g.compute_capability for g in facts.gpus] == ["9.0", "9.0"]
    assert facts.gpus[0].memory_total_bytes == 150_754_820_096
    assert facts.nvlink is True
    assert facts.to_json()["topology"]["links"]["GPU0-GPU1"] == "NV18"


def test_host_facts_fall_back_to_smi_q_when_nvml_cannot_load(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_library() -> None:
        raise pynvml.NVMLError_LibraryNotFound()

    monkeypatch.setattr(pynvml, "nvmlInit", no_library)
    facts = gpu_host_facts(
        NvmlSampler(),
        topo_text=(RTX / "topo.txt").read_text(),
        smi_q_text=(RTX / "nvidia-smi-q.log").read_text(),
        use_nvidia_smi=False,
    )
    assert facts.state == "ok" and facts.source == "nvidia-smi"
    assert len(facts.gpus) == 8 and facts.gpus[0].pcie_gen_max == 5
    assert facts.gpus[0].compute_capability is None  # -q does not print it
    assert facts.nvlink is False


def test_host_facts_without_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_library() -> None:
        raise pynvml.NVMLError_LibraryNotFound()

    monkeypatch.setattr(pynvml, "nvmlInit", no_library)
    facts = gpu_host_facts(NvmlSampler(), use_nvidia_smi=False)
    assert facts.state == "no_driver"
    assert facts.gpus == [] and facts.nvlink is None


def test_facts_from_saved_report() -> None:
    facts = facts_from_smi_q((RTX / "nvidia-smi-q.log").read_text(), (RTX / "topo.txt").read_text())
    assert facts.driver_version == "595.58.03"
    assert facts.nvlink is False
    assert facts.to_json()["gpus"][7]["pcie_width_max"] == 16
