"""``agent doctor``: does this host fit the profile? One check per line, each failure with what to do.

The GPU facts come from ``agent.telemetry.facts`` (NVML first, ``nvidia-smi`` as fallback, or a saved
capture); everything else (disk, paths, Python) is read here. The checks are pure functions of those
facts and the profile, so they are tested with captures from real hosts.

SGLang 0.5.23 facts behind the SM120 checks (``docs/reference/sglang-0.5.23.md`` §8): FlashInfer
all-reduce fusion requires SM90 or SM10X and fails at start-up on SM120; custom all-reduce is off on
more than two PCIe-only GPUs, where FlashInfer's PCIe IPC all-reduce (opt-in by environment) replaces
slow NCCL; ``fa3`` asserts SM8x/SM90 and ``cutedsl_mla`` SM100.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import platform
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from agent.install.manifest import manifest_path
from agent.install.stack import find_python, find_uv
from agent.install.stack_check import launch_problems
from agent.profile.schema import Profile
from agent.telemetry.facts import HostGpuFacts

Status = Literal["ok", "warn", "fail", "info"]

REQUIRED_CUDA = (13, 0)
"""The sglang 0.5.23 stack's CUDA wheels need a driver that supports CUDA 13."""
VENV_MIN_FREE_BYTES = 30 * 2**30
"""torch, the CUDA libraries, FlashInfer and sglang take about 20 GiB; JIT caches grow beside them."""
PCIE_IPC_ENV = "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE"
FUSION_FLAGS = ("--flashinfer-allreduce-fusion-backend", "--enable-flashinfer-allreduce-fusion")
SM120_FAILING_BACKENDS = {"fa3": "asserts SM8x/SM90", "cutedsl_mla": "is SM100-only"}
_CC_BY_NAME = (
    ("RTX PRO 6000", "12.0"),
    ("RTX 50", "12.0"),
    ("B200", "10.0"),
    ("B300", "10.3"),
    ("H200", "9.0"),
)
"""For nvidia-smi -q, which does not print compute capability."""


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    found: str
    expected: str = ""
    fix: str = ""


@dataclass(frozen=True)
class HostProbe:
    """Everything about the host besides the GPUs; injectable so the checks run on captured facts."""

    disk_free: Callable[[Path], int | None]
    python_for: Callable[[str], str | None]
    uv: str | None
    python_version: str


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def disk_free(path: Path) -> int | None:
    try:
        return shutil.disk_usage(_nearest_existing(path)).free
    except OSError:
        return None


def real_probe() -> HostProbe:
    return HostProbe(
        disk_free=disk_free, python_for=find_python, uv=find_uv(), python_version=platform.python_version()
    )


SMI_CC_QUERY = ["--query-gpu=index,uuid,compute_cap", "--format=csv"]
"""Asked when facts came from ``nvidia-smi -q``, which does not print compute capability."""


def fill_compute_capability(facts: HostGpuFacts, csv_text: str) -> HostGpuFacts:
    """Compute capability from ``nvidia-smi --query-gpu=index,uuid,compute_cap --format=csv`` output,
    matched by UUID (else index), for GPUs whose facts lack it."""
    rows = list(csv.DictReader(io.StringIO(csv_text), skipinitialspace=True))
    by_uuid = {r.get("uuid", "").strip(): r.get("compute_cap", "").strip() for r in rows}
    by_index = {r.get("index", "").strip(): r.get("compute_cap", "").strip() for r in rows}
    gpus = []
    for gpu in facts.gpus:
        cc = gpu.compute_capability or by_uuid.get(gpu.uuid or "") or by_index.get(str(gpu.index))
        gpus.append(dataclasses.replace(gpu, compute_capability=cc or None))
    return dataclasses.replace(facts, gpus=gpus)


def _version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return tuple(int(p) for p in text.split("."))
    except ValueError:
        return None


def _gib(n: int | None) -> str:
    return "unknown" if n is None else f"{n / 2**30:.1f} GiB"


