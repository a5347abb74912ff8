"""When a run stops adding windows at a level: a fixed count, or a bound on the intervals, or a budget.

Without a rule every arm gets ``repeats`` windows at every level (``schedule.plan``). With one
(``--until 4%``, ``--budget 20m``), every arm first gets ``min_windows`` windows in the same mirrored
passes over every level; then, pass after pass, each level whose arms' 95 % intervals are not all
within ``±until`` of their figures gets one more window of every arm (in the pass's order, so a
level's arms stay interleaved and mirrored), until one of three things ends it:

* **bound**: every arm's interval at the level is within ``±until`` (``interval.Estimate.half_width_rel``);
* **budget**: the run's time budget would be overrun by the level's next pass (its expected duration
  from what the level's steps took so far, ``schedule.DurationModel``); other levels, whose steps are
  shorter, may still get theirs;
* **max_windows**: the level has ``max_windows`` windows of every arm.

The result says per level which one it was, how many windows it took and the interval reached per
arm (``LevelStop.as_dict``), and the report prints it.

Why the budget is per run (from the run's start, its drain wait and probes included): a GPU is lent
for so long, and an operator knows that figure, not how it should be shared between levels and arms.
The minimum windows always run (without them there is no interval to judge); the passes after them
go only to the levels that still need them, which is where the budget should go.

Why every arm gets the extra window and not only the widest: the figure an operator decides by is a
ratio of arms at a level (off ÷ baseline, on ÷ off), and arms measured at different times of the
run carry different drift; windows in balanced, mirrored passes keep it out of the ratio.

Why the defaults (``DEFAULT_MIN_WINDOWS``, ``DEFAULT_MAX_WINDOWS``): measured on the real 8B target
(``bench/results/real-h200-2026-12-06``), one 8 s window at c=64 moves by about ±5 % (6 windows gave
±4.5 %), one of the default windows (2-3 s there) by 10-20 %. With the interval's t quantile and its
prior (``interval``), ±4 % takes about 8 windows of 8 s; at 10-20 % per window it would take 30 to
100 windows, which no lease holds: more windows do not fix windows that are too short. Hence at most
12 (the level stops there and says how long windows should be instead), and at least 4: fewer leave
the interval mostly to its prior (df = 2 + windows − 1), and two windows that agree by luck would end
a level early; 4 are two mirrored pairs, so a drift linear over the run cancels in every arm's mean.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agent.bench.aggregate import Cell, RunOutcome, arm_estimates
from agent.bench.interval import Estimate, half_width_with
from agent.bench.progress import RunTracker
from agent.bench.schedule import Step, plan
from agent.profile.words import given_words
from agent.wire.bench import DEFAULT_MAX_WINDOWS as DEFAULT_MAX_WINDOWS
from agent.wire.bench import DEFAULT_MIN_WINDOWS as DEFAULT_MIN_WINDOWS
from agent.wire.bench import StopRule as StopRule
from agent.wire.bench import percent as percent

# StopRule is a wire model (agent.wire.bench): a run's options carry it, results and the console read it.

Outcome = Literal["fixed", "bound", "budget", "max_windows"]
OUTCOME_WORDS: dict[str, str] = {
    "fixed": "the windows asked for (--repeats)",
    "bound": "every interval within the bound",
    "budget": "the time budget ran out",
    "max_windows": "the most windows a level may take",
}


class StopRuleError(ValueError):
    """A bad stopping option, naming the field and what is allowed (a ``BenchOptionError`` upstairs)."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field_name = field_name


