"""Where a decode round's wall time goes that no stage of the round timer sees: the GPU's idle gaps.

Reads a torch profiler trace (SGLang's ``/start_profile``, ``bench/real/trace_rounds.py``) of a
steady decode and reports, between the first and the last CUDA graph launch (one per round on a
server without a drafter and on patch 03's plain 0-step rounds):

* the cycle: wall time per round, the GPU's busy time per round (the union of kernels, copies and
  sets on every stream) and so its idle time per round;
* the idle gaps, each laid on the launching thread's top-level operations that overlap it: what
  the host was doing while the GPU waited (time no recorded operation covers is Python between
  operations);
* the calls that wait for the GPU (stream, event and device synchronizes, blocking copies,
  ``.item()``), per round;
* the eager kernel launches per round (the work outside the graph);
* the launching thread's time per round by top-level operation (SGLang annotates its scheduler's
  ``run_batch``, ``process_batch_result``...), with the part no recorded child covers (Python);
* the forward steps SGLang annotated (``step[DECODE bs=N]``, ``step[EXTEND ...]``) by mode, so
  that prefill rounds inside the window are seen.

    python -m bench.real.trace_gaps TRACE.json.gz [--json OUT] [--min-gap-us 20] [--top 15]

The trace is Chrome's trace-event format as ``torch.profiler`` writes it; only the standard library
is used, so this runs here as well as on the GPU host.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import heapq
import itertools
import json
import operator
import sys
from pathlib import Path
from typing import Any

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
HOST_CATS = {"cpu_op", "cuda_runtime", "cuda_driver", "user_annotation", "python_function"}
GRAPH_LAUNCH = "cudaGraphLaunch"
KERNEL_LAUNCHES = {"cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx"}
WAITS = {
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaDeviceSynchronize",
    "cudaMemcpy",
    "aten::_local_scalar_dense",
    "aten::item",
}
UNCOVERED = "(no recorded operation: Python between operations)"

Span = tuple[float, float]


def load_events(path: Path) -> list[dict[str, Any]]:
    """The trace's complete ("X") events; a gzip file or plain JSON."""
    raw = path.read_bytes()
    data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    events = data.get("traceEvents", data) if isinstance(data, dict) else data
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and "ts" in e]


def union(spans: list[Span]) -> list[Span]:
    """Sorted, merged intervals."""
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def clip(spans: list[Span], lo: float, hi: float) -> list[Span]:
    return [(max(a, lo), min(b, hi)) for a, b in spans if b > lo and a < hi]


def gaps_of(busy: list[Span], lo: float, hi: float) -> list[Span]:
    """The idle intervals of ``[lo, hi]`` between merged busy intervals."""
    out, at = [], lo
    for a, b in busy:
        if a > at:
            out.append((at, a))
        at = max(at, b)
    if hi > at:
        out.append((at, hi))
    return out


