"""A sweep over request rates (``--request-rate 2,8,inf``): each level is a rate, measured in the
open (``agent.bench.arrivals``) with the run's workload, and given the same figures as a closed-loop
level: output tok/s with its 95 % interval over the level's windows (``repeats``), TTFT, ITL and
E2E percentiles, and the running batch the requests met (``concurrency``: the time-average of
streams decoding), which is what maps onto the speculation threshold.

A level's requests are the same seeds in every window (as a closed-loop level's). The cache is
flushed before each window. A compare over rates and a stopping rule over rates are not built yet:
the request refuses both (``BenchRequest``).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from agent.bench.aggregate import RunOutcome, arm_estimates, arm_result
from agent.bench.arrivals import open_window, rate_of
from agent.bench.engine import EngineError
from agent.bench.options import BenchOptions
from agent.bench.progress import BenchProgress, ProgressCallback, ignore_progress
from agent.bench.provenance import RunContext, environment
from agent.bench.stream import EngineUnreachable
from agent.bench.sweep import SweepSession, make_client, server_summary, until_cancelled
from agent.bench.window import slices
from agent.bench.window_stats import window_metrics

OPEN_REQUESTS = 32
"""Requests of one window at a rate when ``min_requests`` is not given."""


def _words(rate: float | str) -> str:
    return "all at once" if rate == "inf" else f"{float(rate):g}/s"


async def run_rates(
    url: str,
    options: BenchOptions,
    progress: ProgressCallback = ignore_progress,
    cancel: asyncio.Event | None = None,
    context: RunContext | None = None,
) -> dict[str, Any]:
    rates = list(options.request_rates or ())
    count = options.min_requests or OPEN_REQUESTS
    windows = options.repeats
    started = time.time()
    outcomes: dict[tuple[str, int], list[RunOutcome]] = {}
    async with make_client(options) as client:
        session = SweepSession(url, options, client, cancel)
        info = await session.prepare()
        simulated = await session.simulated_host()
        steps = len(rates) * windows
        for step, (i, repeat) in enumerate(itertools.product(range(len(rates)), range(windows))):
            rate = rates[i]
            level_seed = (options.seed * 1000 + i + 1) * 1_000_000
            await session.probe.flush_cache()
            send = session.workload_sender(itertools.count(level_seed))
            try:
                records, window = await until_cancelled(
                    open_window(session.target, rate_of(rate), options.burstiness, count, send, level_seed),
                    cancel,
                )
            except EngineUnreachable as exc:
                raise EngineError(f"engine stopped answering at rate {_words(rate)}: {exc}") from exc
            failed = [r.error for r in records if not r.success]
            if len(failed) == len(records):
                raise EngineError(f"every request failed at rate {_words(rate)}: {failed[0]}")
            cut = slices(records, window, options.window_slices)
            result = {"repeat": repeat, "step": step, "requests": len(records), "failed": len(failed),
                      **window_metrics([(records, window)]), "window_s": window.seconds,
                      "slices": [[s.tokens, round(s.seconds, 6)] for s in cut]}  # fmt: skip
            outcomes.setdefault(("sweep", i), []).append(
                RunOutcome(result, (records, window), [(float(s.tokens), s.seconds) for s in cut])
            )
            progress(
                BenchProgress(
                    arm="sweep", concurrency=count, level_index=i, levels=len(rates), completed=count,
                    requests=count, fraction=(step + 1) / steps, phase="measured", repeat=repeat,
                    repeats=windows, step=step + 1, steps=steps, elapsed_s=time.time() - started,
                    message=f"rate {_words(rate)} window {repeat + 1}/{windows}: "
                    f"{result['output_throughput']:.1f} tok/s",
                )
            )  # fmt: skip
    figures, noise = arm_estimates(outcomes)
    levels = [
        arm_result(count, "sweep", outcomes[("sweep", i)], figures[("sweep", i)], noise)
        | {"request_rate": rate, "burstiness": options.burstiness}
        for i, rate in enumerate(rates)
    ]
    return {
        "kind": "sweep",
        "url": url,
        "options": options.public_dict(),
        "workload": session.workload.describe(),
        "arrivals": {
            "request_rates": rates,
            "burstiness": options.burstiness,
            "process": "poisson" if options.burstiness == 1.0 else "gamma",
            "requests_per_window": count,
        },
        "server": server_summary(info),
        "environment": environment(info, context, simulated=simulated),
        "levels": levels,
        "started_at": started,
        "duration_s": time.time() - started,
    }


def rate_table(levels: list[dict[str, Any]]) -> str:
    """One line per rate: what was sent, what the server delivered, what the requests met."""
    head = f"{'rate':>12} {'req/s':>7} {'out tok/s':>10} {'±':>6} {'TTFT p50':>9} {'ITL p50':>8} {'batch':>6}"
    lines = [head]
    for level in levels:
        rel = level.get("output_throughput_ci_rel")
        lines.append(
            f"{_words(level['request_rate']):>12} {level['request_throughput']:>7.2f} "
            f"{level['output_throughput']:>10.1f} {'' if rel is None else f'{rel:.0%}':>6} "
            f"{level['median_ttft_ms']:>7.0f}ms {level['median_itl_ms']:>6.1f}ms {level['concurrency']:>6.1f}"
        )
    return "\n".join(lines)
