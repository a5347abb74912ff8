"""Where the host's time goes inside one scheduler operation, Python frame by frame, two traces side by side.

``trace_rounds.py --with-stack`` records SGLang's Python frames (the profiler's ``python_function``
events); they slow the host, so their times are not the engine's, but two traces taken the same way
compare frame by frame. For the iterations of one kind (``--mode DECODE``: a ``step[DECODE ...]``
inside) this sums each frame's inclusive time inside ``--op`` (default ``scheduler.run_batch``), per
iteration, and prints the frames above ``--min-us``, the first trace's beside the second's:

    python -m bench.real.trace_frames BASE-stack.trace.json.gz SPEC-stack.trace.json.gz [--depth 8]

Frames are named ``file.py(line): function`` without their folder (one SGLang version: unique).
Only the standard library (and ``trace_gaps.py`` beside it) is used.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import Any

from bench.real.trace_gaps import load_events

FRAME_CATS = {"python_function", "user_annotation"}


def frame_name(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def frames(
    events: list[dict[str, Any]], op: str = "scheduler.run_batch", mode: str = "DECODE", depth: int = 8
) -> tuple[int, dict[tuple[int, str], float]]:
    """(iterations, {(depth, frame): inclusive microseconds summed}) inside ``op`` for one mode."""
    tops = [e for e in events if e.get("name") == op and e.get("cat") == "user_annotation"]
    if not tops:
        raise ValueError(f"the trace holds no {op} annotation")
    key = (tops[0]["pid"], tops[0]["tid"])
    thread = sorted(
        (e for e in events if (e.get("pid"), e.get("tid")) == key),
        key=lambda e: (e["ts"], -e.get("dur", 0.0)),
    )
    out: collections.defaultdict[tuple[int, str], float] = collections.defaultdict(float)  # µs
    n = 0
    i = 0
    for top in sorted(tops, key=lambda e: e["ts"]):
        end = top["ts"] + top.get("dur", 0.0)
        while i < len(thread) and thread[i]["ts"] < top["ts"]:
            i += 1
        inner = []
        j = i
        while j < len(thread) and thread[j]["ts"] < end:
            inner.append(thread[j])
            j += 1
        if not any(str(e.get("name", "")).startswith(f"step[{mode}") for e in inner):
            continue
        n += 1
        stack: list[dict[str, Any]] = []
        for e in inner:
            while stack and stack[-1]["ts"] + stack[-1].get("dur", 0.0) <= e["ts"]:
                stack.pop()
            if e.get("cat") in FRAME_CATS and len(stack) <= depth:
                out[(len(stack), frame_name(str(e["name"])))] += float(e.get("dur", 0.0))
            stack.append(e)
    return n, dict(out)


def side_by_side(
    a: tuple[int, dict[tuple[int, str], float]], b: tuple[int, dict[tuple[int, str], float]], min_us: float
) -> list[tuple[int, str, float | None, float | None]]:
    """Rows (depth, frame, ms per iteration in a, in b), by the larger of the two, largest first."""
    (na, fa), (nb, fb) = a, b
    rows = []
    for k in set(fa) | set(fb):
        ua = fa.get(k, 0.0) / na if na else 0.0
        ub = fb.get(k, 0.0) / nb if nb else 0.0
        if max(ua, ub) >= min_us:
            rows.append((k[0], k[1], ua / 1000 if k in fa else None, ub / 1000 if k in fb else None))
    rows.sort(key=lambda r: -max(r[2] or 0.0, r[3] or 0.0))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--op", default="scheduler.run_batch")
    parser.add_argument("--mode", default="DECODE", help="DECODE or EXTEND: the iterations compared")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument(
        "--min-us", type=float, default=60.0, help="frames under this per iteration are left out"
    )
    args = parser.parse_args()
    try:
        a = frames(load_events(args.first), args.op, args.mode, args.depth)
        b = frames(load_events(args.second), args.op, args.mode, args.depth)
    except (OSError, EOFError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"{args.op}, {args.mode} iterations: {a[0]} in {args.first.name}, {b[0]} in {args.second.name}")
    print("ms per iteration (inclusive, slowed by the profiler's frames), first | second | frame (depth)")
    for d, name, ua, ub in side_by_side(a, b, args.min_us):
        fa = f"{ua:7.3f}" if ua is not None else "      -"
        fb = f"{ub:7.3f}" if ub is not None else "      -"
        print(f"{fa} | {fb} | {'  ' * d}{name} ({d})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
