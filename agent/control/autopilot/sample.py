"""What one telemetry tick tells the autopilot: the Snapshot the console sees, reduced (pure).

The autopilot reads only live telemetry, the same numbers every console shows: the running batch,
the output tokens decoded within the tick (``Throughput.output_tok_s_raw`` over ``raw_window_s``:
SGLang's ``realtime_tokens_total{mode="decode"}``, or the generation counter on older servers) and
the prompt tokens prefilled in it, the step count in force (``spec_num_steps``), the accept length
(SGLang's last decode-log window, and generated tokens over verify calls), the KV slots in use per
running request (the context the batch reads) and the live read-back of the threshold and pinned
steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.profile.words import value_words
from agent.wire import Snapshot
from agent.wire.snapshot import EngineState


@dataclass(frozen=True, slots=True)
class Sample:
    time: float
    engine_state: EngineState
    engine_pid: int | None
    usable: bool
    """The engine is ready and answered ``/metrics`` this tick with a decode counter."""
    running: int | None = None
    tokens: float | None = None
    """Output tokens decoded within the tick (None: the counter has no pair yet)."""
    span_s: float | None = None
    steps: int | None = None
    """Steps in force (0: not drafting)."""
    context: float | None = None
    """KV slots in use per running request."""
    accept_length: float | None = None
    """Generated tokens over verify calls of the requests that finished within the window."""
    accept_recent: float | None = None
    """SGLang's own accept length over its last decode-log window (the step count in force)."""
    prefill_tokens: float | None = None
    """Prompt tokens prefilled within the tick (the time they took is no decode time)."""
    threshold: int | None = None
    """The live threshold read back from the engine (0 = none)."""
    pinned: int | None = None
    """Pinned steps read back (-1: SGLang's policy chooses)."""
    prebuilt: tuple[int, ...] = ()
    threshold_available: bool = False
    configured: bool = False


def sample_of(snap: Snapshot) -> Sample:
    t, spec, load, kv = snap.throughput, snap.speculation, snap.load, snap.kv
    tokens = prefill = None
    if t.raw_window_s is not None and t.raw_window_s > 0:
        if t.output_tok_s_raw is not None:
            tokens = t.output_tok_s_raw * t.raw_window_s
        if t.prompt_tok_s_raw is not None:
            prefill = t.prompt_tok_s_raw * t.raw_window_s
    running = load.running
    context = None
    if kv.used_tokens is not None and running:
        context = kv.used_tokens / running
    usable = snap.engine_state == "ready" and snap.metrics_source == "metrics" and running is not None
    return Sample(
        time=snap.time,
        engine_state=snap.engine_state,
        engine_pid=snap.engine_pid,
        usable=usable and t.output_counter is not None,
        running=running,
        tokens=tokens,
        span_s=t.raw_window_s,
        steps=spec.steps,
        context=context,
        accept_length=spec.accept_length if spec.on else None,
        accept_recent=spec.accept_length_recent if spec.on else None,
        prefill_tokens=prefill,
        threshold=spec.threshold,
        pinned=spec.pinned_steps,
        prebuilt=tuple(spec.prebuilt_steps),
        threshold_available=spec.threshold_available,
        configured=spec.configured,
    )


def unavailable_reason(sample: Sample, allowed_steps: tuple[int, ...]) -> str | None:
    """Why the autopilot cannot steer this engine, in an operator's words; None when it can."""
    if not sample.configured:
        return "the deployment runs without a draft model"
    if not sample.threshold_available:
        return "the engine reports no live threshold (SGLang without k25console's patch, or not adaptive)"
    if sample.prebuilt and 0 not in sample.prebuilt:
        return "the engine was started without a threshold, so its 0-step state was not built"
    missing = [s for s in allowed_steps if sample.prebuilt and s not in sample.prebuilt]
    if missing:
        return f"steps {value_words(missing)} were not built at start-up (built: {value_words(list(sample.prebuilt))})"
    return None