def _counted(values: list[str]) -> str:
    seen: dict[str, int] = {}
    for v in values:
        seen[v] = seen.get(v, 0) + 1
    return ", ".join(f"{n} × {v}" for v, n in seen.items())


def _compute_capabilities(facts: HostGpuFacts) -> tuple[list[str], bool]:
    """Per GPU; the flag says some were inferred from the product name."""
    inferred = False
    out: list[str] = []
    for gpu in facts.gpus:
        cc = gpu.compute_capability
        if cc is None:
            cc = next((c for key, c in _CC_BY_NAME if gpu.name and key in gpu.name), None)
            inferred = inferred or cc is not None
        out.append(cc or "unknown")
    return out, inferred


def _sm(cc: str | None) -> str:
    return "SM?" if not cc or cc == "unknown" else "SM" + cc.replace(".", "")


def _cc_fix(want: str | None, found: list[str]) -> str:
    host = ", ".join(sorted({_sm(c) for c in found}))
    return (
        f"this host is {host}; the profile targets {_sm(want)} (stack.gpus.compute_capability), and its "
        "attention backend, all-reduce and kernels are chosen for that architecture"
    )


def gpu_checks(facts: HostGpuFacts, profile: Profile | None) -> list[Check]:
    expected = profile.stack.gpus if profile else None
    min_driver = expected.min_driver if expected else "580.0"
    if facts.state != "ok":
        what = "no NVIDIA driver" if facts.state == "no_driver" else f"GPUs not readable ({facts.state})"
        detail = facts.detail or "no detail"
        if detail.lower().startswith(what.lower()):
            detail = detail[len(what) :].lstrip(": ")
        return [
            Check(
                "NVIDIA driver",
                "fail",
                f"{what}: {detail}",
                f">= {min_driver} with CUDA {REQUIRED_CUDA[0]}",
                "install the NVIDIA driver and check that `nvidia-smi` lists the GPUs; no GPU check ran",
            )
        ]
    checks: list[Check] = []
    gpus = facts.gpus
    if expected:
        ok = len(gpus) == expected.count
        checks.append(
            Check(
                "GPU count",
                "ok" if ok else "fail",
                str(len(gpus)),
                str(expected.count),
                ""
                if ok
                else f"the profile wants {expected.count} GPUs (stack.gpus.count); use the host that has them",
            )
        )
        if profile and profile.server.tp_size > len(gpus):
            checks.append(
                Check(
                    "tensor parallel",
                    "fail",
                    f"tp_size {profile.server.tp_size}",
                    f"<= {len(gpus)} GPUs",
                    "server.tp_size needs that many GPUs on this host",
                )
            )
    names = [g.name or "unknown" for g in gpus]
    want_name = expected.name_contains if expected else None
    name_ok = want_name is None or all(want_name in n for n in names)
    checks.append(
        Check(
            "GPU model",
            "ok" if name_ok else "fail",
            _counted(names),
            f"contains {want_name!r}" if want_name else "",
            "" if name_ok else f"the profile is made for {want_name} GPUs (stack.gpus.name_contains)",
        )
    )
    ccs, inferred = _compute_capabilities(facts)
    want_cc = expected.compute_capability if expected else None
    cc_ok = want_cc is None or all(cc == want_cc for cc in ccs)
    checks.append(
        Check(
            "compute capability",
            "ok" if cc_ok else "fail",
            _counted(ccs) + (" (from the product name)" if inferred else ""),
            want_cc or "",
            "" if cc_ok else _cc_fix(want_cc, ccs),
        )
    )
    driver = _version(facts.driver_version)
    driver_ok = driver is not None and driver >= (_version(min_driver) or (0,))
    checks.append(
        Check(
            "driver",
            "ok" if driver_ok else "fail",
            facts.driver_version or "unknown",
            f">= {min_driver}",
            "" if driver_ok else f"upgrade the NVIDIA driver to {min_driver} or newer",
        )
    )
    cuda = _version(facts.cuda_driver_version)
    cuda_ok = cuda is not None and cuda >= REQUIRED_CUDA
    checks.append(
        Check(
            "CUDA (driver supports)",
            "ok" if cuda_ok else "fail",
            facts.cuda_driver_version or "unknown",
            f">= {REQUIRED_CUDA[0]}.{REQUIRED_CUDA[1]} (sglang 0.5.23 stack)",
            "" if cuda_ok else "the stack's wheels are built for CUDA 13; install a driver that supports it",
        )
    )
    mems = [g.memory_total_bytes for g in gpus]
    checks.append(Check("memory per GPU", "info", _counted([_gib(m) for m in mems])))
    checks.append(_pcie_check(facts))
    checks.append(_nvlink_check(facts))
    return checks


