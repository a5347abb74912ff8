"""SGLang 0.5.23's adaptive step policy, plus the live threshold and pinned steps of k25console's patch.

``StepSlot`` and ``AdaptiveParams`` follow ``srt/speculative/adaptive_spec_params.py``
(``AdaptiveStepSlot`` / ``AdaptiveSpeculativeParams``) line for line: per batch-size slot an EMA of
accepted draft tokens, a warm-up, an update interval, hysteresis on the way down and up, an
optional EMA ceiling, and 0 steps (no speculation) as a candidate that is left periodically to
probe the smallest positive step. The config is read with ``agent.sglang.adaptive.slots`` (the same
reading of SGLang's JSON the launcher writes).

``LiveAdaptiveController`` adds the two live controls defined in ``agent.sglang.live_control``,
with the semantics of k25console's SGLang patch 01 (``LiveAdaptiveState``): the threshold (a running
batch of at least this many requests decodes with 0 steps; ``0`` = no threshold), whose start value
is the config's trailing ``[0]``-only slot, and the pinned step count (every speculating slot
narrowed to it; ``-1`` = the EMA policy chooses again, from the slot's launch state).
"""

from __future__ import annotations

import bisect
import math
from typing import Any

from agent.sglang import adaptive as adaptive_config
from agent.sglang import live_control


