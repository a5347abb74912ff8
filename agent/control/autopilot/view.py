"""The pilot's state as the wire carries it (``agent.wire.AutopilotState``), for snapshots and the exporter."""

from __future__ import annotations

from agent.control.autopilot.pilot import Pilot
from agent.control.autopilot.prior import prior_words
from agent.wire.autopilot import AutopilotState

_DETAIL = {
    "off": "off: the operator's setting runs",
    "waiting": "waiting for a ready engine and fresh telemetry",
    "learning": "measuring: no estimate of the crossover yet",
    "tracking": "holding the setting its estimate chose",
    "probing": "probing the side it lacks data for",
}


def state_of(pilot: Pilot, now: float) -> AutopilotState:
    cross = pilot.crossover if pilot.enabled else None
    current = pilot.in_force if pilot.enabled else None
    operator = pilot.operator
    accept = None
    if current is not None and current.steps > 0:
        found = pilot.est.accept.length(current.steps, now)
        accept = round(found[0], 3) if found is not None else None
    return AutopilotState(
        enabled=pilot.enabled,
        mode=pilot.mode,
        detail=pilot.detail or _DETAIL.get(pilot.mode),
        threshold=current.threshold if current else (pilot.readback.threshold if pilot.readback else None),
        steps=current.steps if current else (pilot.readback.steps if pilot.readback else None),
        operator_threshold=operator.threshold,
        operator_steps=operator.steps,
        crossover=cross.value if cross and cross.note is None else None,
        crossover_low=cross.low if cross else None,
        crossover_high=cross.high if cross else None,
        crossover_note=_note(cross.note, cross.low, cross.value) if cross and cross.note else None,
        expected_gain=round(pilot.expected_gain, 4) if pilot.expected_gain is not None else None,
        accept_length=accept,
        last_move=pilot.last_move,
        moves_last_minute=pilot.moves_last_minute(),
        max_moves_per_minute=pilot.settings.max_moves_per_minute,
        moves_total=pilot.moves_total,
        probe_share=round(pilot.probe_share(), 4),
        probe_share_max=pilot.settings.probe_share,
        probe_ends_at=pilot.probe_ends,
        prior=prior_words(pilot.prior) if pilot.enabled and pilot.prior is not None else None,
        held=pilot.held if pilot.enabled else None,
    )


def _note(note: str, low: float | None, value: float | None) -> str:
    if note == "above":
        seen = f" (measured up to a batch of {low:.0f})" if low is not None else ""
        return f"drafting wins at every batch measured{seen}"
    if value is not None and value <= 1.0:
        return "drafting never pays: the drafts are (nearly) never accepted"
    at = f" (from a batch of {value:.0f})" if value is not None else ""
    return f"drafting loses at every batch measured{at}"
