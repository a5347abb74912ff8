"""The simulated engine's side of patch 03: the 0-step path, its counters, the catch-up and the round timer.

Patch 03 (``agent/install/patches/03-zero-step-plain-decode``) runs a 0-step round as the target's own
decode and catches the draft up with one draft-extend pass over the positions it missed, on the first
drafting round after 0-step rounds. The engine model prices the first in ``costmodel.zero_step_s``
(``plain``) and the second here; this book also answers the two live keys the patch adds
(``live_control.ZERO_STEP_KEY`` and ``ROUND_TIMING_KEY``) with the patch's rules and read-back. The
round timer's table is the cost model's own split of each round into the patch's stages, in
milliseconds (``host_ms`` 0: the simulator has no host time to show).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.sglang import live_control
from agent.sim import costmodel
from agent.sim.calibration import Calibration

MAX_TIMED_ROUNDS = 100_000


@dataclass
class _Kind:
    rounds: int = 0
    batch_sum: int = 0
    stages: dict[str, list[float]] = field(default_factory=dict)


class ZeroStepBook:
    def __init__(self, cal: Calibration, plain_at_launch: bool) -> None:
        self.cal = cal
        self.launch_plain = plain_at_launch
        self.plain = plain_at_launch
        self.counters: dict[str, Any] = {
            "plain_rounds": 0,
            "verify_rounds": 0,
            "fallback_rounds": 0,
            "last_fallback": None,
            "forced_zero": 0,
            "catchups": 0,
            "catchup_tokens": 0,
            "catchups_skipped": 0,
            "plain_prefills": 0,
            "errors": 0,
            "last_error": None,
            "last_reserve": None,
        }
        self._missed: set[str] = set()  # requests decoded at 0 steps on the plain path, not caught up
        self._deferred: dict[str, int] = {}
        """Prompt tokens of requests prefilled at 0 steps on the patched arrival path, whose draft
        extend waits for the catch-up (``calibration.ArrivalCosts.at_zero_steps``)."""
        self.timing_remaining = 0
        self._kinds: dict[str, _Kind] = {}

    # -- the rounds

    def reserve(self, config: Any, controller: Any, batch_size: int) -> int:
        """A decode batch's per-request KV reserve: a plain decode's when the live threshold sends it to
        0 steps on the plain path (patch 03; the simulator has no batch in flight), else SGLang's."""
        zero = controller is not None and 0 < controller.threshold <= batch_size
        reserve = int(config.zero_step_reserve if (self.plain and zero) else config.reserve_per_decode)
        self.counters["last_reserve"] = reserve
        return reserve

    def round(
        self, steps: int, plain: bool, rids: list[str], draft_tokens: int, kv_tokens: int, skip: bool
    ) -> float:
        """Count and time one decode round of the requests ``rids``; seconds it costs beyond
        ``costmodel.spec_step_s`` (the catch-up, on the first drafting round of requests that decoded
        at 0 steps on the plain path)."""
        size = len(rids)
        kind, stages = stage_split(self.cal, steps, plain, size, kv_tokens, draft_tokens, skip)
        extra = 0.0
        if steps == 0:
            self.counters["plain_rounds" if plain else "verify_rounds"] += 1
            if plain:
                self._missed.update(rids)
        elif self._missed and not self._missed.isdisjoint(rids):
            self._missed.difference_update(rids)
            deferred = sum(self._deferred.pop(rid, 0) for rid in rids)
            self.counters["catchups"] += 1
            self.counters["catchup_tokens"] += size * draft_tokens + deferred
            extra = costmodel.draft_pass_s(self.cal, size * draft_tokens + deferred)
            stages["catch_up"] = extra
        self.time(kind, size, stages)
        return extra

    def plain_prefill(self, prompts: dict[str, int]) -> None:
        """A prefill pass that joins a batch decoding at 0 steps on the patched arrival path (patch 03's
        ``plain_prefills``): each request's draft extend over its ``prompts[rid]`` tokens runs with the
        catch-up when speculation resumes."""
        self.counters["plain_prefills"] += 1
        for rid, tokens in prompts.items():
            self._deferred[rid] = self._deferred.get(rid, 0) + tokens
            self._missed.add(rid)

    def forget(self, rid: str) -> None:
        """The request left the batch (finished, aborted, retracted): nothing of it is caught up."""
        self._missed.discard(rid)
        self._deferred.pop(rid, None)

    def time(self, kind: str, size: int, stages: dict[str, float]) -> None:
        """One round for the timer's table, when it is on: ``stages`` are modelled seconds."""
        if self.timing_remaining <= 0:
            return
        self.timing_remaining -= 1
        entry = self._kinds.setdefault(kind, _Kind())
        entry.rounds += 1
        entry.batch_sum += size
        for name, seconds in stages.items():
            acc = entry.stages.setdefault(name, [0.0, 0.0])
            acc[0] += 1
            acc[1] += seconds * 1000.0

    # -- the live keys

    def check(self, key: str, value: object, adaptive: bool) -> str | None:
        """Why the engine refuses ``key=value`` (patch 03's words), or None when it accepts."""
        if key == live_control.ROUND_TIMING_KEY:
            if isinstance(value, bool) or not isinstance(value, int):
                return f"{key} must be an integer >= 0, got {value!r}"
            if not 0 <= value <= MAX_TIMED_ROUNDS:
                return f"{key} must be between 0 and {MAX_TIMED_ROUNDS}, got {value}"
            return None
        if not adaptive:
            return f"{key} needs adaptive speculative decoding with k25console patch 03"
        paths = {v: k for k, v in live_control.ZERO_STEP_VALUE.items()}
        if isinstance(value, bool) or not isinstance(value, int) or value not in paths:
            return f"{key} must be 1 (plain decode) or 0 (SGLang's verify path), got {value!r}"
        if paths[value] == live_control.ZERO_STEP_PLAIN and not self.launch_plain:
            return f"{key}=1 needs the plain decode state, which was not built at start-up"
        return None

    def apply(self, key: str, value: int) -> None:
        if key == live_control.ROUND_TIMING_KEY:
            self.timing_remaining = value
            if value == 0:
                self._kinds = {}
        else:
            self.plain = value == live_control.ZERO_STEP_VALUE[live_control.ZERO_STEP_PLAIN]

    # -- read-back

    def readback(self) -> dict[str, Any]:
        """``adaptive_spec_live.zero_step`` (keys: ``live_control.ZERO_STEP_READBACK_KEYS``)."""
        plain, verify = live_control.ZERO_STEP_PLAIN, live_control.ZERO_STEP_VERIFY
        out: dict[str, Any] = {
            "path": plain if self.plain else verify,
            "launch_path": plain if self.launch_plain else verify,
            "plain_built": self.launch_plain,
            "build_error": None if self.launch_plain else "the adaptive config asks for the verify path",
            **self.counters,
            "state": self.state_sizes(),
            "host": host_costs(),
        }
        return {key: out[key] for key in live_control.ZERO_STEP_READBACK_KEYS}

    def state_sizes(self) -> dict[str, int | None]:
        """``zero_step.state`` as the patch names it: the requests marked for a catch-up (the sim keys
        them by request, the patch by slot); the sim keeps no ring, buffers or timer events."""
        sizes: dict[str, int | None] = dict.fromkeys(live_control.ZERO_STEP_STATE_KEYS)
        sizes["missed_slots"] = len(self._missed)
        sizes["timing_kinds"] = len(self._kinds)
        return sizes

    def timing_table(self) -> dict[str, Any] | None:
        if not self._kinds and not self.timing_remaining:
            return None
        kinds = {
            kind: {
                "rounds": e.rounds,
                "mean_batch_size": round(e.batch_sum / max(1, e.rounds), 2),
                "stages": {
                    name: {"host_ms": 0.0, "gpu_ms": round(acc[1] / max(1.0, acc[0]), 4)}
                    for name, acc in e.stages.items()
                },
            }
            for kind, e in sorted(self._kinds.items())
        }
        return {"remaining": self.timing_remaining, "kinds": kinds}


