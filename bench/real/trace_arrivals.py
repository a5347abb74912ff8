"""What a request's arrival and its finish cost a running decode, read off a profiler trace.

Issue 36: at 0 steps a speculative engine's decode round costs what a plain server's does, yet
"off" delivers 0.87 of a plain server at c=64. The rest sits between decode rounds: requests
arriving (a prefill, and on the speculative engine the draft's extend over the prompt) and
leaving. ``trace_gaps.py`` reports the GPU's idle time per round; this splits a trace of a steady
load (``trace_rounds.py --unique-prompts``: every arrival prefills its whole prompt) into the
scheduler's loop iterations and reports, per iteration kind:

* **decode** iterations (a ``step[DECODE bs=N]`` inside): wall time, GPU busy time, host time
  by top-level operation;
* **arrival** iterations (a ``step[EXTEND bs=N toks=T]``): the same, and per part: the target's
  extend (``step[EXTEND ...]``), the draft's extend (``draft_extend``, its forward
  ``step[DRAFT ...]`` inside it), what else the iteration ran on the GPU outside those (the
  hidden-state capture and patch 03's ring, the sampler, copies), and the calls that waited for
  the GPU;
* **finishes**: inferred from the decode batch sizes (a batch of ``n`` followed by one of ``m``
  with ``a`` arrivals merged in between finished ``n + a - m``), and the extra host time per
  finish in ``scheduler.process_batch_result`` (least squares over decode iterations).

Per arrival and per finish it gives the iterations, the GPU time and the host time of each part,
so that a plain server's trace and a speculative engine's at 0 steps can be read side by side:

    python -m bench.real.trace_arrivals BASE.trace.json.gz SPEC.trace.json.gz [--json OUT]

Only the standard library (and ``trace_gaps.py`` beside it) is used: it runs on the GPU host too.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.real.trace_gaps import GPU_CATS, WAITS, clip, load_events, union

LOOP_START = "scheduler.recv_requests"
STEP = re.compile(r"step\[(?P<mode>[A-Z_]+) bs=(?P<bs>\d+)(?: toks=(?P<toks>\d+))?\]")
# GPU parts of an iteration, by the annotation that covers them (the innermost wins)
PARTS = ("target_extend", "draft_extend", "draft_forward", "decode")


@dataclass
class Iteration:
    """One pass of the scheduler's loop: from one ``recv_requests`` to the next."""

    start: float
    end: float
    kind: str = "idle"  # decode | arrival | idle
    batch: int = 0  # decode: running requests; arrival: requests prefilled
    tokens: int = 0  # arrival: tokens prefilled
    host_us: dict[str, float] = field(default_factory=dict)  # top-level operation -> its duration
    gpu_busy_us: float = 0.0
    gpu_parts_us: dict[str, float] = field(default_factory=dict)
    waits: int = 0
    wait_us: float = 0.0

    @property
    def wall_us(self) -> float:
        return self.end - self.start


def _span(e: dict[str, Any]) -> tuple[float, float]:
    return (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0.0)))


def _part_of(name: str) -> str | None:
    if name.startswith("step[EXTEND"):
        return "target_extend"
    if name == "draft_extend":
        return "draft_extend"
    if name.startswith("step[DRAFT"):
        return "draft_forward"
    if name.startswith("step[DECODE"):
        return "decode"
    return None


