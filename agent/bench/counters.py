"""What the engine's own counters say over a window, beside what our streams say.

The two ``/metrics`` readings taken right after the window's first and last completions become two
points of a ``telemetry.window.CounterWindow`` (the agent's one reading of counters and histograms
over a span; a counter that went down means a restart, and then nothing is claimed):

* ``engine_finished_throughput``: Δ``generation_tokens_total`` / Δt, as the counter reads. SGLang
  advances it when a request *finishes*, by the request's whole output, so over a window it counts
  the requests that finished inside it, whole; it differs from what was generated inside it by the
  change in what the requests in flight had generated (with random acceptance over two cycles at
  c=32 on the simulator: ±4 %);
* ``engine_output_throughput``: the engine's count of tokens generated inside the window: the
  counter's rise plus that change (``engine_inflight_change_tokens``, from our streams' progress:
  the engine exports no per-request count). This is the figure set beside ours;
* ``accept_length``: Δgenerated / Δ``spec_verify_calls_total`` (both advanced at finish);
* ``engine_p50_itl_ms`` … from the ``inter_token_latency_seconds`` buckets filled inside the
  window (``Histogram.minus``/``quantile``; ``*_above_top`` when the rank is past the top bucket).

``engine_span_offset_s`` is how far the readings' span is from the steady-state window (its two
ends' distances, summed): the engine's rate is over the readings' span, the level's figure over the
window, so the two can differ by what the streams delivered in that offset (a reading answered late on
a loaded host: CI once saw 25 % on a 0.6 s window).

``engine_stream_diff`` is (engine − ours) / ours over the same span (from the first reading to the
last). A reading is answered while requests keep finishing, so the requests of ours that finished
within a reading's round trip may or may not be in its count (``engine_race_tokens``: their
outputs). ``engine_stream_mismatch`` flags a run whose gap is over ``MISMATCH`` (2 %) *and* over
what those could explain: then the engine generated tokens we did not receive (another client on
the server, requests cut short), or our stream counting is off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.bench.loop import EngineRead
from agent.bench.stats import RequestRecord
from agent.bench.window import delivered
from agent.sglang import paths
from agent.telemetry.window import CounterWindow

MISMATCH = 0.02
OTHER_TRAFFIC = 0.5
"""Above this gap the engine served someone else too (the demo's traffic, a production client): its
counters are the server's, not this run's, and a percentage of them reads as nonsense ("1094.9 %")."""


def stream_gap_words(gap: float) -> str:
    """The largest gap of a run's arms (the recommendation's noise), in an operator's words."""
    if gap > OTHER_TRAFFIC:
        return stream_mismatch_words(gap)
    return f"the engine's counts and our streams' by up to {abs(gap) * 100:.1f} %"


def stream_mismatch_words(gap: float, figures: str = "") -> str:
    """A gap flagged ``engine_stream_mismatch``, in the words the recommendation uses for it.

    The text report's ``!`` line and the compare result's per-level flag both say it this way, so an
    operator reads one explanation wherever the gap shows: far more than ours is another client's
    traffic (not a percentage of this run), more is another client or a miscounted stream, and fewer
    can only be our count. ``figures`` (the two rates, say) stand in brackets after the measure.
    """
    shown = f" ({figures})" if figures else ""
    if gap > OTHER_TRAFFIC:
        return (
            f"the engine generated {1 + gap:.1f}× the tokens our streams received{shown}: another client "
            "used the server during the run, so its counters are not this run's (the figures are our streams')"
        )
    if gap > 0:
        return (
            f"the engine counted {gap * 100:.1f} % more tokens than our streams received{shown}: "
            "another client on the server, or a stream miscounted"
        )
    return (
        f"the engine counted {-gap * 100:.1f} % fewer tokens than our streams received{shown}: "
        "a stream miscounted"
    )


RACE_MARGIN_S = 0.005
"""A request that finished this close to a reading's round trip counts as possibly in it or not."""
ACCEPT_FROM_COUNTERS = "metrics: Δgeneration_tokens_total / Δspec_verify_calls_total over the window"
ACCEPT_FROM_SERVER_INFO = f"server_info: internal_states[0].avg_spec_accept_length after {paths.FLUSH_CACHE}"


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1000.0