def top_level(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events (one thread, sorted by start) not inside another one."""
    out: list[dict[str, Any]] = []
    end = float("-inf")
    for e in events:
        if e["ts"] >= end:
            out.append(e)
            end = e["ts"] + e.get("dur", 0.0)
    return out


def overlap(a: Span, b: Span) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def analyse(events: list[dict[str, Any]], min_gap_us: float = 20.0, top: int = 15) -> dict[str, Any]:
    """The cycle, the gaps laid on host operations, the waits and the eager launches."""
    launches = sorted(
        (e for e in events if e.get("cat") == "cuda_runtime" and e.get("name") == GRAPH_LAUNCH),
        key=lambda e: e["ts"],
    )
    if len(launches) < 2:
        raise ValueError(
            f"the trace holds {len(launches)} CUDA graph launches; a steady decode needs 2 or more"
        )
    host_key = collections.Counter((e["pid"], e["tid"]) for e in launches).most_common(1)[0][0]
    lo, hi = launches[0]["ts"], launches[-1]["ts"]
    rounds = len(launches) - 1
    busy = clip(
        union([(e["ts"], e["ts"] + e.get("dur", 0.0)) for e in events if e.get("cat") in GPU_CATS]), lo, hi
    )
    busy_us = sum(b - a for a, b in busy)
    host = sorted(
        (e for e in events if e.get("cat") in HOST_CATS and (e["pid"], e["tid"]) == host_key),
        key=lambda e: (e["ts"], -e.get("dur", 0.0)),
    )
    tops = [e for e in top_level(host) if e["ts"] < hi and e["ts"] + e.get("dur", 0.0) > lo]
    # µs of gap per operation: floats, which a Counter's type does not hold; read largest first with
    # heapq.nlargest, as Counter.most_common does
    by_op: collections.defaultdict[str, float] = collections.defaultdict(float)
    gaps = [g for g in gaps_of(busy, lo, hi) if g[1] - g[0] >= min_gap_us]
    i = 0
    for gap in gaps:
        while i < len(tops) and tops[i]["ts"] + tops[i].get("dur", 0.0) <= gap[0]:
            i += 1
        covered = 0.0
        j = i
        while j < len(tops) and tops[j]["ts"] < gap[1]:
            part = overlap(gap, (tops[j]["ts"], tops[j]["ts"] + tops[j].get("dur", 0.0)))
            by_op[tops[j]["name"]] += part
            covered += part
            j += 1
        by_op[UNCOVERED] += (gap[1] - gap[0]) - covered
    in_window = [e for e in host if lo <= e["ts"] < hi]
    waits: dict[str, list[float]] = {}
    for e in in_window:
        if e.get("name") in WAITS:
            waits.setdefault(e["name"], []).append(e.get("dur", 0.0))
    eager = sum(1 for e in in_window if e.get("name") in KERNEL_LAUNCHES)
    own: collections.Counter[str] = collections.Counter()
    inner: collections.Counter[str] = collections.Counter()
    stack: list[dict[str, Any]] = []
    steps: collections.Counter[str] = collections.Counter()
    for e in in_window:
        while stack and stack[-1]["ts"] + stack[-1].get("dur", 0.0) <= e["ts"]:
            stack.pop()
        if not stack:
            own[e["name"]] += e.get("dur", 0.0)
        elif len(stack) == 1:
            inner[stack[0]["name"]] += e.get("dur", 0.0)
        if str(e.get("name", "")).startswith("step["):
            steps[e["name"][5:].split(" ")[0].rstrip("]")] += 1
        stack.append(e)
    cycles = sorted(b["ts"] - a["ts"] for a, b in itertools.pairwise(launches))
    gap_us = sum(g[1] - g[0] for g in gaps)
    return {
        "rounds": rounds,
        "cycle_ms": {
            "mean": round((hi - lo) / rounds / 1000, 3),
            "median": round(cycles[len(cycles) // 2] / 1000, 3),
            "max": round(cycles[-1] / 1000, 3),
        },
        "gpu_busy_ms_per_round": round(busy_us / rounds / 1000, 3),
        "gpu_idle_ms_per_round": round((hi - lo - busy_us) / rounds / 1000, 3),
        "gaps": {
            "count": len(gaps),
            "min_gap_us": min_gap_us,
            "ms_per_round": round(gap_us / rounds / 1000, 3),
        },
        "gap_by_host_op_ms_per_round": {
            name: round(us / rounds / 1000, 4)
            for name, us in heapq.nlargest(top, by_op.items(), key=operator.itemgetter(1))
            if us > 0
        },
        "waits_per_round": {
            name: {"count": round(len(d) / rounds, 2), "ms": round(sum(d) / rounds / 1000, 4)}
            for name, d in sorted(waits.items())
        },
        "eager_launches_per_round": round(eager / rounds, 1),
        "host_ms_per_round": {
            name: {
                "ms": round(us / rounds / 1000, 3),
                "python_ms": round((us - inner[name]) / rounds / 1000, 3),
            }
            for name, us in own.most_common(top)
            if us / rounds >= 10
        },
        "steps": dict(sorted(steps.items())),
    }


def report_lines(name: str, a: dict[str, Any]) -> list[str]:
    c = a["cycle_ms"]
    lines = [
        f"{name}: {a['rounds']} rounds; cycle {c['mean']:.3f} ms mean, {c['median']:.3f} median, {c['max']:.3f} max",
        f"  GPU busy {a['gpu_busy_ms_per_round']:.3f} ms, idle {a['gpu_idle_ms_per_round']:.3f} ms per round; "
        f"{a['eager_launches_per_round']:g} eager kernel launches per round",
        f"  idle gaps of {a['gaps']['min_gap_us']:g} us or more: {a['gaps']['ms_per_round']:.3f} ms per round, "
        "laid on what the host was doing:",
    ]
    lines += [f"    {ms:8.4f} ms  {op}" for op, ms in a["gap_by_host_op_ms_per_round"].items()]
    if a["host_ms_per_round"]:
        lines.append(
            "  the launching thread per round, by top-level operation (of it, Python between its children):"
        )
        lines += [
            f"    {h['ms']:8.3f} ms ({h['python_ms']:.3f})  {op}" for op, h in a["host_ms_per_round"].items()
        ]
    if a["steps"]:
        lines.append(
            "  forward steps SGLang annotated: " + ", ".join(f"{m} {n}" for m, n in a["steps"].items())
        )
    if a["waits_per_round"]:
        lines.append("  calls that wait for the GPU, per round:")
        lines += [f"    {w['count']:6g} x, {w['ms']:.4f} ms  {op}" for op, w in a["waits_per_round"].items()]
    else:
        lines.append("  no call waited for the GPU")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--min-gap-us", type=float, default=20.0)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    out: dict[str, Any] = {}
    for path in args.traces:
        try:
            out[path.name] = analysis = analyse(load_events(path), args.min_gap_us, args.top)
        except (OSError, EOFError, ValueError) as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return 1
        print("\n".join(report_lines(path.name, analysis)))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