def parse_until(text: str) -> float:
    """``4%``, ``4 %`` or ``0.04`` → 0.04."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise StopRuleError(
            "until",
            f"{given_words(text)} is not a share: give a percentage such as 4% or a fraction such as 0.04",
        ) from None
    return value  # its range is the request's (``BenchRequest.until``)


_DURATION = re.compile(
    r"^\s*(?:(\d+(?:\.\d+)?)\s*h)?\s*(?:(\d+(?:\.\d+)?)\s*m(?:in)?)?\s*(?:(\d+(?:\.\d+)?)\s*s?)?\s*$"
)


def parse_budget(text: str) -> float:
    """``1200``, ``1200s``, ``20m``, ``1h30m`` → seconds."""
    match = _DURATION.match(text)
    if not text.strip() or match is None or not any(match.groups()):
        raise StopRuleError(
            "budget",
            f"{given_words(text)} is not a duration: give seconds (1200, 1200s), minutes (20m) or hours (1h30m)",
        )
    hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds  # its range is the request's (``BenchRequest.budget_s``)


# ------------------------------------------------------------------ per level


@dataclass
class LevelStop:
    outcome: Outcome
    windows: int
    reached: dict[str, float | None]
    """Each arm's interval half-width over its figure when the level stopped (None: no interval)."""
    advice: str | None = None

    def widest(self) -> tuple[str, float | None]:
        known = [(w, arm) for arm, w in self.reached.items() if w is not None]
        if len(known) < len(self.reached):
            return next(arm for arm, w in self.reached.items() if w is None), None
        w, arm = max(known)
        return arm, w

    def words(self, rule: StopRule | None) -> str:
        arm, width = self.widest()
        widest = f"widest {arm} ±{percent(width)}" if width is not None else f"{arm} has no interval"
        n = f"{self.windows} window{'s' if self.windows != 1 else ''}"
        if self.outcome == "fixed":
            return f"{n} of every arm, as asked; {widest}"
        if self.outcome == "bound":
            assert rule is not None and rule.until is not None
            return f"within ±{percent(rule.until)} after {n}; {widest}"
        short = f" (bound ±{percent(rule.until)} not reached)" if rule is not None and rule.until else ""
        if self.outcome == "budget":
            head = f"budget spent after {n}{short}; {widest}"
        else:
            head = f"stopped at the cap of {n}{short}; {widest}"
        return head + (f". {self.advice}" if self.advice else "")

    def as_dict(self, rule: StopRule | None) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "outcome_words": OUTCOME_WORDS[self.outcome],
            "windows": self.windows,
            "bound": None if rule is None else rule.until,
            "reached": dict(self.reached),
            "words": self.words(rule),
        }


def _rel(est: Estimate | None) -> float | None:
    return None if est is None else est.half_width_rel


def windows_for(est: Estimate, until: float, cap: int = 100) -> int | None:
    """About how many windows of the same noise would bring ``est``'s interval within ±until
    (``interval.half_width_with``); None beyond ``cap`` or without an interval."""
    for windows in range(est.repeats, cap + 1):
        h = half_width_with(est, windows)
        if h is None:
            return None
        if math.sinh(h) <= until:
            return windows
    return None


def cap_advice(
    estimates: Mapping[str, Estimate], until: float | None, cap: int, window_s: float
) -> str | None:
    """What to change when a level stops at the cap: the windows its widest arm would need, and the
    window length that would make ``cap`` windows enough (a window's variance taken as falling as
    1/its length: about, since part of the noise is drift between windows)."""
    if until is None:
        return None
    worst: tuple[float, str, Estimate] | None = None
    for arm, est in estimates.items():
        rel = est.half_width_rel
        if rel is not None and rel > until and (worst is None or rel > worst[0]):
            worst = (rel, arm, est)
    if worst is None:
        return None
    _, arm, est = worst
    need = windows_for(est, until, cap=1000)
    if need is None:
        return f"{arm}'s windows scatter too much for ±{percent(until)}: make them longer (--min-window-s)"
    longer = window_s * need / cap
    return (
        f"at this noise {arm} needs about {need} windows for ±{percent(until)}, or about {cap} windows "
        f"of {longer:.0f} s (--min-window-s; these were {window_s:.1f} s)"
    )


# ------------------------------------------------------------------ the loop

StepRunner = Callable[[Step], Awaitable[RunOutcome]]
Outcomes = dict[Cell, list[RunOutcome]]


def first_steps(
    levels: Sequence[int], arms: Sequence[str], rule: StopRule | None, repeats: int
) -> list[Step]:
    """The passes every run makes: ``repeats`` without a rule, the rule's ``min_windows`` with one."""
    return plan(levels, arms, repeats if rule is None else rule.min_windows)


