"""bench_serving's per-level fields, computed over a steady-state window only.

The names are bench_serving's (``benchmark/serving.py``); what each covers is the window's:

* ``output_throughput``: output tokens our streams delivered inside the window / its length;
* ``completed``, ``request_throughput``, ``total_input_tokens``: requests that finished inside it;
* TTFT: requests *started* inside it (the ramp's first requests queue behind C prefills at once,
  which is the ramp's TTFT, not the level's);
* ITL: the gaps before tokens that arrived inside it;
* E2E and TPOT: requests that started and finished inside it (those that finished inside it when a
  window is shorter than a request: then ``latency_from`` says so);
* ``concurrency``: the time-average of our streams the engine was decoding (first token seen, not
  finished) inside it. bench_serving's is in flight, queued ones included; ours is what ran, so a
  server that caps running requests below the asked level shows here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from agent.bench.stats import RequestRecord, spread
from agent.bench.window import Window, delivered, mean_running

LATENCY_INSIDE = "requests that started and finished inside the window"
LATENCY_FINISHED = "requests that finished inside the window (none started and finished in it)"


def _itl_inside(record: RequestRecord, start: float, end: float) -> list[float]:
    times = record.token_times()
    return [gap for gap, at in zip(record.itl, times[1:], strict=False) if start < at <= end]


def _peaks(records: Sequence[RequestRecord], start: float, end: float) -> tuple[float, int]:
    """Peak output tokens in any 1-s bucket of the window, and peak requests in flight."""
    seconds = max(1, math.ceil(end - start))
    tokens = [0] * seconds
    for r in records:
        for at in r.token_times():
            if start < at <= end:
                tokens[min(seconds - 1, int(at - start))] += 1
    events: list[tuple[float, int]] = []
    for r in records:
        stop = r.end if r.done else end
        if r.start < end and stop > start:
            events += [(max(r.start, start), 1), (min(stop, end), -1)]
    peak = now = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):
        now += step
        peak = max(peak, now)
    return float(max(tokens)), peak


Part = tuple[Sequence[RequestRecord], Window]
"""One window and the requests of its loop."""


def window_metrics(parts: Sequence[Part]) -> dict[str, Any]:
    """bench_serving's fields over one window, or pooled over several (the repeats of one arm)."""
    seconds = max(sum(w.seconds for _, w in parts), 1e-9)
    completed: list[RequestRecord] = []
    latency_set: list[RequestRecord] = []
    ttfts: list[float] = []
    itls: list[float] = []
    output = failed = 0
    busy = peak_tokens = 0.0
    peak_running = 0
    all_inside = True
    errors: set[str] = set()
    for records, window in parts:
        start, end = window.start, window.end
        finished = [r for r in records if r.done and start < r.end <= end]
        done = [r for r in finished if r.success]
        inside = [r for r in done if r.start >= start]
        all_inside = all_inside and bool(inside)
        completed += done
        latency_set += inside or done
        failed += len(finished) - len(done)
        errors |= {r.error for r in finished if r.error}
        ttfts += [r.ttft for r in records if start <= r.start < end and r.first_token_at is not None]
        itls += [gap for r in records for gap in _itl_inside(r, start, end)]
        output += delivered(records, start, end)
        busy += mean_running(records, start, end) * window.seconds
        tokens, running = _peaks(records, start, end)
        peak_tokens, peak_running = max(peak_tokens, tokens), max(peak_running, running)
    total_input = sum(r.prompt_tokens for r in completed)
    tpots = [(r.latency - r.ttft) / (r.output_tokens - 1) for r in latency_set if r.output_tokens > 1]
    out: dict[str, Any] = {
        "duration": seconds,
        "completed": len(completed),
        "failed": failed,
        "total_input_tokens": total_input,
        "total_output_tokens": output,
        "request_throughput": len(completed) / seconds,
        "input_throughput": total_input / seconds,
        "output_throughput": output / seconds,
        "total_throughput": (total_input + output) / seconds,
    }
    out |= spread("e2e_latency", [r.latency for r in latency_set])
    out |= spread("ttft", ttfts)
    out |= spread("tpot", tpots)
    out |= spread("itl", itls)
    out |= {
        "concurrency": busy / seconds,
        "max_output_tokens_per_s": peak_tokens,
        "max_concurrent_requests": peak_running,
        "latency_from": LATENCY_INSIDE if all_inside else LATENCY_FINISHED,
        "ttft_requests": len(ttfts),
    }
    if errors:
        out["errors"] = sorted(errors)[:5]
    return out