def iterations(events: list[dict[str, Any]]) -> list[Iteration]:
    """The loop's iterations on the launching thread, each with its kind, host and GPU time."""
    starts = sorted(
        e["ts"] for e in events if e.get("cat") == "user_annotation" and e.get("name") == LOOP_START
    )
    if len(starts) < 3:
        raise ValueError(f"the trace holds {len(starts)} scheduler loop iterations; 3 or more are needed")
    host_key = next(
        (e["pid"], e["tid"])
        for e in events
        if e.get("cat") == "user_annotation" and e.get("name") == LOOP_START
    )
    its = [Iteration(a, b) for a, b in itertools.pairwise(starts)]
    host = sorted(
        (e for e in events if (e.get("pid"), e.get("tid")) == host_key and e.get("cat") == "user_annotation"),
        key=lambda e: e["ts"],
    )
    runtime = [e for e in events if (e.get("pid"), e.get("tid")) == host_key and e.get("name") in WAITS]
    kernels = union([_span(e) for e in events if e.get("cat") in GPU_CATS])
    gpu_ann = sorted(
        (
            e
            for e in events
            if e.get("cat") == "gpu_user_annotation" and _part_of(str(e.get("name"))) is not None
        ),
        key=lambda e: e["ts"],
    )
    i = 0
    for it in its:
        while i < len(host) and host[i]["ts"] < it.start:
            i += 1
        j = i
        depth_end = float("-inf")
        while j < len(host) and host[j]["ts"] < it.end:
            e = host[j]
            name = str(e["name"])
            m = STEP.match(name)
            if m and m["mode"] in ("DECODE", "EXTEND"):
                it.kind = "decode" if m["mode"] == "DECODE" else "arrival"
                it.batch = int(m["bs"])
                it.tokens = int(m["toks"] or 0)
            if e["ts"] >= depth_end and name.startswith("scheduler."):
                it.host_us[name] = it.host_us.get(name, 0.0) + float(e.get("dur", 0.0))
                depth_end = _span(e)[1]
            j += 1
        it.gpu_busy_us = sum(b - a for a, b in clip(kernels, it.start, it.end))
        for w in runtime:
            if it.start <= w["ts"] < it.end:
                it.waits += 1
                it.wait_us += float(w.get("dur", 0.0))
    # GPU parts: each annotation's busy time, attributed to the iteration its host side ran in
    # (the GPU may run it later, overlapped with the next iteration's host work)
    host_parts = sorted((e for e in host if _part_of(str(e.get("name"))) is not None), key=lambda e: e["ts"])
    for g in gpu_ann:
        part = _part_of(str(g["name"]))
        assert part is not None
        # the host annotation of the same name that started last before the GPU side began
        owner = None
        for h in host_parts:
            if h["ts"] > g["ts"]:
                break
            if h["name"] == g["name"]:
                owner = h
        if owner is None:
            continue
        ran_in = _iteration_at(its, owner["ts"])
        if ran_in is None:
            continue
        lo, hi = _span(g)
        busy = sum(b - a for a, b in clip(kernels, lo, hi))
        ran_in.gpu_parts_us[part] = ran_in.gpu_parts_us.get(part, 0.0) + busy
    # the draft's forward runs inside its extend: report the extend without it
    for it in its:
        inner = it.gpu_parts_us.get("draft_forward", 0.0)
        if "draft_extend" in it.gpu_parts_us:
            it.gpu_parts_us["draft_extend"] = max(0.0, it.gpu_parts_us["draft_extend"] - inner)
    return its


def _iteration_at(its: list[Iteration], ts: float) -> Iteration | None:
    lo, hi = 0, len(its) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if its[mid].end <= ts:
            lo = mid + 1
        elif its[mid].start > ts:
            hi = mid - 1
        else:
            return its[mid]
    return None


def finishes(its: list[Iteration]) -> list[tuple[Iteration, int]]:
    """Each decode iteration with the requests that finished in it (batch sizes and arrivals)."""
    out: list[tuple[Iteration, int]] = []
    decodes = [k for k, it in enumerate(its) if it.kind == "decode"]
    for a, b in itertools.pairwise(decodes):
        merged = sum(its[k].batch for k in range(a + 1, b) if its[k].kind == "arrival")
        out.append((its[a], max(0, its[a].batch + merged - its[b].batch)))
    return out


def _slope(xs: list[float], ys: list[float]) -> tuple[float, float] | None:
    if len(xs) < 3 or len(set(xs)) < 2:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return b, my - b * mx


def _ms(us: float) -> float:
    return round(us / 1000.0, 3)


