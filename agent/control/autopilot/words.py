"""The autopilot's events and audit lines in an operator's words: every move says what justified it."""

from __future__ import annotations

from agent.control.autopilot.estimator import context_tokens
from agent.control.autopilot.policy import Crossover, Score, Setting
from agent.control.autopilot.settings import PROBE_WINDOW_S, PilotSettings
from agent.profile.words import value_words


def context_words(ctx_bin: int) -> str:
    tokens = context_tokens(ctx_bin)
    if tokens is None:
        return "contexts of unknown length"
    shown = f"{tokens / 1024:.0f}k" if tokens >= 1024 else f"{tokens:.0f}"
    return f"~{shown}-token contexts"


def crossover_words(cross: Crossover | None) -> str:
    if cross is None:
        return "crossover not measured yet"
    if cross.note == "above":
        low = f" (measured up to a batch of {cross.low:.0f})" if cross.low is not None else ""
        return f"drafting wins at every batch measured{low}"
    if cross.note == "below":
        if cross.value is not None and cross.value <= 1.0:
            return "drafting cannot pay: the drafts are (nearly) never accepted"
        at = f" (from a batch of {cross.value:.0f})" if cross.value is not None else ""
        return f"drafting loses at every batch measured{at}"
    if cross.value is None:
        return "crossover not measured yet"
    span = ""
    if cross.low is not None and cross.high is not None:
        span = f", {cross.low:.0f}–{cross.high:.0f}"
    return f"crossover at a batch of {cross.value:.0f}{span} with {cross.steps} steps"


def gain_words(best: Score) -> str:
    return f"{best.gain * 100:+.1f} % (± {best.sd * 100:.1f} %) on the last minutes of traffic"


def move(current: Setting, best: Score, cross: Crossover | None, ctx: int) -> str:
    return (
        f"{current.words()} → {best.setting.words()}: {crossover_words(cross)} at {context_words(ctx)}; "
        f"estimated {gain_words(best)}"
    )


def track(current: Setting, target: Setting, cross: Crossover, ctx: int) -> str:
    if cross.note == "below" and cross.value is not None and cross.value <= 1.0:
        return f"{current.words()} → {target.words()}: {crossover_words(cross)}"
    return (
        f"{current.words()} → {target.words()}: keeps the threshold at the estimate ({crossover_words(cross)} "
        f"at {context_words(ctx)}); no recent traffic runs between the two"
    )


def arm_words(arm: int) -> str:
    return "without drafting" if arm == 0 else f"drafting {arm} steps"


def probe(arm: int, batch: int, seconds: float, ctx: int, share: float) -> str:
    return (
        f"probe: {seconds:g} s {arm_words(arm)} at a batch of {batch}, {context_words(ctx)}: that side is not "
        f"measured well enough here to compare ({share * 100:.0f} % of the last "
        f"{PROBE_WINDOW_S / 60:.0f} minutes spent probing)"
    )


def probe_end(arm: int, target: Setting) -> str:
    return f"probe {arm_words(arm)} ended; back to {target.words()}"


def enabled(settings: PilotSettings, operator: Setting) -> str:
    top = "no threshold" if settings.threshold_max is None else str(settings.threshold_max)
    return (
        f"autopilot on: it keeps the live threshold between {settings.threshold_min} and {top} and pins steps "
        f"among {value_words(list(settings.steps))} where it measures the most tokens/s, at most "
        f"{settings.max_moves_per_minute} changes a minute, probes of {settings.probe_s:g} s taking at most "
        f"{settings.probe_share * 100:g} % of the time; off returns to {operator.words()}"
    )


def disabled(operator: Setting) -> str:
    return f"autopilot off: the engine runs the operator's setting ({operator.words()})"


def restore(operator: Setting) -> str:
    return f"autopilot off: back to the operator's setting in one step ({operator.words()})"


def revert(why: str, operator: Setting) -> str:
    return f"autopilot holds: {why}; the engine runs the operator's setting ({operator.words()})"


def resumed() -> str:
    return "autopilot resumes: telemetry is fresh again; it measures anew"
