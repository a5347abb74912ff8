"""Findings the agent's own benchmark caused: they say so.

A benchmark sends the engine hundreds of requests on purpose (a compare climbs to 250 at once), so
while it runs, and for as long as the telemetry windows still hold its requests, the load findings
(time to first token over its target, a growing queue, a full KV pool, retractions...) describe the
benchmark, not the clients. Left as they are, they raise an alarm about the agent itself and advise
tuning the server for traffic that does not exist ("Time to first token p99 39.6 s ... a smaller
chunked_prefill_size").

The operator still sees them (the number is real, and a benchmark on a server with clients does
slow the clients down): each says, in its title and its action, that the benchmark caused it, is
lowered to ``info`` so the header's count does not alarm, and keeps the usual advice for the case
where it outlives the benchmark. It drops the note by itself once the windows no longer hold the
benchmark's requests; a finding that still holds then is the clients'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from agent.wire import Finding

LOAD_CODES: Final = frozenset(
    {
        "queue_growing",
        "ttft_over_target",
        "kv_nearly_full",
        "queueing",
        "retractions",
        "topk_with_batch",
        "threshold_unreachable",
        "accept_length_stuck",
    }
)
"""Findings that judge the traffic (its load, its contexts, its tokens), not the deployment: a
benchmark's own requests raise them. Configuration findings (CUDA graphs, adaptive turned off, the
KV reserve) and the engine's (restarts, stale telemetry) hold whoever sends the requests."""


@dataclass(frozen=True)
class BenchLoad:
    """The agent's benchmark whose requests are in the telemetry windows at a tick."""

    bench_id: str
    running: bool
    """Still running at this tick (else it ended within the windows)."""
    clears_s: float
    """The longest telemetry window: its requests are out of every window this long after it ends."""


def caused_by_bench(finding: Finding, load: BenchLoad) -> Finding:
    """``finding`` as the benchmark's: said in its title and action, ``info``; others unchanged."""
    if finding.code not in LOAD_CODES:
        return finding
    when = "runs" if load.running else "ended less than a window ago"
    usual = finding.action[:1].lower() + finding.action[1:]
    return finding.model_copy(
        update={
            "severity": "info",
            "title": f"{finding.title}, from the agent's benchmark {load.bench_id}",
            "explanation": (
                f"The agent's own benchmark {load.bench_id} {when}: its requests, not clients', make "
                f"this load. {finding.explanation}"
            ),
            "action": (
                f"Nothing to change for the benchmark's load: this clears within {load.clears_s:.0f} s "
                f"of the run's end. If it holds after that, the clients cause it: {usual}"
            ),
        }
    )
