"""The autopilot's state machine: samples in, commands and notices out (pure: no I/O, no clock).

Each tick's ``Sample`` feeds the estimator; every ``DECIDE_EVERY_S`` the policy scores the settings
worth trying and the pilot decides:

* **move** when a setting's estimated gain on recent traffic is at least ``min_gain`` and twice its
  standard error (hysteresis: a batch hovering at the threshold moves the estimate, not the setting),
  no sooner than ``dwell_s`` after the last move; and, more slowly (four dwells), to keep the threshold
  at a confident crossover estimate where no traffic runs yet;
* **probe** when the side it lacks data for at the batch running now could be the better one: a
  change of ``probe_s`` seconds, announced, at most ``probe_share`` of any ``PROBE_WINDOW_S``;
* **revert** to the operator's setting at once when telemetry goes stale, and note an engine restart
  (the restarted engine runs the operator's setting again); it resumes after ``RESUME_AFTER_S`` of
  fresh telemetry, with what it measured on the old engine forgotten;
* **restore** the operator's setting in one step when it is turned off.

Every change counts against ``max_moves_per_minute`` (probes twice: start and end); restores and
reverts are never held back by it. A command is in flight until ``applied`` reports its outcome; no
other command is issued meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.control.autopilot import words
from agent.control.autopilot.estimator import Estimator, context_tokens
from agent.control.autopilot.measure import Meter
from agent.control.autopilot.policy import Crossover, Score, Setting, candidates, crossover, score
from agent.control.autopilot.prior import Decision, held, prior_estimate, start_from, start_why
from agent.control.autopilot.probe import Budget, probe_arm, probe_setting
from agent.control.autopilot.sample import Sample, unavailable_reason
from agent.control.autopilot.settings import DECIDE_EVERY_S, RESUME_AFTER_S, PilotSettings
from agent.sglang.live_control import NO_THRESHOLD, RELEASE_PINNED_STEPS
from agent.wire.autopilot import AutopilotMode, AutopilotMove, MoveKind
from agent.wire.bench_evidence import BenchEvidence

DOWN_STATES = frozenset({"stopped", "starting", "restarting", "crashed", "crash_loop"})


@dataclass(frozen=True)
class Command:
    """A change of the engine's live setting the pilot asks for."""

    kind: MoveKind
    target: Setting
    before: Setting | None
    why: str
    estimate: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Notice:
    """An event with no engine call behind it."""

    name: str
    message: str
    data: dict[str, Any] = field(default_factory=dict)


Effect = Command | Notice


