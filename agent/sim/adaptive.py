"""SGLang 0.5.23's adaptive step policy, plus the live threshold and pinned steps of k25console's patch.

``StepSlot`` and ``AdaptiveParams`` follow ``srt/speculative/adaptive_spec_params.py``
(``AdaptiveStepSlot`` / ``AdaptiveSpeculativeParams``) line for line: per batch-size slot an EMA of
accepted draft tokens, a warm-up, an update interval, hysteresis on the way down and up, an
optional EMA ceiling, and 0 steps (no speculation) as a candidate that is left periodically to
probe the smallest positive step. The config is read with ``agent.sglang.adaptive.slots`` (the same
reading of SGLang's JSON the launcher writes).

``LiveAdaptiveController`` adds the two live controls defined in ``agent.sglang.live_control``:
the threshold (a running batch of at least this many requests decodes with 0 steps; ``0`` = no
threshold) and the pinned step count (used below the threshold instead of the EMA's choice;
``-1`` = let the EMA choose). The config's own threshold slot (a slot whose only candidate is 0,
``agent.sglang.adaptive.threshold_of``) is the threshold's start value; from then on the live value
replaces it, so that raising or lowering it live moves the boundary rather than adding a second one.
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
            "ema_accept_len": round(self.ema_accept_len, 4),
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

    def route_key(self, batch_size: int, exclude: int | None = None) -> int:
        padded = batch_size
        if self.cuda_graph_bs is not None:
            idx = bisect.bisect_left(self.cuda_graph_bs, batch_size)
            if idx < len(self.cuda_graph_bs):
                padded = self.cuda_graph_bs[idx]
        keys = [k for k in self.bs_list if k != exclude] or self.bs_list
        idx = bisect.bisect_right(keys, padded) - 1
        return keys[max(0, idx)]


class LiveAdaptiveController:
    """The adaptive worker's step choice with k25console's live threshold and pinned steps."""

    def __init__(
        self, initial_steps: int, config: dict[str, Any], cuda_graph_bs: list[int] | None = None
    ) -> None:
        self.params = AdaptiveParams(initial_steps, config, cuda_graph_bs)
        self.config_threshold = adaptive_config.threshold_of(config)
        self.threshold: int = (
            self.config_threshold if self.config_threshold is not None else live_control.NO_THRESHOLD
        )
        self.pinned_steps: int = live_control.RELEASE_PINNED_STEPS
        self.active_steps = self.params.slots[self._slot_key(1)].current_steps
        self.last_slot_key = self._slot_key(1)

    @property
    def prebuilt_steps(self) -> list[int]:
        """Every candidate step has a runtime state built at start-up, 0 included."""
        return list(self.params.candidate_steps)

    @property
    def positive_steps(self) -> list[int]:
        return [s for s in self.params.candidate_steps if s > 0]

    def _slot_key(self, batch_size: int) -> int:
        # The config's threshold slot stands for the live threshold; routing skips it.
        return self.params.route_key(batch_size, exclude=self.config_threshold)

    def steps_for_batch(self, batch_size: int) -> int:
        """``activate_step_by_batch``: the tier the next round of this batch runs at."""
        if self.threshold != live_control.NO_THRESHOLD and batch_size >= self.threshold:
            self.active_steps = 0
            return 0
        key = self._slot_key(batch_size)
        self.last_slot_key = key
        if self.pinned_steps != live_control.RELEASE_PINNED_STEPS:
            self.active_steps = self.pinned_steps
        else:
            self.active_steps = self.params.slots[key].current_steps
        return self.active_steps

    def on_verify_complete(self, accepted_drafts_per_req: list[int], batch_size: int, steps_run: int) -> None:
        """Feed the routed slot's EMA (``on_verify_complete``); a threshold round feeds nothing."""
        if self.threshold != live_control.NO_THRESHOLD and batch_size >= self.threshold:
            return
        if self.pinned_steps != live_control.RELEASE_PINNED_STEPS and steps_run == 0:
            return
        self.params.slots[self._slot_key(batch_size)].update(accepted_drafts_per_req)

    # ---------------------------------------------------------------- live keys

    def validate_threshold(self, value: int | float) -> str | None:
        if isinstance(value, bool) or float(value) != int(value):
            return f"{live_control.LIVE_THRESHOLD_KEY} must be an integer, got {value}"
        if int(value) < 0:
            return f"{live_control.LIVE_THRESHOLD_KEY} must be 0 (no threshold) or a batch size >= 1, got {value}"
        return None

    def validate_steps(self, value: int | float) -> str | None:
        if isinstance(value, bool) or float(value) != int(value):
            return f"{live_control.LIVE_STEPS_KEY} must be an integer, got {value}"
        steps = int(value)
        if steps != live_control.RELEASE_PINNED_STEPS and steps not in self.positive_steps:
            return (
                f"{live_control.LIVE_STEPS_KEY}={steps} has no pre-built runtime state; "
                f"allowed: {self.positive_steps} or {live_control.RELEASE_PINNED_STEPS}"
            )
        return None

    def readback(self) -> dict[str, Any]:
        """``internal_states[0][READBACK_FIELD]``, keys as ``live_control.READBACK_KEYS``."""
        slot = self.params.slots[self.last_slot_key]
        return {
            "threshold": self.threshold,
            "pinned_steps": self.pinned_steps,
            "active_steps": self.active_steps,
            "prebuilt_steps": self.prebuilt_steps,
            "ema_accept_len": round(slot.ema_accept_len, 4),
            "slots": {str(bs): s.readback() for bs, s in self.params.slots.items()},
        }
