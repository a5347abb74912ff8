"""``agent doctor`` on GPU facts captured from real hosts (tests/fixtures/gpu), against the shipped profiles.

The GPU is the one part replaced by captures (NVML replay, saved ``nvidia-smi -q``/``topo -m`` text);
disk, paths and Python are injected through ``HostProbe`` so the verdicts do not depend on this machine.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
import types
from pathlib import Path
from typing import Any

import pytest

from agent.cli.main import main
from agent.install.doctor import HostProbe, fill_compute_capability, fits, render_table, run_checks
from agent.profile.schema import Profile
from agent.profile.store import profile_from_dict
from agent.telemetry.facts import HostGpuFacts, facts_from_smi_q, gpu_host_facts
from agent.telemetry.nvml import FixtureSampler, NvmlSampler

REPO = Path(__file__).resolve().parents[2]
GPU = REPO / "tests" / "fixtures" / "gpu"
KIMI = REPO / "profiles" / "kimi-k25-eagle3.toml"


def _facts_h200() -> HostGpuFacts:
    return gpu_host_facts(
        FixtureSampler(GPU / "h200" / "nvml.json"),
        topo_text=(GPU / "h200" / "topo.txt").read_text(),
        use_nvidia_smi=False,
    )


def _facts_rtx() -> HostGpuFacts:
    rtx = GPU / "rtx-pro-6000-8x"
    return facts_from_smi_q((rtx / "nvidia-smi-q.log").read_text(), (rtx / "topo.txt").read_text())


def _profile(tmp_path: Path, models: bool, **server: Any) -> Profile:
    data = tomllib.loads(KIMI.read_text())
    if models:
        for key in ("path", "draft_path"):
            folder = tmp_path / key
            folder.mkdir(exist_ok=True)
            (folder / "config.json").write_text("{}")
            data["model"][key] = str(folder)
    data["server"].update(server)
    return profile_from_dict(data, "kimi-k25-eagle3.toml")


def _probe(free_gib: float = 500.0, python: bool = True) -> HostProbe:
    return HostProbe(
        disk_free=lambda path: int(free_gib * 2**30),
        python_for=lambda version: f"/usr/bin/python{version}" if python else None,
        uv=None,
        python_version="3.11.7",
    )


def _failed(checks: list[Any]) -> set[str]:
    return {c.name for c in checks if c.status == "fail"}


def test_an_h200_host_is_told_why_it_does_not_fit_the_blackwell_profile(tmp_path: Path) -> None:
    checks = run_checks(_facts_h200(), _profile(tmp_path, models=True), _probe())
    assert _failed(checks) == {"GPU count", "tensor parallel", "GPU model", "compute capability"}
    by_name = {c.name: c for c in checks}
    assert by_name["compute capability"].found == "1 × 9.0"
    assert "this host is SM90" in by_name["compute capability"].fix
    assert "SM120" in by_name["compute capability"].fix
    assert "RTX PRO 6000" in by_name["GPU model"].fix
    assert by_name["driver"].status == "ok" and by_name["CUDA (driver supports)"].status == "ok"
    # Not an SM120 host: the SM120-only setting checks do not apply.
    assert not any("SM120" in c.name for c in checks)
    assert not fits(checks)


def test_doctor_command_prints_a_table_and_exits_1_for_the_h200_capture(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc = main(
        [
            "doctor",
            "--profile",
            str(KIMI),
            "--facts-from",
            str(GPU / "h200" / "nvml.json"),
            "--topo",
            str(GPU / "h200" / "topo.txt"),
        ]
    )
    out = capsys.readouterr().out
    assert rc == 1
    assert "compute capability" in out and "FAIL" in out
    assert "does not fit: GPU count, tensor parallel, GPU model, compute capability" in out


def test_doctor_json_is_machine_readable(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["doctor", "--profile", str(KIMI), "--json", "--facts-from", str(GPU / "h200" / "nvml.json")])
    data = json.loads(capsys.readouterr().out)
    assert rc == 1 and data["fits"] is False
    assert data["gpus"]["gpus"][0]["name"] == "NVIDIA H200"
    assert {"name", "status", "found", "expected", "fix"} == set(data["checks"][0])


def test_the_rtx_pro_6000_host_fits_apart_from_the_model_paths(tmp_path: Path) -> None:
    facts = _facts_rtx()
    checks = run_checks(facts, _profile(tmp_path, models=False), _probe())
    assert _failed(checks) == {"model path", "draft model path"}
    by_name = {c.name: c for c in checks}
    assert by_name["compute capability"].found == "8 × 12.0 (from the product name)"
    assert by_name["PCIe (max link)"].found == "8 × Gen5 x16"
    assert by_name["NVLink"].found == "none: GPUs talk over PCIe"
    assert by_name["PCIe all-reduce (SM120)"].status == "ok"
    assert fits(run_checks(facts, _profile(tmp_path, models=True), _probe()))


def test_settings_known_to_fail_on_sm120_are_named(tmp_path: Path) -> None:
    profile = _profile(
        tmp_path,
        models=True,
        extra_flags=["--flashinfer-allreduce-fusion-backend", "trtllm"],
        attention_backend="fa3",
        env={},
    )
    checks = run_checks(_facts_rtx(), profile, _probe())
    assert _failed(checks) == {"all-reduce fusion (SM120)", "attention backend (SM120)"}
    by_name = {c.name: c for c in checks}
    assert "requires SM90/SM10X" in by_name["all-reduce fusion (SM120)"].fix
    assert by_name["PCIe all-reduce (SM120)"].status == "warn"
    assert "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE" in by_name["PCIe all-reduce (SM120)"].fix


def test_a_gpu_with_a_narrower_maximum_link_is_named(tmp_path: Path) -> None:
    facts = _facts_rtx()
    gpus = list(facts.gpus)
    gpus[5] = dataclasses.replace(gpus[5], pcie_width_max=8)
    checks = run_checks(dataclasses.replace(facts, gpus=gpus), _profile(tmp_path, models=True), _probe())
    pcie = next(c for c in checks if c.name == "PCIe (max link)")
    assert pcie.status == "warn"
    assert "[5]" in pcie.fix
    assert pcie.found == "7 × Gen5 x16, 1 × Gen5 x8"


def test_too_little_disk_and_no_python_fail_with_what_to_do(tmp_path: Path) -> None:
    checks = run_checks(_facts_rtx(), _profile(tmp_path, models=True), _probe(free_gib=5, python=False))
    assert _failed(checks) == {"disk for the stack venv", "python"}
    assert "install python3.12" in next(c for c in checks if c.name == "python").fix


class NVMLError_DriverNotLoaded(Exception):  # pynvml's class name, which NvmlSampler matches
    pass


def test_no_driver_is_a_clear_finding_and_does_not_fit(tmp_path: Path) -> None:
    def nvml_init() -> None:
        raise NVMLError_DriverNotLoaded("Driver Not Loaded")

    facts = gpu_host_facts(NvmlSampler(types.SimpleNamespace(nvmlInit=nvml_init)), use_nvidia_smi=False)
    checks = run_checks(facts, _profile(tmp_path, models=True), _probe())
    assert _failed(checks) == {"NVIDIA driver"}
    driver = checks[0]
    assert driver.found.startswith("no NVIDIA driver: NVMLError_DriverNotLoaded")
    assert "no GPU check ran" in driver.fix
    assert not fits(checks)
    assert "does not fit: NVIDIA driver" in render_table(checks, "t")


def test_compute_capability_missing_from_smi_q_is_filled_from_the_csv_query(tmp_path: Path) -> None:
    facts = _facts_h200()
    blank = dataclasses.replace(
        facts, gpus=[dataclasses.replace(g, compute_capability=None) for g in facts.gpus]
    )
    filled = fill_compute_capability(blank, (GPU / "h200" / "smi-query.csv").read_text())
    assert [g.compute_capability for g in filled.gpus] == ["9.0"]
    checks = run_checks(filled, _profile(tmp_path, models=True), _probe())
    assert next(c for c in checks if c.name == "compute capability").found == "1 × 9.0"