class Pilot:
    def __init__(self, settings: PilotSettings, *, enabled: bool = False) -> None:
        self.settings = settings
        self.enabled = enabled
        self.est = Estimator()
        self.mode: AutopilotMode = "waiting" if enabled else "off"
        self.detail: str | None = None
        self.operator_steps = RELEASE_PINNED_STEPS
        self.in_force: Setting | None = None
        """What the pilot set last (None: the operator's setting runs)."""
        self.in_force_before_probe: Setting | None = None
        self.pending: Command | None = None
        self.probe_arm: int | None = None
        self.probe_ends: float | None = None
        self.budget = Budget()
        self.last_move: AutopilotMove | None = None
        self.last_move_at = -1e18
        self.moves_total = 0
        self.last_usable: float | None = None
        self.resume_at: float | None = None
        self.engine_pid: int | None = None
        self.next_decide = -1e18
        self.meter = Meter(self.est)
        self.readback: Setting | None = None
        self.crossover: Crossover | None = None
        self.expected_gain: float | None = None
        self.now = 0.0
        self.prior: BenchEvidence | None = None
        """The newest finished bench on this engine: it starts from it (``prior``)."""
        self.held: str | None = None
        """Why its last decision changed nothing, in numbers (None: it moved, or has not decided)."""
        self._held_kind: str | None = None

    # ---- the operator -----------------------------------------------------------------------------

    @property
    def operator(self) -> Setting:
        return Setting(self.settings.operator_threshold, self.operator_steps)

    def configure(self, settings: PilotSettings, enabled: bool) -> list[Effect]:
        """New bounds or the operator's on/off; off restores the operator's setting in one step."""
        self.settings = settings
        if enabled == self.enabled:
            return []
        self.enabled = enabled
        if enabled:
            if self.in_force is None and self.readback is not None:
                self.operator_steps = self.readback.steps
            self.mode, self.detail = "waiting", None
            self.next_decide = self.now + DECIDE_EVERY_S
            return [Notice("autopilot.enabled", words.enabled(settings, self.operator), self._data())]
        self.mode, self.probe_arm, self.probe_ends = "off", None, None
        # What runs: what it set, else what the engine reads back (a setting an earlier agent's
        # autopilot left on a reattached engine is not the operator's either).
        running = self.current()
        if running != self.operator:
            return [Command("restore", self.operator, running, words.restore(self.operator))]
        self.in_force = None
        return [Notice("autopilot.disabled", words.disabled(self.operator), self._data())]

    # ---- each tick --------------------------------------------------------------------------------

    def observe(self, sample: Sample) -> list[Effect]:
        self.now = now = sample.time
        if sample.threshold is not None and sample.pinned is not None:
            self.readback = Setting(sample.threshold, sample.pinned)
        if not self.enabled:
            self.engine_pid = sample.engine_pid
            if (
                self.readback is not None
            ):  # off, the operator's steps are what the engine runs: its pin or none
                self.operator_steps = self.readback.steps
            return []
        effects = self._watch_engine(sample)
        if not sample.usable:
            return effects + self.check_stale(now)
        self.last_usable = now
        why = unavailable_reason(sample, self.settings.steps)
        if why is not None:
            if self.mode != "unavailable":
                self.mode, self.detail = "unavailable", why
                effects.append(Notice("autopilot.unavailable", f"autopilot: cannot steer this engine: {why}"))
            return effects
        if self.mode in ("unavailable", "waiting"):
            self.mode, self.detail = "learning", None
        self.meter.feed(sample)
        if self.mode == "holding":
            if self.resume_at is None:
                self.resume_at = now + RESUME_AFTER_S
            if now < self.resume_at or self.pending is not None:
                return effects
            self.mode, self.resume_at = "learning", None
            effects.append(Notice("autopilot.resumed", words.resumed(), self._data()))
        if self.pending is not None:
            return effects
        if self.probe_ends is not None:
            if now >= self.probe_ends:
                effects.append(self._end_probe())
            return effects
        if now >= self.next_decide:
            self.next_decide = now + DECIDE_EVERY_S
            effects.extend(self._decide())
        return effects

    def stopping(self) -> Command | None:
        """The agent stops: nobody will watch what the autopilot set, so the operator's setting goes back."""
        running = self.current()
        if not self.enabled or running == self.operator:
            return None
        why = words.revert("the agent is stopping", self.operator)
        return Command("revert", self.operator, running, why, {**self._data(), "reason": "stopping"})

    def check_stale(self, now: float) -> list[Effect]:
        """Telemetry older than ``stale_after_s`` while enabled: back to the operator's setting at once."""
        self.now = max(self.now, now)
        if not self.enabled or self.mode in ("holding", "waiting", "off") or self.last_usable is None:
            return []
        if now - self.last_usable < self.settings.stale_after_s:
            return []
        return self._revert(
            f"no fresh telemetry for {now - self.last_usable:.0f} s", call=True, reason="stale"
        )

    def _watch_engine(self, sample: Sample) -> list[Effect]:
        restarted = self.engine_pid is not None and sample.engine_pid not in (None, self.engine_pid)
        down = sample.engine_state in DOWN_STATES
        if sample.engine_pid is not None:
            self.engine_pid = sample.engine_pid
        if not (restarted or down) or self.mode in ("holding", "waiting"):
            return []
        self.est.reset()
        self.meter.reset()
        # A restarted engine runs its launch setting, the operator's: nothing to call.
        why = "the engine restarted" if restarted else f"the engine is {sample.engine_state}"
        return self._revert(why, call=False, reason="engine")

    def _revert(self, why: str, *, call: bool, reason: str) -> list[Effect]:
        self.mode, self.detail = "holding", f"back on the operator's setting: {why}"
        self.probe_arm = self.probe_ends = None
        self.resume_at = None
        before, self.in_force = self.in_force, None
        data = {**self._data(), "reason": reason}
        if call and before is not None and before != self.operator and self.pending is None:
            return [Command("revert", self.operator, before, words.revert(why, self.operator), data)]
        return [Notice("autopilot.reverted", words.revert(why, self.operator), data)]

    # ---- measuring --------------------------------------------------------------------------------

    # ---- deciding ---------------------------------------------------------------------------------

    def current(self) -> Setting:
        return self.in_force or self.readback or self.operator

    def _crossovers(self) -> dict[int, Crossover]:
        never = self.est.accept.never_pays(self.settings.steps, self.now)
        mass = self.est.mass()
        top = max(mass) if mass else None
        return {
            k: crossover(self.est, self.meter.ctx, k, self.now, never_pays=never, top_bin=top)
            for k in self.settings.steps
        }

    def _best(self, current: Setting, crossovers: dict[int, Crossover]) -> Score | None:
        best: Score | None = None
        for cand in candidates(self.settings, current, crossovers):
            found = score(self.est, self.meter.ctx, current, cand, self.meter.policy_steps, self.now)
            if found is not None and (best is None or found.gain > best.gain):
                best = found
        return best

    def _decide(self) -> list[Effect]:
        current = self.current()
        crossovers = self._crossovers()
        k_now = current.steps if current.steps > 0 else self.meter.policy_steps
        self.crossover = crossovers.get(k_now) if k_now is not None else None
        versus = score(self.est, self.meter.ctx, self.operator, current, self.meter.policy_steps, self.now)
        self.expected_gain = None if versus is None or current == self.operator else versus.gain
        best = self._best(current, crossovers)
        self.mode = "tracking" if best is not None or self.crossover is not None else "learning"
        since = self.now - self.last_move_at
        s = self.settings
        never = self.est.accept.never_pays(s.steps, self.now)
        if never and current.threshold != max(1, s.threshold_min) and since >= s.dwell_s and self._room(1):
            # Nothing to measure: a round that keeps no draft yields what a plain decode yields, dearer.
            target = Setting(max(1, s.threshold_min), current.steps)
            cross = crossovers.get(current.steps if current.steps > 0 else s.steps[0])
            why = words.track(current, target, cross, self.meter.ctx) if cross else target.words()
            return [Command("move", target, current, why, {"never_pays": True})]
        if (
            best is not None
            and best.gain >= s.min_gain
            and best.gain >= 2 * best.sd
            and since >= s.dwell_s
            and self._room(1)
        ):
            why = words.move(current, best, crossovers.get(best.setting.steps), self.meter.ctx)
            return [Command("move", best.setting, current, why, self._estimate(best, crossovers))]
        start = start_from(self.prior, s, current, self.crossover)
        if start is not None and self.prior is not None and since >= s.dwell_s and self._room(1):
            return [
                Command(
                    "move", start, current, start_why(current, start, self.prior), prior_estimate(self.prior)
                )
            ]
        probe = self._probe_for(current)
        if probe is not None:
            return [probe]
        tracked = self._track(current, crossovers)
        return [tracked] if tracked is not None else self._holds(current, best, since)

    def _holds(self, current: Setting, best: Score | None, since: float) -> list[Effect]:
        """Nothing moves: why, in numbers, on its state; an ``autopilot.held`` event when the reason changes."""
        decision = Decision(current, best, self.crossover, since, self.moves_last_minute(), self.probe_share(),
                            sum(self.est.mass().values()), self.prior)  # fmt: skip
        why = held(decision, self.settings)
        self.held = why.words
        if why.kind == self._held_kind:
            return []
        self._held_kind = why.kind
        return [Notice("autopilot.held", f"autopilot: {why.words}", {**self._data(), "reason": why.kind})]

    def _track(self, current: Setting, crossovers: dict[int, Crossover]) -> Command | None:
        """Keep the threshold at a confident crossover where no traffic runs yet (no gain to show)."""
        k = current.steps if current.steps > 0 else self.meter.policy_steps
        cross = crossovers.get(k) if k is not None else None
        if (
            cross is None
            or cross.threshold is None
            or self.now - self.last_move_at < 4 * self.settings.dwell_s
        ):
            return None
        target = self.settings.clamp(cross.threshold)
        if target == current.threshold or not self._room(1):
            return None
        if cross.note is None:
            low, high = cross.low or 0.0, cross.high or float("inf")
            far = abs(target - current.threshold) >= max(2.0, 0.15 * max(current.threshold, 1))
            if not far or low <= current.threshold <= high:
                return None
        elif cross.note == "above" and current.threshold != NO_THRESHOLD and target != NO_THRESHOLD:
            return None
        setting = Setting(target, current.steps)
        found = score(self.est, self.meter.ctx, current, setting, self.meter.policy_steps, self.now)
        if found is not None and found.gain < -self.settings.min_gain:
            return None
        chosen = found or Score(setting, 0.0, 0.0, 1.0)
        why = words.track(current, setting, cross, self.meter.ctx)
        return Command("move", setting, current, why, self._estimate(chosen, crossovers))

    # ---- probing ----------------------------------------------------------------------------------

    def _probe_for(self, current: Setting) -> Command | None:
        s, running = self.settings, self.meter.running
        if s.probe_share <= 0 or running is None or running < 1 or not self._room(2):
            return None
        if not self.budget.allows(self.now, s.probe_s, s.probe_share):
            return None
        arm_now = current.arm(running, self.meter.policy_steps)
        if arm_now is None:
            return None
        arm = probe_arm(self.est, s, self.meter.ctx, running, arm_now, self.now)
        if arm is None:
            return None
        target = probe_setting(s, current, arm)
        why = words.probe(arm, running, s.probe_s, self.meter.ctx, self.budget.share(self.now))
        return Command(
            "probe", target, current, why, {"arm": arm, "batch": running, "context_bin": self.meter.ctx}
        )

    def _end_probe(self) -> Effect:
        assert self.probe_arm is not None
        probing = self.current()
        self.probe_ends = None
        base = self.in_force_before_probe or self.operator
        crossovers = self._crossovers()
        best = self._best(base, crossovers)
        target, why, estimate = base, words.probe_end(self.probe_arm, base), {}
        if best is not None and best.gain >= self.settings.min_gain and best.gain >= 2 * best.sd:
            target = best.setting
            why = (
                words.probe_end(self.probe_arm, target)
                + "; "
                + words.move(base, best, crossovers.get(target.steps), self.meter.ctx)
            )
            estimate = self._estimate(best, crossovers)
        return Command("probe_end", target, probing, why, estimate)

    def _room(self, changes: int) -> bool:
        return self.budget.moves(self.now) + changes <= self.settings.max_moves_per_minute

    # ---- outcomes ---------------------------------------------------------------------------------

    def applied(self, cmd: Command, ok: bool, message: str, now: float) -> list[Effect]:
        """The engine's answer to ``cmd``; returns the notices the outcome calls for."""
        self.pending = None
        self.now = max(self.now, now)
        move = AutopilotMove(
            time=now,
            kind=cmd.kind,
            threshold_from=cmd.before.threshold if cmd.before else None,
            threshold_to=cmd.target.threshold,
            steps_from=cmd.before.steps if cmd.before else None,
            steps_to=cmd.target.steps,
            why=cmd.why if ok else f"{cmd.why} (failed: {message})",
            ok=ok,
        )
        self.last_move = move
        if cmd.kind in ("move", "probe", "probe_end"):
            self.budget.changed(now)
        if not ok:
            if cmd.kind == "probe":
                self.probe_arm = self.probe_ends = None
            return [Notice("autopilot.failed", f"autopilot: {cmd.kind} failed: {message}", self._data())]
        if not self.enabled and cmd.kind not in ("restore", "revert"):
            self.in_force = cmd.target  # landed after it was turned off: the restore that follows undoes it
            return []
        self.meter.changed(now)
        self.held, self._held_kind = None, None
        if cmd.kind in ("move", "probe_end"):
            self.moves_total += 1
            self.last_move_at = now
            self.in_force = cmd.target
        elif cmd.kind == "probe":
            self.moves_total += 1
            self.in_force_before_probe = cmd.before
            self.in_force = cmd.target
            self.probe_arm = int(cmd.estimate.get("arm", 0))
            self.probe_ends = now + self.settings.probe_s
            self.budget.probed(now, self.probe_ends)
            self.mode = "probing"
        elif cmd.kind == "restore":
            self.in_force = None
            return [Notice("autopilot.disabled", words.disabled(self.operator), self._data())]
        else:  # revert
            self.in_force = None
        if cmd.kind == "probe_end":
            self.probe_arm = None
            self.mode = "tracking"
        return []

    def issued(self, cmd: Command) -> None:
        """The runner sends ``cmd`` now: nothing else is issued until ``applied``."""
        self.pending = cmd

    def _estimate(self, best: Score, crossovers: dict[int, Crossover]) -> dict[str, Any]:
        cross = crossovers.get(best.setting.steps)
        accept = self.est.accept.length(best.setting.steps, self.now) if best.setting.steps > 0 else None
        return {
            "gain": round(best.gain, 4),
            "gain_sd": round(best.sd, 4),
            "unknown_share": round(best.unknown, 3),
            "crossover": cross.value if cross else None,
            "crossover_low": cross.low if cross else None,
            "crossover_high": cross.high if cross else None,
            "crossover_note": cross.note if cross else None,
            "context_tokens": context_tokens(self.meter.ctx),
            "accept_length": round(accept[0], 3) if accept else None,
        }

    def _data(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "operator_threshold": self.operator.threshold,
            "operator_steps": self.operator.steps,
        }

    def probe_share(self) -> float:
        return self.budget.share(self.now)

    def moves_last_minute(self) -> int:
        return self.budget.moves(self.now)
