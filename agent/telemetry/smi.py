"""nvidia-smi's text formats: the ``--query-gpu`` CSV (a sampler for hosts where NVML will not load
in this interpreter), ``topo -m`` (is there NVLink?) and ``-q`` (static facts).

nvidia-smi is run with an argv list, never a shell, and with a timeout: a wedged driver can make it
hang. Its output is not promised to be stable across drivers, so every parser here reads columns
and keys by name and treats anything it does not recognise as unknown rather than failing.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from agent.telemetry.throttle import decode_throttle_reasons
from agent.wire import Gpu, GpuProcess, Gpus
from agent.wire.snapshot import GpuSource

MIB: Final = 1024 * 1024

QUERY_FIELDS: Final = (
    "index",
    "name",
    "uuid",
    "compute_cap",
    "driver_version",
    "memory.total",
    "memory.used",
    "utilization.gpu",
    "utilization.memory",
    "temperature.gpu",
    "power.draw",
    "power.limit",
    "clocks.current.sm",
    "clocks.current.memory",
    "pcie.link.gen.current",
    "pcie.link.width.current",
)
"""Fields every driver since 510 knows (the captures use exactly these)."""

EXTRA_FIELDS: Final = (
    "pcie.link.gen.max",
    "pcie.link.width.max",
    "clocks_event_reasons.active",
    "ecc.errors.uncorrected.volatile.total",
)
"""Asked for too; an older driver that refuses one of them gets the basic query instead."""

APPS_FIELDS: Final = ("gpu_uuid", "pid", "process_name", "used_gpu_memory")

_NOT_A_VALUE = {
    "",
    "n/a",
    "[n/a]",
    "[not supported]",
    "not supported",
    "[unknown error]",
    "[insufficient permissions]",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _key(header: str) -> str:
    """``memory.total [MiB]`` → ``memory.total``: columns are read by name, units ignored."""
    return header.strip().split(" [", 1)[0].strip()


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    text = value.strip()
    if text.lower() in _NOT_A_VALUE:
        return None
    token = text.split()[0]
    try:
        return float(int(token, 16)) if token.lower().startswith("0x") else float(token)
    except ValueError:
        return None


def _int(value: str | None) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _str(value: str | None) -> str | None:
    if value is None:
        return None
    text = value.strip()
    return None if text.lower() in _NOT_A_VALUE else text


def _rows(text: str) -> list[dict[str, str]]:
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    rows = [row for row in reader if row and any(cell.strip() for cell in row)]
    if not rows:
        return []
    header = [_key(cell) for cell in rows[0]]
    return [dict(zip(header, (cell.strip() for cell in row), strict=False)) for row in rows[1:]]


def parse_query_gpu(text: str) -> list[Gpu]:
    """Rows of ``nvidia-smi --query-gpu=... --format=csv`` (with or without units) as wire GPUs."""
    gpus: list[Gpu] = []
    for row in _rows(text):
        index = _int(row.get("index"))
        if index is None:
            continue
        total = _number(row.get("memory.total"))
        used = _number(row.get("memory.used"))
        reasons = _int(row.get("clocks_event_reasons.active") or row.get("clocks_throttle_reasons.active"))
        gpus.append(
            Gpu(
                index=index,
                name=_str(row.get("name")),
                uuid=_str(row.get("uuid")),
                utilization_pct=_number(row.get("utilization.gpu")),
                memory_used_bytes=None if used is None else int(used * MIB),
                memory_total_bytes=None if total is None else int(total * MIB),
                power_w=_number(row.get("power.draw")),
                power_limit_w=_number(row.get("power.limit")),
                temperature_c=_number(row.get("temperature.gpu")),
                sm_clock_mhz=_int(row.get("clocks.current.sm")),
                mem_clock_mhz=_int(row.get("clocks.current.memory")),
                pcie_gen=_int(row.get("pcie.link.gen.current")),
                pcie_gen_max=_int(row.get("pcie.link.gen.max")),
                pcie_width=_int(row.get("pcie.link.width.current")),
                pcie_width_max=_int(row.get("pcie.link.width.max")),
                throttle_reasons=[] if reasons is None else decode_throttle_reasons(reasons),
                ecc_uncorrected=_int(row.get("ecc.errors.uncorrected.volatile.total")),
            )
        )
    return gpus


@dataclass(frozen=True)
class SmiProcess:
    gpu_uuid: str | None
    pid: int
    name: str | None
    used_memory_bytes: int | None


def parse_compute_apps(text: str) -> list[SmiProcess]:
    """Rows of ``--query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory --format=csv``."""
    procs: list[SmiProcess] = []
    for row in _rows(text):
        pid = _int(row.get("pid"))
        if pid is None:
            continue
        used = _number(row.get("used_gpu_memory") or row.get("used_memory"))
        procs.append(
            SmiProcess(
                gpu_uuid=_str(row.get("gpu_uuid")),
                pid=pid,
                name=_str(row.get("process_name")),
                used_memory_bytes=None if used is None else int(used * MIB),
            )
        )
    return procs


def attach_processes(gpus: list[Gpu], procs: list[SmiProcess]) -> list[Gpu]:
    """Each GPU with the processes whose ``gpu_uuid`` is its UUID (others are not attributable)."""
    by_uuid: dict[str, list[GpuProcess]] = {}
    for proc in procs:
        if proc.gpu_uuid:
            by_uuid.setdefault(proc.gpu_uuid, []).append(
                GpuProcess(pid=proc.pid, used_memory_bytes=proc.used_memory_bytes, name=proc.name)
            )
    return [gpu.model_copy(update={"processes": by_uuid.get(gpu.uuid or "", [])}) for gpu in gpus]


class SmiSampler:
    """Samples through ``nvidia-smi --query-gpu`` (a subprocess per tick: the fallback, not the default)."""

    source = "nvidia-smi"

    def __init__(self, executable: str | None = None, *, timeout_s: float = 5.0) -> None:
        self._exe = executable
        self._timeout = timeout_s
        self._fields: tuple[str, ...] = QUERY_FIELDS + EXTRA_FIELDS

    def _run(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        exe = self._exe or shutil.which("nvidia-smi")
        if exe is None:
            raise FileNotFoundError("nvidia-smi is not on PATH")
        return subprocess.run(
            [exe, *args], capture_output=True, text=True, timeout=self._timeout, check=False
        )

    def sample(self) -> Gpus:
        try:
            return self._sample()
        except FileNotFoundError as exc:
            return Gpus(source="nvidia-smi", state="no_driver", detail=f"No NVIDIA driver tools: {exc}")
        except (OSError, subprocess.SubprocessError) as exc:
            return Gpus(source="nvidia-smi", state="error", detail=f"nvidia-smi failed: {exc}")

    def _sample(self) -> Gpus:
        done = self._run([f"--query-gpu={','.join(self._fields)}", "--format=csv,nounits"])
        if done.returncode != 0 and "not a valid field" in (done.stdout + done.stderr).lower():
            self._fields = QUERY_FIELDS
            done = self._run([f"--query-gpu={','.join(self._fields)}", "--format=csv,nounits"])
        if done.returncode != 0:
            message = (done.stderr or done.stdout).strip().splitlines()
            detail = message[0] if message else f"exit status {done.returncode}"
            state = "no_driver" if "driver" in detail.lower() else "error"
            return Gpus(source="nvidia-smi", state=state, detail=f"nvidia-smi: {detail}")
        gpus = parse_query_gpu(done.stdout)
        driver = _first_value(done.stdout, "driver_version")
        if not gpus:
            return Gpus(
                source="nvidia-smi", state="no_gpu", detail="nvidia-smi lists no GPUs", driver_version=driver
            )
        apps = self._run([f"--query-compute-apps={','.join(APPS_FIELDS)}", "--format=csv,nounits"])
        if apps.returncode == 0:
            gpus = attach_processes(gpus, parse_compute_apps(apps.stdout))
        return Gpus(source="nvidia-smi", state="ok", driver_version=driver, devices=gpus)

    def close(self) -> None:
        return None


def _first_value(text: str, column: str) -> str | None:
    for row in _rows(text):
        value = _str(row.get(column))
        if value:
            return value
    return None


# -- nvidia-smi topo -m ------------------------------------------------------------------------


@dataclass(frozen=True)
class Topology:
    """The GPU-to-GPU link matrix of ``nvidia-smi topo -m``."""

    devices: list[str]
    links: dict[tuple[str, str], str]
    cpu_affinity: dict[str, str] = field(default_factory=dict)
    numa_affinity: dict[str, str] = field(default_factory=dict)

    @property
    def gpus(self) -> list[str]:
        return [d for d in self.devices if d.startswith("GPU")]

    @property
    def nvlink(self) -> bool:
        """True when any pair of GPUs is joined by NVLink (``NV#``), as ``topo -m`` prints it."""
        return any(
            re.fullmatch(r"NV\d+", kind) is not None
            for (a, b), kind in self.links.items()
            if a.startswith("GPU") and b.startswith("GPU")
        )

    def link(self, a: str, b: str) -> str | None:
        return self.links.get((a, b))


def parse_topology(text: str) -> Topology:
    """Parse ``nvidia-smi topo -m``. ANSI codes (the header is underlined on a terminal) are ignored."""
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    header: list[str] | None = None
    devices: list[str] = []
    links: dict[tuple[str, str], str] = {}
    cpu: dict[str, str] = {}
    numa: dict[str, str] = {}
    for line in lines:
        cells = [c.strip() for c in line.split("\t")]
        if header is None:
            names = [c for c in cells if c]
            if names and re.fullmatch(r"(GPU|NIC)\d+", names[0]):
                header = cells
                devices = [c for c in cells if re.fullmatch(r"(GPU|NIC)\d+", c)]
            continue
        if not cells or not re.fullmatch(r"(GPU|NIC)\d+", cells[0]):
            if line.strip().lower().startswith("legend"):
                break
            continue
        row = cells[0]
        for col_name, cell in zip(header[1:], cells[1:], strict=False):
            if col_name in devices:
                if cell and cell != "X":
                    links[(row, col_name)] = cell
            elif col_name == "CPU Affinity":
                cpu[row] = cell
            elif col_name == "NUMA Affinity":
                numa[row] = cell
    return Topology(devices=devices, links=links, cpu_affinity=cpu, numa_affinity=numa)


# -- nvidia-smi -q -------------------------------------------------------------------------------


def parse_smi_q(text: str) -> dict[str, Any]:
    """``nvidia-smi -q`` as a nested dict: ``{"Driver Version": ..., "GPUs": {bus_id: {...}}}``.

    The format is "Key<padding>: Value" lines nested by indentation; a line without a padded colon
    opens a section (``GPU 00000000:06:00.0`` at the left margin opens one GPU).
    """
    root: dict[str, Any] = {"GPUs": {}}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("="):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        leaf = _LEAF.match(line)
        if leaf is not None:
            parent[leaf.group(1).strip()] = leaf.group(2).strip()
            continue
        section: dict[str, Any] = {}
        if indent == 0 and line.startswith("GPU "):
            root["GPUs"][line[4:].strip()] = section
        else:
            parent[line] = section
        stack.append((indent, section))
    return root


_LEAF = re.compile(r"^(.*?\S)\s+:\s?(.*)$")


@dataclass(frozen=True)
class SmiGpuFacts:
    bus_id: str
    name: str | None
    uuid: str | None
    architecture: str | None
    memory_total_bytes: int | None
    pcie_gen_max: int | None
    pcie_gen_current: int | None
    pcie_width_max: int | None
    pcie_width_current: int | None


def _get(tree: dict[str, Any], *path: str) -> str | None:
    node: Any = tree
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node if isinstance(node, str) else None


def _width(value: str | None) -> int | None:
    return None if value is None else _int(value.rstrip("x"))


def smi_q_facts(text: str) -> tuple[str | None, str | None, list[SmiGpuFacts]]:
    """Driver version, CUDA version (the driver's maximum) and per-GPU facts from ``nvidia-smi -q``."""
    tree = parse_smi_q(text)
    gpus: list[SmiGpuFacts] = []
    for bus_id, gpu in tree["GPUs"].items():
        link = ("PCI", "GPU Link Info")
        total = _number(_get(gpu, "FB Memory Usage", "Total"))
        gpus.append(
            SmiGpuFacts(
                bus_id=bus_id,
                name=_str(_get(gpu, "Product Name")),
                uuid=_str(_get(gpu, "GPU UUID")),
                architecture=_str(_get(gpu, "Product Architecture")),
                memory_total_bytes=None if total is None else int(total * MIB),
                pcie_gen_max=_int(_get(gpu, *link, "PCIe Generation", "Max")),
                pcie_gen_current=_int(_get(gpu, *link, "PCIe Generation", "Current")),
                pcie_width_max=_width(_get(gpu, *link, "Link Width", "Max")),
                pcie_width_current=_width(_get(gpu, *link, "Link Width", "Current")),
            )
        )
    return _str(_get(tree, "Driver Version")), _str(_get(tree, "CUDA Version")), gpus


class CsvFixtureSampler:
    """Replays a saved ``nvidia-smi --query-gpu ... --format=csv`` capture (the nvidia-smi path)."""

    source: GpuSource = "fixture"

    def __init__(self, capture: Path | str, *, scale_to: int | None = None) -> None:
        text = Path(capture).read_text()
        gpus = parse_query_gpu(text)
        if scale_to is not None and gpus:
            gpus = [gpus[i % len(gpus)].model_copy(update={"index": i}) for i in range(scale_to)]
        self._gpus = Gpus(
            source="fixture",
            state="ok" if gpus else "no_gpu",
            driver_version=_first_driver(text),
            devices=gpus,
        )

    def sample(self) -> Gpus:
        return self._gpus

    def close(self) -> None:
        return None


def _first_driver(csv_text: str) -> str | None:
    lines = [line for line in csv_text.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    header = [cell.strip().split(" [", 1)[0] for cell in lines[0].split(",")]
    if "driver_version" not in header:
        return None
    cells = [cell.strip() for cell in lines[1].split(",")]
    at = header.index("driver_version")
    return cells[at] if at < len(cells) else None
