"""The profile's ``[health]`` section: when the health findings fire.

Its own module because the findings that watch the load, the engine and the acceptance each name
their thresholds here (``agent.telemetry.health``, ``agent.telemetry.acceptance``).
"""

from __future__ import annotations

from pydantic import Field

from agent.profile.section import _Section


class Health(_Section):
    """When the health findings that watch the load fire (``agent.telemetry.health``).

    The defaults suit the shipped deployment; a finding that cries wolf is one an operator learns to
    ignore, so each rule waits for its condition to hold, not for one bad tick.
    """

    queue_window_s: float = Field(
        30.0, ge=1.0, le=3600.0, description="The queue must not have shrunk over this long"
    )
    queue_min_requests: int = Field(8, ge=1, le=100_000, description="... and hold at least this many")
    ttft_p99_target_s: float = Field(
        10.0, gt=0.0, le=3600.0, description="Time to first token (p99 over the telemetry window) above this"
    )
    kv_used_max_pct: float = Field(90.0, gt=0.0, le=100.0, description="KV pool used at or above this")
    idle_after_s: float = Field(
        300.0, ge=0.0, le=86_400.0, description="No request running or waiting this long while ready; 0 = off"
    )
    restart_window_s: float = Field(
        600.0, ge=10.0, le=86_400.0, description="A restart or crash stays a finding this long"
    )
    crash_loop_crashes: int = Field(
        3, ge=2, le=100, description="This many crashes within restart_window_s: crash-looping"
    )
    stale_after_s: float = Field(
        15.0, ge=1.0, le=3600.0, description="No reading from a ready engine this long: telemetry stale"
    )
    accept_collapse_ratio: float = Field(
        0.5,
        gt=0.0,
        lt=1.0,
        description="Acceptance collapse: the drafts' gain (accept length - 1) falls below this share of "
        "the server's own recent level at the same step count",
    )
    accept_collapse_window_s: float = Field(
        30.0, ge=1.0, le=3600.0, description="... measured over this long (the level now)"
    )
    accept_baseline_s: float = Field(
        600.0,
        ge=10.0,
        le=86_400.0,
        description="... against the readings of this long before it (the recent level)",
    )
    accept_loop_window_s: float = Field(
        60.0,
        ge=1.0,
        le=86_400.0,
        description="Loop: the accept length held at the draft's maximum this long on the clients' traffic",
    )
    accept_loop_min_share: float = Field(
        0.95, gt=0.5, le=1.0, description="... at the maximum: at least this share of the drafts accepted"
    )
    wasted_draft_share_max: float = Field(
        0.8,
        gt=0.0,
        le=1.0,
        description="Wasted drafts: at least this share of the drafted tokens rejected over the last minute",
    )
    wasted_draft_min_s: float = Field(
        20.0, ge=1.0, le=60.0, description="... with at least this many seconds of that minute spent drafting"
    )