def _pcie_check(facts: HostGpuFacts) -> Check:
    links = [(g.pcie_gen_max, g.pcie_width_max) for g in facts.gpus]
    known = [(gen, width) for gen, width in links if gen is not None and width is not None]
    if not known:
        return Check("PCIe (max link)", "info", "not reported", "", "")
    text = _counted([f"Gen{gen} x{width}" if gen else "unknown" for gen, width in links])
    best = max(known)
    weak = [g.index for g, link in zip(facts.gpus, links, strict=True) if link != best]
    if weak or best[1] < 16:
        return Check(
            "PCIe (max link)",
            "warn",
            text,
            f"Gen{best[0]} x16 on every GPU",
            f"GPUs {weak or 'all'} have a narrower maximum link: check their slots and risers "
            "(all-reduce over PCIe runs at the slowest link)",
        )
    return Check(
        "PCIe (max link)", "ok", text, "the same on every GPU (idle links train down; this is the max)"
    )


def _nvlink_check(facts: HostGpuFacts) -> Check:
    if len(facts.gpus) < 2:
        return Check("NVLink", "info", "n/a (one GPU)")
    if facts.nvlink is None:
        return Check("NVLink", "info", "unknown (`nvidia-smi topo -m` not available)")
    kinds = sorted(set(facts.topology.links.values() if facts.topology else []))
    return Check(
        "NVLink", "info", f"yes ({', '.join(kinds)})" if facts.nvlink else "none: GPUs talk over PCIe"
    )


def _sm120(facts: HostGpuFacts, profile: Profile) -> bool:
    if facts.state == "ok" and facts.gpus:
        return any(cc.startswith("12.") for cc in _compute_capabilities(facts)[0])
    return profile.stack.gpus.compute_capability.startswith("12.")


def sm120_checks(facts: HostGpuFacts, profile: Profile) -> list[Check]:
    if not _sm120(facts, profile):
        return []
    checks: list[Check] = []
    fusion = [f for f in profile.server.extra_flags if f.split("=", 1)[0] in FUSION_FLAGS]
    checks.append(
        Check(
            "all-reduce fusion (SM120)",
            "fail" if fusion else "ok",
            " ".join(fusion) if fusion else "not set",
            "not set",
            "remove it from server.extra_flags: FlashInfer all-reduce fusion requires SM90/SM10X and "
            "SGLang 0.5.23 fails at start-up on SM120"
            if fusion
            else "",
        )
    )
    backend = profile.server.attention_backend
    if backend in SM120_FAILING_BACKENDS:
        checks.append(
            Check(
                "attention backend (SM120)",
                "fail",
                backend,
                "triton, flashinfer or trtllm_mha",
                f"server.attention_backend {backend} {SM120_FAILING_BACKENDS[backend]}; use triton for MLA (Kimi)",
            )
        )
    pcie_only = facts.nvlink is not True  # unknown topology: assume the PCIe-only target host
    if pcie_only and profile.server.tp_size > 2:
        on = profile.server.env.get(PCIE_IPC_ENV) == "1"
        checks.append(
            Check(
                "PCIe all-reduce (SM120)",
                "ok" if on else "warn",
                f"{PCIE_IPC_ENV}={profile.server.env.get(PCIE_IPC_ENV, 'unset')}",
                "1",
                ""
                if on
                else f'add {PCIE_IPC_ENV} = "1" under [server.env]: custom all-reduce is off on more than '
                "two PCIe-only GPUs and NCCL is much slower for decode-sized all-reduces",
            )
        )
    return checks


