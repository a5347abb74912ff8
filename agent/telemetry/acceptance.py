"""Acceptance as a health signal: collapse, loop and wasted drafts (issue 49).

How many drafted tokens the target keeps says more than whether speculation pays: very low means a
draft that does not match the model or the traffic, or garbled output; held at the maximum means a
loop. Three findings read it, with thresholds from the profile's ``[health]`` section:

* **accept_collapse**: the accept length at one step count falls well below this server's own recent
  level *at the same step count* (steps change what a verify can keep, so levels are only compared
  like with like). The drafts' gain, accept length − 1, is compared, since 1 is what a verify keeps
  with nothing accepted. SGLang's adaptive policy answers a collapse by drafting fewer steps, so
  where the recent readings were at other step counts the recent level is carried to this one by
  the acceptance model (``accept_model``: each draft position kept with one probability). Readings taken while a collapse holds do not enter the recent level, so it
  holds until the acceptance comes back or ``accept_baseline_s`` has passed: a level that lasts that
  long is the server's new one (``wasted_drafts`` and ``accept_length_stuck`` say whether it pays).
* **accept_loop**: the accept length held at the draft's maximum (steps + 1) for a stretch of the
  clients' traffic.
* **wasted_drafts**: the share of drafted tokens rejected over the last minute, and the decoding time
  it took (``draft_waste``).

A reading counts only when it is SGLang's counters over a window spent drafting at one step count
(the ratio over a window that reaches back past a switch or a step change mixes two regimes; the
gauge that stands in when no request finished stays put while idle). The agent's own benchmark is
not the clients' traffic: while its requests weigh on the windows nothing is judged or learnt.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import Final

from agent.profile.health import Health
from agent.telemetry.accept_model import geometric_accept, solve_p
from agent.wire import Finding, Snapshot

MIN_READINGS: Final = 3
"""Readings a level needs before it is believed (each one is a window of finished requests)."""
MIN_BASE_GAIN: Final = 0.3
"""A recent level must itself show drafting paying (0.3 tokens a verify): otherwise there is nothing
to collapse from (and ``accept_length_stuck`` speaks for a draft that never matched)."""
CURRENT_COVER: Final = 0.75
"""The readings of the level now must span this share of ``accept_collapse_window_s``."""


def _enough(readings: list[Reading], window: float) -> bool:
    return len(readings) >= MIN_READINGS and readings[-1].time - readings[0].time >= CURRENT_COVER * window


def _mean(readings: list[Reading]) -> float:
    return sum(r.value for r in readings) / len(readings)


def _steps_said(readings: list[Reading]) -> str:
    steps = sorted({r.steps for r in readings})
    return f"{', '.join(map(str, steps))} step" + ("s" if steps != [1] else "")


def _ago(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


@dataclass(frozen=True)
class Reading:
    time: float
    steps: int
    value: float
    collapsed: bool


@dataclass
class AcceptanceWatch:
    """Fed every snapshot in order by ``HealthWatch``; returns the acceptance findings of this tick."""

    _readings: deque[Reading] = field(default_factory=deque)
    _steps: int | None = None
    _since: float | None = None
    """Since when speculation has run at ``_steps`` without a break (a reading's window must start after)."""
    _loop_since: float | None = None
    _loop_readings: int = 0

    def clear(self) -> None:
        """A new engine process: its acceptance owes nothing to the old one's."""
        self._readings.clear()
        self._steps = self._since = self._loop_since = None
        self._loop_readings = 0

    def observe(self, snap: Snapshot, limits: Health, judged: bool = True) -> list[Finding]:
        """``judged`` False while the agent's own benchmark weighs on the windows."""
        now = snap.time
        keep = limits.accept_baseline_s + limits.accept_collapse_window_s
        while self._readings and self._readings[0].time < now - keep:
            self._readings.popleft()
        changed = self._track_steps(snap)
        if changed or not judged or not snap.load.running or self._steps is None:
            self._loop_since, self._loop_readings = None, 0
        reading = self._reading(snap) if judged else None
        found: list[Finding] = []
        if reading is not None:
            steps, value = reading
            collapse = self._collapse(now, steps, value, limits)
            if collapse is not None:  # the window that showed it belongs to it, not to the recent level
                start = now - limits.accept_collapse_window_s
                self._readings = deque(
                    replace(r, collapsed=True) if r.time > start else r for r in self._readings
                )
                found.append(collapse)
            self._readings.append(Reading(now, steps, value, collapse is not None))
            if value - 1.0 >= limits.accept_loop_min_share * steps:
                self._loop_since = now if self._loop_since is None else self._loop_since
                self._loop_readings += 1
            else:
                self._loop_since, self._loop_readings = None, 0
        loop = self._loop(snap, limits)
        if loop is not None:
            found.append(loop)
        waste = wasted_drafts(snap, limits) if judged else None
        if waste is not None:
            found.append(waste)
        return found

    def _track_steps(self, snap: Snapshot) -> bool:
        """Follow the step count in force (None: not drafting); True when it changed this tick."""
        spec = snap.speculation
        steps = spec.steps if spec.on is True and spec.steps else None
        if steps == self._steps and self._since is not None:
            return False
        self._steps, self._since = steps, snap.time
        return True

    def _reading(self, snap: Snapshot) -> tuple[int, float] | None:
        spec, now, steps = snap.speculation, snap.time, self._steps
        if (
            steps is None
            or self._since is None
            or spec.accept_source != "counters"
            or spec.accept_length is None
        ):
            return None
        if not snap.load.running or now - (spec.accept_window_s or 0.0) < self._since:
            return None
        return steps, spec.accept_length

    def _collapse(self, now: float, steps: int, value: float, limits: Health) -> Finding | None:
        window, baseline_s = limits.accept_collapse_window_s, limits.accept_baseline_s
        current = [r for r in self._readings if r.steps == steps and r.time > now - window]
        first = current[0].time if current else now
        if len(current) + 1 < MIN_READINGS or now - first < CURRENT_COVER * window:
            return None
        before = [
            r
            for r in self._readings
            if not r.collapsed and now - window - baseline_s <= r.time <= now - window
        ]
        same = [r for r in before if r.steps == steps]
        base = same if _enough(same, window) else before
        if not _enough(base, window):
            return None
        if base is same:
            level = _mean(base)
        else:  # the policy moved the step count: the recent level, carried to this one by the model
            level = geometric_accept(sum(solve_p(r.value, r.steps) for r in base) / len(base), steps)
        level_now = (sum(r.value for r in current) + value) / (len(current) + 1)
        gain, base_gain = level_now - 1.0, level - 1.0
        bar = limits.accept_collapse_ratio * base_gain
        if base_gain < MIN_BASE_GAIN or gain >= bar:
            return None
        at = (
            "at the same step count"
            if base is same
            else (f"at {_steps_said(base)}, which the acceptance model carries to {level:.2f} at {steps}")
        )
        return Finding(
            code="accept_collapse",
            severity="warning",
            title=f"Acceptance collapsed at {steps} steps: accept length {level_now:.2f}, against {level:.2f} recently",
            explanation=(
                f"Over the last {_ago(window)} each verify at {steps} draft steps kept {level_now:.2f} tokens; "
                f"over the {_ago(base[-1].time - base[0].time)} before, this server kept {_mean(base):.2f} "
                f"{at}. The drafts now buy {max(gain, 0.0):.2f} tokens a verify instead of {base_gain:.2f}, "
                "while every round still pays for drafting them. Likely causes: the draft model does not "
                "match the model or the traffic (a draft swapped, or trained on other text), the traffic "
                "changed (another language, code, a new client), or the output is garbled (text that no "
                "drafter predicts)."
            ),
            action=(
                "Stop drafting now: set the speculation threshold to 1 (Controls, or agent control "
                "threshold 1), or turn the autopilot on, which stops drafting where it does not pay. "
                "Then read a few recent outputs for garbling, check which draft model runs, and what "
                "the clients began sending when this began."
            ),
            value=round(level_now, 3),
            limit=round(1.0 + bar, 3),
            unit="tokens",
        )

    def _loop(self, snap: Snapshot, limits: Health) -> Finding | None:
        since, steps = self._loop_since, self._steps
        if since is None or steps is None or self._loop_readings < MIN_READINGS:
            return None
        held = snap.time - since
        if held < limits.accept_loop_window_s:
            return None
        value = snap.speculation.accept_length
        said = f"{value:.2f}" if value is not None else f"about {steps + 1}"
        return Finding(
            code="accept_loop",
            severity="warning",
            title=f"Acceptance held at the maximum for {_ago(held)}: {said} of {steps + 1} tokens a verify",
            explanation=(
                f"For {_ago(held)} of the clients' traffic the target kept nearly every draft at {steps} "
                f"steps (at least {limits.accept_loop_min_share:.0%} of them), the most a verify can keep. "
                "Real text is not that predictable: the usual cause is repetitive output, a model "
                "repeating a phrase until its max_tokens, or a client sending the same request again and "
                "again (a retry loop)."
            ),
            action=(
                "Read a few recent outputs (the clients' logs) for repetition, and look for a client "
                "retrying one request. Speculation is not the fault, it only makes such output cheap: a "
                "repetition penalty, a stop sequence or a lower max_tokens at the client ends the loop."
            ),
            value=value,
            limit=float(steps + 1),
            unit="tokens",
            since=since,
        )


def wasted_drafts(snap: Snapshot, limits: Health) -> Finding | None:
    spec = snap.speculation
    drafting, share, wasted = spec.drafting_s_per_min, spec.rejected_draft_share, spec.wasted_draft_s_per_min
    if drafting is None or share is None or wasted is None:
        return None
    if drafting < limits.wasted_draft_min_s or share < limits.wasted_draft_share_max:
        return None
    return Finding(
        code="wasted_drafts",
        severity="warning",
        title=f"{share:.0%} of drafted tokens rejected: about {wasted:.0f} s of decoding a minute spent on them",
        explanation=(
            f"Over the last minute the engine drafted for {drafting:.0f} s with requests running, and the "
            f"target rejected {share:.0%} of the tokens drafted for it. Every rejected draft cost a draft "
            f"pass and a place in the verify: shared over the positions each round verified, about "
            f"{wasted:.0f} s of that minute's decoding went to drafts that were thrown away (an estimate). "
            "Drafting this poorly costs more time than it saves."
        ),
        action=(
            "Stop drafting where it does not pay: a lower speculation threshold (1 stops it), fewer "
            "steps (agent control steps 1), or the autopilot, which measures it. A draft model that "
            "does not match the model shows here from the start: check which draft runs."
        ),
        value=round(100.0 * share, 1),
        limit=round(100.0 * limits.wasted_draft_share_max, 1),
        unit="%",
    )