async def measure(
    levels: Sequence[int],
    arms: Sequence[str],
    rule: StopRule | None,
    steps: Sequence[Step],
    tracker: RunTracker,
    run_step: StepRunner,
    started: float,
    clock: Callable[[], float] = time.time,
    kept: Callable[[Outcomes, Mapping[int, LevelStop]], None] | None = None,
) -> tuple[Outcomes, dict[int, LevelStop]]:
    """Run ``steps`` (``first_steps``), then, with a rule, more passes over the levels that need them.

    ``started``: the run's start on ``clock`` (the budget counts from there); ``kept``: told the
    windows so far and the levels ended so far after each window (``agent.bench.partial``)."""
    outcomes: Outcomes = {}
    stops: dict[int, LevelStop] = {}

    async def run(step: Step) -> None:
        tracker.begin(step)
        outcomes.setdefault((step.arm, step.level_index), []).append(await run_step(step))
        if kept is not None:
            kept(outcomes, stops)

    for step in steps:
        await run(step)
    windows = {li: _windows(outcomes, arms, li) for li in range(len(levels))}
    if rule is None:
        figures, _ = arm_estimates(outcomes)
        return outcomes, {
            li: LevelStop("fixed", windows[li], {a: _rel(figures.get((a, li))) for a in arms})
            for li in range(len(levels))
        }
    passes = max((s.repeat for s in steps), default=-1) + 1
    index = len(steps)
    while True:
        figures, _ = arm_estimates(outcomes)
        reached = {li: {a: _rel(figures.get((a, li))) for a in arms} for li in range(len(levels))}
        for li in range(len(levels)):
            if li in stops:
                continue
            widths = reached[li]
            if rule.until is not None and all(w is not None and w <= rule.until for w in widths.values()):
                stops[li] = LevelStop("bound", windows[li], widths)
            elif windows[li] >= rule.max_windows:
                here = {a: figures[(a, li)] for a in arms if (a, li) in figures}
                window_s = _mean_window_s(outcomes, arms, li)
                stops[li] = LevelStop(
                    "max_windows",
                    windows[li],
                    widths,
                    cap_advice(here, rule.until, rule.max_windows, window_s),
                )
        open_levels = [li for li in range(len(levels)) if li not in stops]
        if not open_levels:
            return outcomes, stops
        forward = passes % 2 == 0
        order = open_levels if forward else list(reversed(open_levels))
        tracker.project(_projection(order, levels, arms, rule, figures, windows, index))
        for li in order:
            group = [
                Step(index + i, li, levels[li], windows[li], arm)
                for i, arm in enumerate(arms if forward else list(reversed(arms)))
            ]
            expected = sum(tracker.model.guess(s.concurrency) for s in group)
            if rule.budget_s is not None and clock() - started + expected > rule.budget_s:
                stops[li] = LevelStop("budget", windows[li], reached[li])
                continue
            tracker.add(group)
            for step in group:
                await run(step)
            index += len(group)
            windows[li] += 1
        passes += 1


def whole_test(
    options: Any, arms: Sequence[str], outcomes: Outcomes, stops: Mapping[int, LevelStop]
) -> Callable[[int], bool]:
    """Whether a level got every window the run meant for it: ``repeats`` of every arm without a
    rule (``options`` a ``BenchOptions``), its stop decided with one."""
    if options.stop is None:
        return lambda li: _windows(outcomes, arms, li) >= options.repeats
    return lambda li: li in stops


def _windows(outcomes: Outcomes, arms: Sequence[str], li: int) -> int:
    return min((len(outcomes.get((a, li), [])) for a in arms), default=0)


def _mean_window_s(outcomes: Outcomes, arms: Sequence[str], li: int) -> float:
    seconds = [float(o.result.get("window_s") or 0.0) for a in arms for o in outcomes.get((a, li), [])]
    return sum(seconds) / len(seconds) if seconds else 0.0


def _projection(
    order: Sequence[int],
    levels: Sequence[int],
    arms: Sequence[str],
    rule: StopRule,
    figures: Mapping[Cell, Estimate],
    windows: Mapping[int, int],
    index: int,
) -> list[Step]:
    """The steps the open levels are expected to take still (for the ETA only): per level, the windows
    its widest arm needs for the bound at the noise seen so far, within the cap."""
    projected: list[Step] = []
    for li in order:
        more = rule.max_windows - windows[li]
        if rule.until is not None:
            needs = [
                windows_for(figures[(a, li)], rule.until, rule.max_windows)
                for a in arms
                if (a, li) in figures
            ]
            known = [n for n in needs if n is not None]
            if len(known) == len(needs) and known:
                more = max(1, min(more, max(known) - windows[li]))
        for k in range(more):
            projected += [Step(index + len(projected), li, levels[li], windows[li] + k, a) for a in arms]
    return projected


def stopping_record(
    rule: StopRule | None, stops: Mapping[int, LevelStop], levels: Sequence[int]
) -> dict[str, Any]:
    """The result's ``stopping``: the rule and, per level, what ended it."""
    return {
        "rule": None
        if rule is None
        else {
            "until": rule.until,
            "budget_s": rule.budget_s,
            "min_windows": rule.min_windows,
            "max_windows": rule.max_windows,
            "words": rule.words(),
        },
        "levels": [
            {"concurrency": c, **stops[li].as_dict(rule)} for li, c in enumerate(levels) if li in stops
        ],
    }
