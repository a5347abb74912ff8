"""The soak's table (``bench/real/soak.sh``): per minute and engine, what the sampler's windows held.

    python -m bench.real.soak_report soak-c64-triton.jsonl [--decode-lines decode.log[.gz] --batch 64]

For each engine, one row per minute of its loaded windows (running > 0): tokens/s, running
requests, GPU busy and SM clock, and per SGLang process that the engine's port names its RSS and
CPU seconds per second; then the first and the last minute side by side (the issue's goals: the last
minute's tokens/s within 3 % of the first's, GPU busy within 5 points of the baseline's), and every
number in patch 03's read-back that moved during the engine's loaded stretch. With
``--decode-lines``, the engine's own ``Decode batch`` lines at the full batch, per minute of the
stretch: their median and upper-quartile ``gen throughput`` (decode rounds only, no prefill waves).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from collections import defaultdict
from pathlib import Path
from statistics import mean, median, quantiles
from typing import Any


def loaded(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The windows under load, less the first: it holds the loop's ramp (streams starting mid-window)."""
    return [r for r in rows if (r.get("running") or 0) > 0 and r.get("tok_s") is not None][1:]


def own_cpu(rows: list[dict[str, Any]]) -> list[float | None]:
    """Host CPU seconds per second of the busiest SGLang process, window by window (its scheduler)."""
    out: list[float | None] = []
    last: dict[int, float] = {}
    for r in rows:
        best = None
        for p in r.get("processes") or []:
            before = last.get(p["pid"])
            last[p["pid"]] = p["cpu_s"]
            if before is not None and r.get("span_s"):
                rate = (p["cpu_s"] - before) / r["span_s"]
                best = rate if best is None or rate > best else best
        out.append(best)
    return out


def minutes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_min: dict[int, list[dict[str, Any]]] = defaultdict(list)
    t0 = rows[0]["t_s"]
    for r in rows:
        by_min[int((r["t_s"] - t0) // 60)].append(r)
    table = []
    for minute, group in sorted(by_min.items()):
        busy = [g["gpu_busy_pct"] for g in group if g.get("gpu_busy_pct") is not None]
        sm = [g["sm_mhz"] for g in group if g.get("sm_mhz") is not None]
        rss = [max((p["rss_mib"] for p in g.get("processes") or []), default=0.0) for g in group]
        cpu = [c for c in (g.get("_cpu") for g in group) if c is not None]
        table.append(
            {
                "minute": minute,
                "windows": len(group),
                "tok_s": mean(g["tok_s"] for g in group),
                "running": mean(g["running"] for g in group),
                "gpu_busy_pct": mean(busy) if busy else None,
                "sm_mhz": mean(sm) if sm else None,
                "max_rss_mib": max(rss) if rss else None,
                "host_cpu": mean(cpu) if cpu else None,
            }
        )
    return table


def moved(rows: list[dict[str, Any]]) -> dict[str, tuple[Any, Any]]:
    first, last = rows[0].get("zero_step") or {}, rows[-1].get("zero_step") or {}
    return {
        k: (first.get(k), last[k])
        for k in sorted(last)
        if isinstance(last[k], (int, float)) and not isinstance(last[k], bool) and first.get(k) != last[k]
    }


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def report(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    lines = [f"soak {path.name}: {len(rows)} engine windows"]
    busy_of: dict[str, float | None] = {}
    for engine in sorted({r["engine"] for r in rows}):
        mine = loaded([r for r in rows if r["engine"] == engine])
        if not mine:
            lines.append(f"\n{engine}: no loaded window")
            continue
        for r, cpu in zip(mine, own_cpu(mine), strict=True):
            r["_cpu"] = cpu
        table = minutes(mine)
        lines.append(f"\n{engine}: {len(mine)} loaded windows, {mine[-1]['t_s'] - mine[0]['t_s']:.0f} s")
        lines.append("  min  win    tok/s  running  GPU busy %  SM MHz  max RSS MiB  host CPU s/s")
        for t in table:
            lines.append(
                f"  {t['minute']:>3}  {t['windows']:>3}  {t['tok_s']:>7.0f}  {t['running']:>7.1f}"
                f"  {fmt(t['gpu_busy_pct'], '>10.1f')}  {fmt(t['sm_mhz'], '>6.0f')}"
                f"  {fmt(t['max_rss_mib'], '>11.0f')}  {fmt(t['host_cpu'], '>12.2f')}"
            )
        whole = [t for t in table if t["windows"] >= 3]
        if len(whole) >= 2:
            first, last = whole[0], whole[-1]
            lines.append(
                f"  last ÷ first whole minute: tok/s {last['tok_s'] / first['tok_s']:.3f} (goal within 3 %),"
                f" GPU busy {fmt(first['gpu_busy_pct'], '.1f')} → {fmt(last['gpu_busy_pct'], '.1f')}"
            )
        busy = [r["gpu_busy_pct"] for r in mine if r.get("gpu_busy_pct") is not None]
        busy_of[engine] = mean(busy) if busy else None
        for key, (a, b) in moved(mine).items():
            lines.append(f"  zero_step.{key}: {a} → {b}")
    spec_busy, base_busy = busy_of.get("spec"), busy_of.get("base")
    if spec_busy is not None and base_busy is not None:
        gap = spec_busy - base_busy
        lines.append(f"\nGPU busy, off − no drafter: {gap:+.1f} points (goal within 5)")
    return "\n".join(lines)


DECODE_LINE = re.compile(
    r"\[(\d{4}-\d\d-\d\d) (\d\d):(\d\d):(\d\d)\] Decode batch, #running-req: (\d+),.*"
    r"gen throughput \(token/s\): ([\d.]+)"
)


def decode_minutes(path: Path, batch: int) -> str:
    """Per minute from the first line at ``batch`` running: the decode lines' gen throughput there."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        rows = []
        for line in f:
            hit = DECODE_LINE.search(line)
            if hit and int(hit.group(5)) == batch:
                h, mi, se = (int(x) for x in hit.group(2, 3, 4))
                rows.append((h * 3600 + mi * 60 + se, float(hit.group(6))))
    if not rows:
        return f"{path.name}: no decode line at {batch} running"
    by_min: dict[int, list[float]] = defaultdict(list)
    for t, rate in rows:
        by_min[(t - rows[0][0]) // 60].append(rate)
    out = [f"{path.name}: decode lines at {batch} running, gen throughput (token/s) per minute"]
    out.append("  min  lines   median  upper quartile")
    for minute, rates in sorted(by_min.items()):
        upper = quantiles(rates, n=4)[2] if len(rates) > 1 else rates[0]
        out.append(f"  {minute:>3}  {len(rates):>5}  {median(rates):>7.0f}  {upper:>14.0f}")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jsonl", type=Path, help="the sampler's windows (bench/real/soak_sampler.py)")
    parser.add_argument("--decode-lines", type=Path, help="the engine's Decode batch lines, plain or .gz")
    parser.add_argument("--batch", type=int, default=64, help="the running count the load holds (default 64)")
    args = parser.parse_args()
    print(report(args.jsonl))
    if args.decode_lines:
        print()
        print(decode_minutes(args.decode_lines, args.batch))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
