"""Zero-step rounds as plain decodes: the scheduler process's own host costs (k25console patch 03).

Issue 46: on the real engine, "off" held parity at c=64 for about a minute and then the GPU waited on
the host (busy 52-61 % against 70-91 %). Candidates are state that grows while requests come and go at
0 steps, and the collector's pauses. The read-back (``adaptive_spec_live.zero_step``) therefore carries
the process's resident memory and the time Python's collector spent, read here in the scheduler
process itself (the process that runs the rounds, not the server's launcher), with no torch:

* ``GcMeter``: ``gc.callbacks`` times every collection, per generation (count, seconds, the longest);
  installed once, when patch 03 attaches to a worker.
* ``host_readback``: the meter's figures, ``gc.get_count()`` (objects awaiting each generation) and
  ``VmRSS``/``VmHWM`` from ``/proc/self/status`` (None where there is no ``/proc``).

JSON-safe: str keys, ints, floats, lists and None (it crosses msgpack IPC and JSON).
"""

from __future__ import annotations

import gc
import time
from typing import Any

STATUS = "/proc/self/status"


class GcMeter:
    """Collections and their seconds per generation, from ``gc.callbacks`` (cheap: two clock reads a
    collection)."""

    def __init__(self) -> None:
        self.installed = False
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self.longest_s = 0.0
        self._started: float | None = None

    def install(self) -> None:
        if not self.installed:
            gc.callbacks.append(self._callback)
            self.installed = True

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        if self._started is None:
            return
        took = time.perf_counter() - self._started
        self._started = None
        generation = min(max(int(info.get("generation", 0)), 0), 2)
        self.count[generation] += 1
        self.seconds[generation] += took
        self.longest_s = max(self.longest_s, took)

    def readback(self) -> dict[str, Any]:
        return {
            "gc_collections": list(self.count),
            "gc_s": [round(s, 6) for s in self.seconds],
            "gc_total_s": round(sum(self.seconds), 6),
            "gc_longest_ms": round(self.longest_s * 1000.0, 3),
            "gc_pending": list(gc.get_count()),
            "gc_metered": self.installed,
        }


METER = GcMeter()
"""The process's meter (one scheduler per process)."""


def memory_kib(path: str = STATUS) -> dict[str, int | None]:
    """``VmRSS`` and ``VmHWM`` (its high-water mark) in KiB, None where unreadable."""
    out: dict[str, int | None] = {"rss_kib": None, "rss_peak_kib": None}
    try:
        with open(path) as fh:
            text = fh.read(16384)
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(":")
        field = {"VmRSS": "rss_kib", "VmHWM": "rss_peak_kib"}.get(key)
        if field is not None and value.split() and value.split()[0].isdigit():
            out[field] = int(value.split()[0])
    return out


def host_readback() -> dict[str, Any]:
    """``zero_step.host``: resident memory and the collector's figures of this process."""
    return {**memory_kib(), **METER.readback()}
