"""What the autopilot starts from, and why it does not move, in numbers (pure).

**The prior.** A finished bench on this engine (``agent.wire.bench_evidence``: the newest compare
with this launched profile) measured the crossover over minutes, at every level; the autopilot's own
estimate needs traffic at both sides of it. So while its own estimate of the crossover is missing it
starts from the bench's recommended threshold (within the operator's bounds) and says so; once it
measures a crossover of its own, that decides, as before.

**Holding.** Every decision that changes nothing says why, with the figures that decided it: no
estimate yet (how much traffic it has measured), a gain under ``min_gain`` or under twice its standard
error, the dwell since the last move, the change budget, the probe budget. The pilot keeps the words
on its state (the Overview shows them) and publishes ``autopilot.held`` when the reason changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.control.autopilot.policy import Crossover, Score, Setting
from agent.control.autopilot.settings import PROBE_WINDOW_S, PilotSettings
from agent.wire.bench_evidence import BenchEvidence


def own_crossover_missing(cross: Crossover | None) -> bool:
    return cross is None or (cross.value is None and cross.note is None)


def start_from(
    prior: BenchEvidence | None, settings: PilotSettings, current: Setting, own: Crossover | None
) -> Setting | None:
    """The setting the bench asks for while the autopilot's own crossover is not measured; None when
    there is no bench, its own estimate decides, or the bench's threshold is in force already."""
    if prior is None or not own_crossover_missing(own):
        return None
    target = Setting(settings.clamp(prior.threshold), current.steps)
    return None if target.threshold == current.threshold else target


def prior_words(prior: BenchEvidence) -> str:
    """ "bench run X recommended threshold 142 (118–170)", with its crossover where it gave one."""
    cross = f", crossover {prior.crossover:.0f}" if prior.crossover is not None else ""
    return f"{prior.words()}{cross}"


def start_why(current: Setting, target: Setting, prior: BenchEvidence) -> str:
    return (
        f"{current.words()} → {target.words()}: starts from {prior_words(prior)}; its own estimate of the "
        "crossover is not measured yet and decides once it is"
    )


def prior_estimate(prior: BenchEvidence) -> dict[str, object]:
    """The move's ``estimate``: the run it came from (the audit line and the event carry it)."""
    return {
        "crossover": prior.crossover,
        "crossover_low": prior.threshold_low,
        "crossover_high": prior.threshold_high,
        "prior_bench_id": prior.bench_id,
        "prior_threshold": prior.threshold,
    }


@dataclass(frozen=True)
class Held:
    """Why the pilot changed nothing at a decision: a short kind (the event's reason) and the words."""

    kind: str
    words: str


@dataclass(frozen=True)
class Decision:
    """What the pilot weighed at one decision, for ``held``."""

    current: Setting
    best: Score | None
    own: Crossover | None
    since_move_s: float
    moves_last_minute: int
    probe_share: float
    measured_s: float
    """Seconds of traffic in the batch histogram (recent, forgotten over minutes)."""
    prior: BenchEvidence | None


def held(d: Decision, s: PilotSettings) -> Held:
    """Why nothing moves, most decisive reason first, with its numbers."""
    keeps = f"keeps {d.current.words()}"
    if d.best is None:
        base = (
            f"{keeps} from {prior_words(d.prior)}"
            if d.prior is not None and own_crossover_missing(d.own)
            else keeps
        )
        return Held(
            "no_estimate",
            f"{base}: no setting to compare yet ({d.measured_s:.0f} s of recent traffic measured; a side "
            f"needs 3 s at a batch size before it counts; probing took {d.probe_share * 100:.0f} % of the last "
            f"{PROBE_WINDOW_S / 60:.0f} minutes, at most {s.probe_share * 100:g} %)",
        )
    b = d.best
    gain = f"{b.setting.words()} would gain {b.gain * 100:+.1f} % ± {b.sd * 100:.1f} %"
    if b.gain < s.min_gain:
        return Held("small_gain", f"{keeps}: {gain}, under the {s.min_gain * 100:g} % a move needs")
    if b.gain < 2 * b.sd:
        return Held("uncertain", f"{keeps}: {gain}, not yet twice its uncertainty")
    if d.since_move_s < s.dwell_s:
        return Held(
            "dwell",
            f"{keeps}: {gain}; {d.since_move_s:.0f} s since its last move, it waits {s.dwell_s:.0f} s",
        )
    if d.moves_last_minute + 1 > s.max_moves_per_minute:
        return Held(
            "budget",
            f"{keeps}: {gain}; {d.moves_last_minute} changes in the last minute, at most {s.max_moves_per_minute}",
        )
    return Held("other", f"{keeps}: {gain}")
