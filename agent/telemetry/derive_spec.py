"""Deriving the speculation part of a Snapshot: on or off, why, and the accept length (pure).

The accept length is one number from one stated window, wherever it is shown: tokens per verify
(bonus token included) as ``Δgeneration_tokens_total / Δspec_verify_calls_total`` over
``Windows.rate_s`` (reference §5.5; both counters advance as requests finish, so the ratio covers the
same requests). When no request finished within the window, SGLang's own ``spec_accept_length``
gauge (its last decode-log window) stands in, and with ``/metrics`` off the lifetime
``avg_spec_accept_length`` of ``/server_info``; ``accept_source`` says which, ``accept_window_s``
the span of a counter window. The off reason quotes that same number, never another one (the
adaptive policy's EMA counts accepted drafts without the bonus token, over another window).
"""

from __future__ import annotations

from agent.sglang.info_view import LiveSpec, ServerInfo
from agent.sglang.live_control import NO_THRESHOLD
from agent.sglang.reading import MetricsReading
from agent.telemetry.derive import ProfileFacts, Windows
from agent.telemetry.window import CounterWindow
from agent.wire import Speculation
from agent.wire.snapshot import AcceptSource, EngineState, SpecOffReason


def accept_length(
    r: MetricsReading, window: CounterWindow, windows: Windows
) -> tuple[float | None, float | None, AcceptSource | None]:
    """(value, window span, source) of the accept length (see the module docstring)."""
    ratio = window.ratio("generation_tokens", "spec_verify_calls", windows.rate_s)
    if ratio is not None:
        return round(ratio.value, 3), round(ratio.span_s, 3), "counters"
    gauge = r.gauge("spec_accept_length")
    if gauge is not None and gauge > 0:
        return round(gauge, 3), None, "server_info" if r.source == "server_info" else "gauge"
    return None, None, None


def speculation(
    r: MetricsReading | None,
    info: ServerInfo | None,
    window: CounterWindow,
    windows: Windows,
    facts: ProfileFacts,
    engine_state: EngineState,
    running: int | None,
    engine_down: bool,
) -> Speculation:
    profile = facts.profile
    if info is not None:
        algorithm, configured = info.speculative_algorithm, info.speculative
    else:
        algorithm = profile.speculation.algorithm if profile.speculative else None
        configured = profile.speculative
    if not configured:
        return Speculation(
            configured=False,
            on=False,
            off_reason="not_configured",
            off_detail="This deployment runs without a draft model (no speculative algorithm).",
        )
    live = info.live if info else None
    base = {
        "configured": True,
        "algorithm": algorithm,
        "topk": (info.speculative_eagle_topk if info else None) or profile.speculation.eagle_topk,
        "threshold": live.threshold if live else None,
        "threshold_available": live is not None,
        "pinned_steps": live.pinned_steps if live else None,
        "prebuilt_steps": list(live.prebuilt_steps) if live else [],
    }
    if r is None:
        return Speculation(
            **base,
            on=None,
            off_reason="engine_down" if engine_down else "unknown",
            off_detail=(
                f"The engine is {engine_state}: nothing is decoding."
                if engine_down
                else "SGLang did not answer this tick, so the speculation state is unknown."
            ),
        )
    steps = r.gauge_int("spec_num_steps") if r.source == "metrics" else None
    if steps is None and live is not None:
        steps = live.active_steps
    if steps is None:
        steps = r.gauge_int("spec_num_steps")
    draft_tokens = r.gauge_int("spec_num_draft_tokens")
    if draft_tokens is None and info is not None:
        draft_tokens = info.state0.speculative_num_draft_tokens
    accept, accept_span, source = accept_length(r, window, windows)
    on = None if steps is None else steps > 0
    reason, detail = (None, None) if on is not False else off_reason(live, running, info, facts, accept)
    return Speculation(
        **base,
        on=on,
        steps=steps,
        draft_tokens=draft_tokens,
        accept_length=accept,
        accept_window_s=accept_span,
        accept_source=source,
        accept_rate=r.gauge("spec_accept_rate"),
        accept_length_recent=r.gauge("spec_accept_length") if r.source == "metrics" else None,
        off_reason=reason,
        off_detail=detail,
    )


def off_reason(
    live: LiveSpec | None,
    running: int | None,
    info: ServerInfo | None,
    facts: ProfileFacts,
    accept: float | None,
) -> tuple[SpecOffReason, str]:
    """Why the server decodes without drafting, in an operator's words."""
    profile = facts.profile
    threshold = live.threshold if live else None
    if threshold is None and profile.speculation.adaptive and facts.adaptive_reason is None:
        # No live read-back (SGLang without our patch): the launch config's 0-step slot still
        # holds batches at or above the profile's threshold.
        threshold = profile.speculation.threshold
    if threshold is not None and threshold != NO_THRESHOLD and running is not None and running >= threshold:
        if threshold == 1:
            return "above_threshold", "The speculation threshold is 1: the server never speculates."
        return (
            "above_threshold",
            f"{running} requests are running, at or above the threshold of {threshold}: the server "
            "decodes without drafting until the batch is smaller than that.",
        )
    adaptive = info.adaptive if info else None
    if adaptive is True or (adaptive is None and profile.speculation.adaptive):
        said = f" (accept length {accept:.2f})" if accept is not None else ""
        return (
            "adaptive_chose_zero",
            f"SGLang's adaptive policy chose 0 draft steps for this batch size{said}: drafting was "
            "not paying for itself.",
        )
    return "unknown", "The server reports 0 speculative steps without a threshold or adaptive policy."