def host_costs() -> dict[str, Any]:
    """``zero_step.host`` of the simulator's own process: its resident memory (``/proc/self/status``)
    and the collector's collections per generation (``gc.get_stats``); the sim times none of them
    (``gc_metered`` false), so the seconds read as unknown."""
    memory: dict[str, int | None] = {"rss_kib": None, "rss_peak_kib": None}
    try:
        lines = Path("/proc/self/status").read_text()[:16384].splitlines()
    except OSError:
        lines = []
    for line in lines:
        key, _, value = line.partition(":")
        name = {"VmRSS": "rss_kib", "VmHWM": "rss_peak_kib"}.get(key)
        if name is not None and value.split() and value.split()[0].isdigit():
            memory[name] = int(value.split()[0])
    return {
        **memory,
        "gc_collections": [int(s.get("collections", 0)) for s in gc.get_stats()],
        "gc_s": [],
        "gc_total_s": None,
        "gc_longest_ms": None,
        "gc_pending": list(gc.get_count()),
        "gc_metered": False,
    }


def stage_split(
    cal: Calibration, steps: int, plain: bool, size: int, kv_tokens: int, draft_tokens: int, skip: bool
) -> tuple[str, dict[str, float]]:
    """The round's kind and the cost model's seconds per patch-03 stage."""
    if steps == 0:
        zero = cal.spec.plain_zero_step if plain else cal.spec.zero_step
        extra = zero.round_s + zero.request_s * size
        decode = costmodel.decode_step_s(cal, size, kv_tokens)
        # Where the real timing table shows the path's cost (bench/results/real-h200-2026-12-03-big):
        # the plain path's in "prepare" (the decode batch's metadata, outside the graph), SGLang's in
        # the target forward (its one-token verify through the extend kernel).
        stages = {"prepare": extra, "target_forward": decode} if plain else {"target_forward": decode + extra}
        if not plain and not skip:
            stages["draft_extend"] = costmodel.draft_pass_s(cal, size)
        return ("zero_plain" if plain else "zero_verify"), stages
    total = costmodel.spec_step_s(cal, size, kv_tokens, steps, 1, draft_tokens)
    drafting = sum(costmodel.draft_pass_s(cal, size) for _ in range(steps))
    extend = costmodel.draft_pass_s(cal, size * draft_tokens)
    return "spec", {"input": drafting, "target_forward": total - drafting - extend, "draft_extend": extend}
