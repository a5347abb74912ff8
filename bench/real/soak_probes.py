"""What ``soak.py`` reads beside its load, window by window: GPU busy, process memory, patch 03's read-back.

* ``GpuSampler``: ``nvidia-smi`` run once for the whole soak (``-lms``), its lines read as they come, each
  stamped with the wall clock; a window's figure is the mean of the samples inside it. Where there is no
  ``nvidia-smi`` it says so and every window's figure is None.
* ``tree_rss_kib``: the resident memory of a process and all its descendants, from ``/proc`` (the
  agent's ``engine_pid`` is SGLang's launcher; the scheduler that runs the rounds is a child).
* ``readback_figures``: patch 03's ``zero_step`` read-back of one window's end: the runtime's state sizes
  and the scheduler process's own memory and collector time.
* ``timer_figures``: the round timer's table for the rounds timed in one window, host and GPU ms per
  round by part (``bench/real/round_timing.py`` reads the same table for one setting).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.sglang.info_view import LiveSpec

QUERY = "utilization.gpu,clocks.sm"
SAMPLE_MS = 500
MAX_SAMPLES = 20_000
"""About 2.8 hours at two a second; older samples are dropped (no window reaches back that far)."""


@dataclass
class GpuSampler:
    """``nvidia-smi --query-gpu=utilization.gpu,clocks.sm -lms 500 -i INDEX`` for as long as it runs."""

    index: int = 0
    samples: list[tuple[float, float, float | None]] = field(default_factory=list)
    """(wall clock, busy %, SM MHz) per sample."""
    unavailable: str | None = None
    _proc: asyncio.subprocess.Process | None = None
    _reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        exe = shutil.which("nvidia-smi")
        if exe is None:
            self.unavailable = "nvidia-smi is not on this host: GPU busy is not measured"
            return
        argv = [
            exe,
            f"--query-gpu={QUERY}",
            "--format=csv,noheader,nounits",
            f"-lms={SAMPLE_MS}",
            f"-i={self.index}",
        ]
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
            )
        except OSError as exc:
            self.unavailable = f"nvidia-smi could not start ({exc.strerror or exc}): GPU busy is not measured"
            return
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        while True:
            line = await self._proc.stdout.readline()
            if not line:
                if not self.samples:
                    self.unavailable = "nvidia-smi printed no sample: GPU busy is not measured"
                return
            parts = [p.strip() for p in line.decode(errors="replace").split(",")]
            try:
                busy = float(parts[0])
            except (ValueError, IndexError):
                continue
            try:
                sm: float | None = float(parts[1])
            except (ValueError, IndexError):
                sm = None
            self.samples.append((time.time(), busy, sm))
            if len(self.samples) > MAX_SAMPLES:
                del self.samples[: len(self.samples) - MAX_SAMPLES]

    def window(self, start: float, end: float) -> dict[str, Any]:
        """Mean busy % and SM clock of the samples inside [start, end] (None and why when none)."""
        inside = [s for s in self.samples if start <= s[0] <= end]
        if not inside:
            why = self.unavailable or "no nvidia-smi sample fell inside the window"
            return {"gpu_busy": None, "sm_mhz": None, "gpu_samples": 0, "gpu_unknown": why}
        clocks = [s[2] for s in inside if s[2] is not None]
        return {
            "gpu_busy": round(statistics.fmean(s[1] for s in inside), 1),
            "sm_mhz": round(statistics.fmean(clocks)) if clocks else None,
            "gpu_samples": len(inside),
            "gpu_unknown": None,
        }

    async def stop(self) -> None:
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.terminate()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5.0):
                    await self._proc.wait()
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)


def _status_rss_kib(pid: int, proc: Path) -> int | None:
    try:
        text = (proc / str(pid) / "status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmRSS:") and line.split()[1:2] and line.split()[1].isdigit():
            return int(line.split()[1])
    return None


def descendants(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """``pid`` and every process below it (one pass over ``/proc/*/stat``)."""
    children: dict[int, list[int]] = {}
    for entry in proc.iterdir() if proc.is_dir() else []:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


def tree_rss_kib(pid: int | None, proc: Path = Path("/proc")) -> int | None:
    """Resident KiB of ``pid`` and its descendants; None when ``pid`` is unknown or not on this host."""
    if pid is None or _status_rss_kib(pid, proc) is None:
        return None
    return sum(_status_rss_kib(p, proc) or 0 for p in descendants(pid, proc))


def readback_figures(live: LiveSpec | None) -> dict[str, Any]:
    """Patch 03's figures at a window's end: the runtime's sizes, the scheduler's memory and collector."""
    zero = None if live is None else live.zero_step
    if zero is None:
        return {"readback": "the server reads back no zero_step (no patch 03, or no drafter)"}
    out: dict[str, Any] = {
        "threshold": live.threshold if live is not None else None,
        "path": zero.path,
        "plain_rounds": zero.plain_rounds,
        "plain_prefills": zero.plain_prefills,
        "errors": zero.errors,
        "last_error": zero.last_error,
    }
    out["state"] = dict(zero.state.sizes) if zero.state is not None else None
    host = zero.host
    if host is not None:
        out.update(
            scheduler_rss_kib=host.rss_kib,
            scheduler_rss_peak_kib=host.rss_peak_kib,
            gc_total_s=host.gc_total_s,
            gc_collections=list(host.gc_collections),
            gc_s=list(host.gc_s),
            gc_longest_ms=host.gc_longest_ms,
            gc_metered=host.gc_metered,
        )
    return out


def timer_figures(table: dict[str, Any] | None) -> dict[str, Any] | None:
    """The timing table's kinds as per-round host and GPU ms by part (None: nothing was timed)."""
    kinds = (table or {}).get("kinds") or {}
    if not kinds:
        return None
    out: dict[str, Any] = {}
    for kind, entry in kinds.items():
        stages = entry.get("stages") or {}
        host = {s: v.get("host_ms") for s, v in stages.items() if v.get("host_ms") is not None}
        gpu = {s: v.get("gpu_ms") for s, v in stages.items() if v.get("gpu_ms") is not None}
        out[kind] = {
            "rounds": entry.get("rounds"),
            "mean_batch_size": entry.get("mean_batch_size"),
            "host_ms": host,
            "gpu_ms": gpu,
            "host_ms_round": round(sum(host.values()), 4),
            "gpu_ms_round": round(sum(gpu.values()), 4) if gpu else None,
        }
    return out