class StepSlot:
    """One batch-size slot's EMA policy (``AdaptiveStepSlot``)."""

    def __init__(self, initial_steps: int, cfg: dict[str, Any]) -> None:
        candidates = sorted({int(s) for s in cfg["candidate_steps"]})
        if not candidates:
            raise ValueError("candidate_steps must have at least 1 value")
        self.candidate_steps = candidates
        self.ema_alpha = float(cfg.get("ema_alpha", 0.2))
        self.update_interval = int(cfg.get("update_interval", 5))
        self.warmup_batches = int(cfg.get("warmup_batches", 10))
        self.down_hysteresis = float(cfg.get("down_hysteresis", -0.25))
        self.up_hysteresis = float(cfg.get("up_hysteresis", 0.0))
        self.ceiling_coeff = float(cfg.get("ceiling_coeff", 0))
        if initial_steps in candidates:
            self.current_steps = initial_steps
        else:
            self.current_steps = candidates[len(candidates) // 2]
        self.ema_accept_len = float(self.current_steps - 1)
        self.batch_count = 0

    def update(self, accepted_drafts_per_req: list[int]) -> bool:
        """Feed one verify's accepted draft counts; True when the slot changed its steps."""
        if not accepted_drafts_per_req:
            return False
        if self.current_steps > 0:
            batch_avg = sum(accepted_drafts_per_req) / len(accepted_drafts_per_req)
            self.ema_accept_len = (1 - self.ema_alpha) * self.ema_accept_len + self.ema_alpha * batch_avg
        self.batch_count += 1
        if self.batch_count <= self.warmup_batches:
            return False
        if (self.batch_count - self.warmup_batches) % self.update_interval != 0:
            return False
        return self._recompute()

    def _recompute(self) -> bool:
        old = self.current_steps
        idx = self.candidate_steps.index(old)
        old_idx = idx
        if old == 0:
            idx = min(idx + 1, len(self.candidate_steps) - 1)
            target = self.candidate_steps[idx]
            if target > 0 and self.ema_accept_len < 0:
                self.ema_accept_len = float(target - 1)
            return self._apply(old, target)
        while idx > 0:
            prev = self.candidate_steps[idx - 1]
            drop = (0.5 if prev == 0 else prev - 0.5) + self.down_hysteresis
            if self.ema_accept_len <= drop:
                idx -= 1
            else:
                break
        if idx >= old_idx:
            while idx < len(self.candidate_steps) - 1:
                rise = self.candidate_steps[idx] - 0.5 + self.up_hysteresis
                if self.ema_accept_len > rise:
                    idx += 1
                else:
                    break
        target = self.candidate_steps[idx]
        if self.ceiling_coeff > 0:
            ceiling = max(1, math.ceil(self.ema_accept_len * self.ceiling_coeff))
            if ceiling < target <= old:
                while idx > 0 and self.candidate_steps[idx] > ceiling:
                    idx -= 1
                target = self.candidate_steps[idx]
        return self._apply(old, target)

    def _apply(self, old: int, target: int) -> bool:
        if target != old:
            self.current_steps = target
            return True
        return False

    def readback(self) -> dict[str, Any]:
        return {
            "current_steps": self.current_steps,
            "candidate_steps": list(self.candidate_steps),
            "ema_accept_len": float(self.ema_accept_len),
            "batch_count": self.batch_count,
        }


class AdaptiveParams:
    """Routes a batch size to its slot (``AdaptiveSpeculativeParams``)."""

    def __init__(
        self, initial_steps: int, config: dict[str, Any], cuda_graph_bs: list[int] | None = None
    ) -> None:
        entries = adaptive_config.slots(config)
        if not entries:
            raise ValueError("the adaptive config must contain at least one integer-string BS key")
        self.bs_list = sorted(entries)
        self.slots = {bs: StepSlot(initial_steps, entries[bs]) for bs in self.bs_list}
        self.cuda_graph_bs = sorted(cuda_graph_bs) if cuda_graph_bs else None
        self.candidate_steps = sorted({s for slot in self.slots.values() for s in slot.candidate_steps})

    def pad(self, batch_size: int) -> int:
        """``_pad_to_cuda_graph_bs``: the next captured batch size (unchanged without a list, or above it)."""
        if self.cuda_graph_bs is None:
            return batch_size
        idx = bisect.bisect_left(self.cuda_graph_bs, batch_size)
        return self.cuda_graph_bs[idx] if idx < len(self.cuda_graph_bs) else batch_size


def threshold_slots(slots: dict[int, StepSlot]) -> list[int]:
    """Trailing slot keys whose only candidate is 0 steps: the launch-time threshold."""
    keys: list[int] = []
    for bs in sorted(slots, reverse=True):
        if slots[bs].candidate_steps != [0]:
            break
        keys.insert(0, bs)
    return keys


class LiveAdaptiveController:
    """The adaptive worker's step choice with k25console's live threshold and pinned steps.

    Mirrors ``LiveAdaptiveState`` of patch 01 (``agent/install/patches/01-live-adaptive-control``;
    a test runs that code side by side with this one): batches at or above the threshold go to a
    private slot fixed at 0 steps; smaller ones to the largest speculating slot key not above the
    (padded) batch size. Pinning narrows every speculating slot's candidates to the pinned step;
    releasing restores them and resets each slot to its launch step, EMA and warm-up.
    """

    def __init__(
        self, initial_steps: int, config: dict[str, Any], cuda_graph_bs: list[int] | None = None
    ) -> None:
        self.params = AdaptiveParams(initial_steps, config, cuda_graph_bs)
        slots = self.params.slots
        markers = threshold_slots(slots)
        self.threshold: int = markers[0] if markers else live_control.NO_THRESHOLD
        self.pinned_steps: int = live_control.RELEASE_PINNED_STEPS
        self.speculating_keys = [bs for bs in self.params.bs_list if bs not in markers] or list(
            self.params.bs_list
        )
        self.zero_slot = StepSlot(0, {"candidate_steps": [0]})
        self._saved_candidates: dict[int, list[int]] = {}
        # Each speculating slot as built (launch step, neutral EMA): what a release resets it to.
        self._launch_state = {
            bs: (slots[bs].current_steps, slots[bs].ema_accept_len) for bs in self.speculating_keys
        }
        self.last_slot = slots[self.speculating_keys[0]]
        self.active_steps = (
            initial_steps if initial_steps in self.params.candidate_steps else self.last_slot.current_steps
        )

    @property
    def prebuilt_steps(self) -> list[int]:
        """Every candidate step has a runtime state built at start-up, 0 included."""
        return list(self.params.candidate_steps)

    def route(self, batch_size: int) -> StepSlot:
        if self.threshold > live_control.NO_THRESHOLD and batch_size >= self.threshold:
            return self.zero_slot
        padded = self.params.pad(batch_size)
        below = [bs for bs in self.speculating_keys if bs <= padded]
        slot = self.params.slots[below[-1] if below else self.speculating_keys[0]]
        self.last_slot = slot
        return slot

    def steps_for_batch(self, batch_size: int) -> int:
        """``activate_step_by_batch``: the tier the next round of this batch runs at."""
        self.active_steps = self.route(batch_size).current_steps
        return self.active_steps

    def on_verify_complete(self, accepted_drafts_per_req: list[int], batch_size: int) -> None:
        """Feed the routed slot's EMA (``AdaptiveSpeculativeParams.on_verify_complete``)."""
        self.route(batch_size).update(accepted_drafts_per_req)

    # ---------------------------------------------------------------- live keys

    def check_threshold(self, value: object) -> str | None:
        """Why ``value`` cannot be the threshold (patch 01's rule), or None when it can."""
        key = live_control.LIVE_THRESHOLD_KEY
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{key} must be an integer >= 0, got {value!r}"
        if value < 0:
            return f"{key} must be >= 0 (0 = no threshold), got {value}"
        if value > live_control.NO_THRESHOLD and 0 not in self.prebuilt_steps:
            return f"{key}={value} needs a pre-built 0-step state; pre-built steps are {self.prebuilt_steps}"
        return None

    def check_steps(self, value: object) -> str | None:
        """Why ``value`` cannot be the pinned step (patch 01's rule), or None when it can."""
        key = live_control.LIVE_STEPS_KEY
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{key} must be an integer, got {value!r}"
        if value == live_control.RELEASE_PINNED_STEPS:
            return None
        speculating = [s for s in self.prebuilt_steps if s > 0]
        if value not in speculating:
            return f"{key}={value} is not a pre-built speculating state; choose one of {speculating} or -1"
        return None

    def set_threshold(self, value: int) -> None:
        self.threshold = value

    def set_pinned_steps(self, value: int) -> None:
        """Pin (narrow every speculating slot to ``value``) or release (-1): a released slot is reset
        to its launch step, neutral EMA and a new warm-up, as patch 01 does (its README says why)."""
        slots = self.params.slots
        for bs in self.speculating_keys:
            slot = slots[bs]
            if value == live_control.RELEASE_PINNED_STEPS:
                if bs not in self._saved_candidates:
                    continue
                slot.candidate_steps = self._saved_candidates.pop(bs)
                slot.current_steps, slot.ema_accept_len = self._launch_state[bs]
                slot.batch_count = 0
            else:
                self._saved_candidates.setdefault(bs, slot.candidate_steps)
                slot.candidate_steps = [value]
            if slot.current_steps not in slot.candidate_steps:
                current = slot.current_steps
                slot.current_steps = min(slot.candidate_steps, key=lambda s: (abs(s - current), s))
        self.pinned_steps = value

    def readback(self) -> dict[str, Any]:
        """``internal_states[0][READBACK_FIELD]`` as patch 02 writes it (keys: ``live_control.READBACK_KEYS``)."""
        return {
            "threshold": self.threshold,
            "pinned_steps": self.pinned_steps,
            "active_steps": self.active_steps,
            "prebuilt_steps": self.prebuilt_steps,
            "ema_accept_len": float(self.last_slot.ema_accept_len),
            "slots": {str(bs): s.readback() for bs, s in sorted(self.params.slots.items())},
        }