def _path_check(name: str, path: str | None, key: str) -> Check | None:
    if path is None:
        return None
    where = Path(path).expanduser()
    if (where / "config.json").is_file():
        return Check(name, "ok", f"{where} (config.json present)")
    found = "missing" if not where.exists() else "no config.json in it"
    return Check(
        name,
        "fail",
        f"{where}: {found}",
        "a model folder with config.json",
        f"download it there or fix {key}",
    )


def stack_files_check(venv: Path) -> Check:
    """The stack's installed files against its manifest (``agent.install.stack_check``): a hand edit
    fails here as it stops ``agent serve --engine sglang``."""
    problems = launch_problems(venv)
    if problems:
        return Check(
            "stack files", "fail", "; ".join(problems), "as agent install left them", "run agent install"
        )
    if not manifest_path(venv).exists():
        return Check("stack files", "info", f"no stack installed by agent install at {venv}")
    return Check("stack files", "ok", "as agent install left them (every recorded sha256 matches)")


def host_checks(profile: Profile, probe: HostProbe) -> list[Check]:
    checks: list[Check] = []
    want = profile.stack.python
    python = probe.python_for(want)
    if python:
        checks.append(Check("python", "ok", f"{want} at {python}", want))
    elif probe.uv:
        checks.append(Check("python", "ok", f"uv ({probe.uv}) will provide {want}", want))
    else:
        checks.append(
            Check(
                "python",
                "fail",
                f"no python{want} (agent runs on {probe.python_version})",
                f"{want} (stack.python)",
                f"install python{want} with its venv module, or uv",
            )
        )
    venv = Path(profile.stack.venv).expanduser()
    free = probe.disk_free(venv)
    venv_ok = free is not None and free >= VENV_MIN_FREE_BYTES
    checks.append(
        Check(
            "disk for the stack venv",
            "ok" if venv_ok else "fail",
            f"{_gib(free)} free at {venv}",
            f">= {_gib(VENV_MIN_FREE_BYTES)}",
            "" if venv_ok else "free space there or set stack.venv to a roomier disk",
        )
    )
    checks.append(stack_files_check(venv))
    checks.append(
        Check("disk for the model", "info", f"{_gib(probe.disk_free(Path(profile.model.path)))} free")
    )
    for check in (
        _path_check("model path", profile.model.path, "model.path"),
        _path_check(
            "draft model path", profile.model.draft_path if profile.speculative else None, "model.draft_path"
        ),
    ):
        if check is not None:
            checks.append(check)
    return checks


def run_checks(facts: HostGpuFacts, profile: Profile | None, probe: HostProbe) -> list[Check]:
    checks = gpu_checks(facts, profile)
    if profile is not None:
        checks += host_checks(profile, probe)
        checks += sm120_checks(facts, profile)
    return checks


def fits(checks: list[Check]) -> bool:
    return not any(c.status == "fail" for c in checks)


_MARK = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "info": "--"}


def render_table(checks: list[Check], title: str) -> str:
    width = max(len(c.name) for c in checks)
    found_w = min(60, max(len(c.found) for c in checks))
    lines = [title, f"{'check':<{width}}  {'':4}  {'found':<{found_w}}  expected"]
    for c in checks:
        lines.append(f"{c.name:<{width}}  {_MARK[c.status]:<4}  {c.found:<{found_w}}  {c.expected}".rstrip())
        if c.fix:
            lines.append(f"{'':<{width}}        -> {c.fix}")
    failed = [c.name for c in checks if c.status == "fail"]
    lines.append("")
    lines.append(f"does not fit: {', '.join(failed)}" if failed else "fits")
    return "\n".join(lines)


def to_json(checks: list[Check], facts: HostGpuFacts) -> dict[str, Any]:
    return {"fits": fits(checks), "checks": [asdict(c) for c in checks], "gpus": facts.to_json()}