def inflight(records: Sequence[RequestRecord], when: float) -> int:
    """Tokens our requests still in flight at ``when`` had received (SGLang has not counted them yet)."""
    return sum(r.tokens_by(when) for r in records if r.chunk_times and not (r.done and r.end <= when))


def race_tokens(records: Sequence[RequestRecord], read: EngineRead) -> int:
    """Output tokens of our requests that finished around ``read``: SGLang may have counted them or not."""
    low, high = read.sent - RACE_MARGIN_S, read.settled + RACE_MARGIN_S
    return sum(r.output_tokens for r in records if r.done and r.success and low <= r.end <= high)


def engine_fields(
    at_start: EngineRead | None,
    at_end: EngineRead | None,
    records: Sequence[RequestRecord],
    steady: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """The engine's figures over the readings' span; ``steady``, the window's (start, end), adds how far that span
    is from the steady-state window (``engine_span_offset_s``)."""
    fields: dict[str, Any] = {
        "engine_output_throughput": None,
        "engine_finished_throughput": None,
        "engine_generated_tokens": None,
        "engine_inflight_change_tokens": None,
        "engine_window_s": None,
        "engine_span_offset_s": None,
        "engine_stream_diff": None,
        "engine_stream_mismatch": False,
        "engine_race_tokens": None,
        "engine_stream_tokens": None,
        "engine_verify_calls": None,
        "accept_length_counters": None,
    }
    if at_start is None or at_end is None or at_start.reading is None or at_end.reading is None:
        problem = next((r.error for r in (at_start, at_end) if r is not None and r.error), None)
        fields["engine_note"] = problem or f"the engine exports no {paths.METRICS} (no --enable-metrics?)"
        return fields
    window = CounterWindow(keep_s=float("inf"))
    first, last = at_start.reading, at_end.reading
    window.add(at_start.time, first.counters, first.histograms)
    if not window.add(at_end.time, last.counters, last.histograms):
        fields["engine_note"] = "the engine's counters went down during the window: it restarted"
        return fields
    a, b = at_start.time, at_end.time
    span = b - a
    whole = span + 1.0
    generated = window.delta("generation_tokens", whole)
    if generated is not None and span > 0:
        change = inflight(records, at_end.settled) - inflight(records, at_start.settled)
        ours = delivered(records, at_start.settled, at_end.settled)
        engine = generated.value + change
        race = race_tokens(records, at_start) + race_tokens(records, at_end)
        gap = engine - ours
        fields |= {
            "engine_output_throughput": engine / span,
            "engine_finished_throughput": generated.value / span,
            "engine_generated_tokens": generated.value,
            "engine_inflight_change_tokens": change,
            "engine_window_s": span,
            "engine_span_offset_s": None if steady is None else abs(a - steady[0]) + abs(b - steady[1]),
            "engine_stream_diff": None if ours <= 0 else gap / ours,
            "engine_stream_tokens": ours,
            "engine_race_tokens": race,
            "engine_stream_mismatch": ours > 0 and abs(gap) > MISMATCH * ours and abs(gap) > race,
        }
    verifies = window.delta("spec_verify_calls", whole)
    if verifies is not None:
        fields["engine_verify_calls"] = verifies.value
    accept = window.ratio("generation_tokens", "spec_verify_calls", whole)
    if accept is not None:
        fields["accept_length_counters"] = accept.value
    for name, key in (("itl", "itl"), ("ttft", "ttft")):
        recent = window.histogram(name, whole)
        if recent is None:
            continue
        for q, label in ((0.5, "p50"), (0.99, "p99")):
            quantile = recent.histogram.quantile(q)
            if quantile is not None:
                fields[f"engine_{label}_{key}_ms"] = _ms(quantile.value)
                if quantile.above_top:
                    fields[f"engine_{label}_{key}_above_top"] = True
    return fields
