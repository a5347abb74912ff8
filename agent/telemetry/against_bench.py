"""Whether the live threshold goes against what a finished bench on this engine measured.

At 3 a.m. the threshold was none, 250 requests ran and output fell, while the host's own bench had
recommended 142 and measured off ahead at c=250; the Overview said healthy. Two cases are a finding:

* **drafting above the crossover**: the batch drafts (no threshold, or one above it) at a running
  batch at or above the recommended threshold, and the bench measured off ahead at a level near it
  (within a factor of ``NEAR``);
* **not drafting well below it**: drafting is off (the threshold at or below the batch) at a running
  batch below ``WELL_BELOW`` of the recommendation (and below its interval), and the bench measured
  on ahead at a level near it.

Each names the run, the recommended threshold with its interval and the measured level, and offers
the action: the threshold the bench recommended. It is judged only while no benchmark runs (a run
switches the threshold itself) and while the autopilot is off (it steers, and starts from the same
bench): the caller passes no evidence then.
"""

from __future__ import annotations

from typing import Final

from agent.telemetry.moment import Moment
from agent.wire import Finding
from agent.wire.bench_evidence import MeasuredLevel
from agent.wire.snapshot import ActionOffer

NEAR: Final = 1.25
"""A measured level speaks for a running batch within this factor of it."""
WELL_BELOW: Final = 0.75
"""Not drafting is a finding only this far below the recommended threshold (a batch hovering at it
is what the threshold is for)."""


def _level(level: MeasuredLevel) -> str:
    return f"c={level.concurrency}: on {level.on:,.0f} tok/s, off {level.off:,.0f}"


def _first_up(text: str) -> str:
    return text[:1].upper() + text[1:]


def _near(level: MeasuredLevel | None, running: int) -> bool:
    return level is not None and running / NEAR <= level.concurrency <= running * NEAR


def threshold_against_bench(m: Moment) -> Finding | None:
    ev, spec, running = m.evidence, m.snap.speculation, m.snap.load.running
    if ev is None or not spec.threshold_available or spec.threshold is None or not running:
        return None
    live = spec.threshold
    drafting = live == 0 or running < live
    live_words = "none (speculate at every batch size)" if live == 0 else str(live)
    if drafting and ev.threshold > 0 and running >= ev.threshold:
        level = ev.nearest(running, off_ahead=True)
        if not _near(level, running) or level is None:
            return None
        title = f"Drafting at {running} running, above the crossover bench run {ev.bench_id} measured"
        why = (
            f"The live threshold is {live_words}, so the {running} running requests draft. {_first_up(ev.words())}"
            f", and measured decoding without drafting ahead at {_level(level)}: above the "
            "crossover a verify pass costs more than the drafts it keeps, so output is lower than it would be."
        )
    elif (
        not drafting
        and running < WELL_BELOW * (ev.threshold or float("inf"))
        and (ev.threshold_low is None or running < ev.threshold_low)
    ):
        level = ev.nearest(running, off_ahead=False)
        if not _near(level, running) or level is None:
            return None
        title = (
            f"Not drafting at {running} running, well below the crossover bench run {ev.bench_id} measured"
        )
        why = (
            f"The live threshold is {live}, so the {running} running requests decode without drafting. "
            f"{_first_up(ev.words())}, and measured drafting ahead at {_level(level)}."
        )
    else:
        return None
    return Finding(
        code="threshold_against_bench",
        severity="warning",
        title=title,
        explanation=why,
        action=f"Set the threshold to {ev.threshold_words()}, as bench run {ev.bench_id} recommends "
        f"(agent control threshold {ev.threshold_words()}); or turn the autopilot on, which starts from it.",
        value=float(running),
        limit=float(ev.threshold),
        unit="requests",
        offer=ActionOffer(kind="threshold", value=ev.threshold),
    )