def analyse(events: list[dict[str, Any]]) -> dict[str, Any]:
    its = iterations(events)
    decode = [it for it in its if it.kind == "decode"]
    arrival = [it for it in its if it.kind == "arrival"]
    arrivals = sum(it.batch for it in arrival)
    fin = finishes(its)
    finished = sum(n for _, n in fin)
    wall = its[-1].end - its[0].start

    def per_iteration(group: list[Iteration]) -> dict[str, Any]:
        if not group:
            return {"count": 0}
        n = len(group)
        ops: dict[str, float] = {}
        parts: dict[str, float] = {}
        for it in group:
            for k, v in it.host_us.items():
                ops[k] = ops.get(k, 0.0) + v
            for k, v in it.gpu_parts_us.items():
                parts[k] = parts.get(k, 0.0) + v
        busy = sum(it.gpu_busy_us for it in group)
        named = sum(parts.values())
        return {
            "count": n,
            "batch_mean": round(statistics.fmean(it.batch for it in group), 2),
            "tokens_mean": round(statistics.fmean(it.tokens for it in group), 1),
            "wall_ms": _ms(sum(it.wall_us for it in group) / n),
            "wall_ms_median": _ms(statistics.median(it.wall_us for it in group)),
            "gpu_busy_ms": _ms(busy / n),
            "gpu_idle_ms": _ms((sum(it.wall_us for it in group) - busy) / n),
            "gpu_parts_ms": {k: _ms(v / n) for k, v in sorted(parts.items())},
            "gpu_other_ms": _ms(max(0.0, busy - named) / n),
            "host_ms": {k: _ms(v / n) for k, v in sorted(ops.items(), key=lambda kv: -kv[1])},
            "waits": round(sum(it.waits for it in group) / n, 2),
            "wait_ms": _ms(sum(it.wait_us for it in group) / n),
        }

    fit = _slope(
        [float(n) for _, n in fin], [it.host_us.get("scheduler.process_batch_result", 0.0) for it, _ in fin]
    )
    fit_wall = _slope([float(n) for _, n in fin], [it.wall_us for it, _ in fin])
    a_wall = sum(it.wall_us for it in arrival)
    return {
        "iterations": len(its),
        "wall_ms": _ms(wall),
        "decode": per_iteration(decode),
        "arrival": per_iteration(arrival),
        "arrivals": arrivals,
        "finishes": finished,
        # what the window delivered: one token per running request per decode iteration
        "decode_tokens_per_s": round(sum(it.batch for it in decode) / (wall / 1e6), 1) if wall else None,
        "iterations_per_arrival": round(len(arrival) / arrivals, 3) if arrivals else None,
        "arrival_wall_ms_per_arrival": _ms(a_wall / arrivals) if arrivals else None,
        "arrival_share_of_wall": round(a_wall / wall, 4) if wall else None,
        "finish_process_result_ms_per_finish": _ms(fit[0]) if fit else None,
        "finish_wall_ms_per_finish": _ms(fit_wall[0]) if fit_wall else None,
        "decode_iterations_with_finishes": sum(1 for _, n in fin if n),
    }


def report_lines(name: str, a: dict[str, Any]) -> list[str]:
    lines = [
        f"{name}: {a['iterations']} loop iterations over {a['wall_ms']:.1f} ms; "
        f"{a['arrivals']} arrivals, {a['finishes']} finishes; {a['decode_tokens_per_s']:.0f} decode tokens/s",
    ]
    for kind in ("decode", "arrival"):
        g = a[kind]
        if not g["count"]:
            lines.append(f"  {kind}: none")
            continue
        head = f"  {kind}: {g['count']} iterations, batch {g['batch_mean']:g}"
        if kind == "arrival":
            head += f" ({g['tokens_mean']:g} tokens)"
        lines.append(
            head + f"; wall {g['wall_ms']:.3f} ms mean ({g['wall_ms_median']:.3f} median), "
            f"GPU busy {g['gpu_busy_ms']:.3f}, idle {g['gpu_idle_ms']:.3f}"
        )
        parts = ", ".join(f"{k} {v:.3f}" for k, v in g["gpu_parts_ms"].items())
        lines.append(f"    GPU ms by part: {parts or '-'}; outside them {g['gpu_other_ms']:.3f}")
        ops = ", ".join(f"{k.removeprefix('scheduler.')} {v:.3f}" for k, v in g["host_ms"].items())
        lines.append(f"    host ms by operation: {ops}")
        lines.append(f"    waits for the GPU: {g['waits']:g} per iteration, {g['wait_ms']:.3f} ms")
    if a["arrivals"]:
        lines.append(
            f"  per arrival: {a['iterations_per_arrival']:g} arrival iterations, "
            f"{a['arrival_wall_ms_per_arrival']:.3f} ms of wall; arrivals take {100 * a['arrival_share_of_wall']:.1f} % "
            "of the wall time"
        )
    if a["finish_process_result_ms_per_finish"] is not None:
        lines.append(
            f"  per finish: +{a['finish_process_result_ms_per_finish']:.3f} ms of process_batch_result, "
            f"+{a['finish_wall_ms_per_finish']:.3f} ms of the iteration's wall "
            f"({a['decode_iterations_with_finishes']} decode iterations with finishes)"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    out: dict[str, Any] = {}
    for path in args.traces:
        try:
            out[path.name] = analysis = analyse(load_events(path))
        except (OSError, EOFError, ValueError) as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return 1
        print("\n".join(report_lines(path.name, analysis)))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
