"""The speculation autopilot's state on the wire: what the agent's autopilot holds and why.

The agent fills it (``agent.control.autopilot``) on every Snapshot (``Snapshot.autopilot``); the
console draws it as it is. Additive: an older console ignores it, a newer console reads None from an
older agent.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


AutopilotMode = Literal["off", "unavailable", "waiting", "learning", "tracking", "probing", "holding"]
"""``off``: not enabled (the operator's setting runs); ``unavailable``: enabled, but this engine has no
live threshold or step control (``detail`` says why); ``waiting``: for a ready engine and fresh
telemetry; ``learning``: measuring, no estimate yet; ``tracking``: holding the setting its estimate
chose; ``probing``: a short announced change to measure the side it lacks data for; ``holding``: back
on the operator's setting after stale telemetry or an engine restart, until telemetry is fresh again."""

MoveKind = Literal["move", "probe", "probe_end", "revert", "restore"]
"""``move``: a change its estimate justified; ``probe``/``probe_end``: a probe starts or ends;
``revert``: back to the operator's setting for safety (stale telemetry, engine restart); ``restore``:
back to the operator's setting because the autopilot was turned off."""


class AutopilotMove(_Wire):
    time: float
    kind: MoveKind
    threshold_from: int | None = None
    threshold_to: int | None = None
    steps_from: int | None = Field(None, description="-1: SGLang's policy chooses")
    steps_to: int | None = Field(None, description="-1: SGLang's policy chooses")
    why: str = Field(description="The estimate that justified it, in an operator's words")
    ok: bool = True


class AutopilotState(_Wire):
    enabled: bool = False
    mode: AutopilotMode = "off"
    detail: str | None = Field(None, description="The mode in words")
    threshold: int | None = Field(None, description="Live threshold it holds (0 = speculate at every size)")
    steps: int | None = Field(None, description="Steps it pins below the threshold; -1: SGLang's policy")
    operator_threshold: int | None = Field(None, description="The operator's fixed threshold it returns to")
    operator_steps: int | None = Field(None, description="The operator's steps it returns to (-1: policy)")
    crossover: float | None = Field(
        None, description="Estimated running batch from which decoding without drafting delivers more"
    )
    crossover_low: float | None = Field(None, description="Lower end of the crossover's uncertainty")
    crossover_high: float | None = Field(None, description="Upper end of the crossover's uncertainty")
    crossover_note: str | None = Field(
        None, description="When the crossover lies outside what was measured: 'above' or 'below' in words"
    )
    expected_gain: float | None = Field(
        None, description="Estimated tokens/s of its setting over the operator's, minus 1, on recent traffic"
    )
    accept_length: float | None = Field(None, description="Accept length its estimate uses (steps in force)")
    last_move: AutopilotMove | None = None
    moves_last_minute: int = 0
    max_moves_per_minute: int = 0
    moves_total: int = 0
    probe_share: float | None = Field(None, description="Share of the last 10 minutes spent probing")
    probe_share_max: float | None = None
    probe_ends_at: float | None = Field(None, description="Unix time the probe in force ends")
    prior: str | None = Field(
        None,
        description="The finished bench on this engine it starts from, in words (run, threshold, interval)",
    )
    held: str | None = Field(None, description="Why its last decision changed nothing, with the numbers")
