"""The Bench screen's words and pictures: a run's progress, the start's confirm, a result's table,
recommendation and chart, and what the screen says once a run ended without one. Pure functions of
the wire's results (``console.model.bench_result``) and the stream's runs (``console.model.bench``):
the screen (``console.screens.bench``) decides when to show them."""

from __future__ import annotations

import math
import re

from pydantic import ValidationError
from rich.table import Table
from rich.text import Text

from agent.wire.api import BenchPlan
from agent.wire.bench import StopRule
from agent.wire.bench_request import BenchRequest, field_words
from console.model.bench import BenchRun
from console.model.bench_result import ArmResult, BenchResult
from console.widgets.chart import ChartData, Rule, Series
from console.widgets.format import clock, duration, num
from console.widgets.ticks import fmt_count, log2_ticks

ARM_STYLE = {
    "sweep": ("$series-1", "●"),
    "on": ("$series-2", "●"),
    "off": ("$series-3", "■"),
    "adaptive": ("$series-1", "×"),
    "baseline": ("$series-5", "+"),
}
"""Each arm its colour and its own point glyph: where two lines overlap, both stay visible."""

DRAW_ORDER = ("sweep", "adaptive", "baseline", "off", "on")

MODE_WORDS = {
    "compare": "compare: at each level speculation on, off and adaptive; each repeat a pass over the "
    "levels, the next its mirror",
    "sweep": "sweep: each level with the server as it runs",
}


def figure_cell(arm: ArmResult) -> Text:
    """``14,246 ±3.6%``: the figure and its interval's half-width (a figure alone for older runs)."""
    text = Text(num(arm.tok_s))
    rel = arm.half_width_rel
    if rel is not None:
        text.append(f" ±{rel * 100:.1f}%", style="dim")
    if arm.counts_differ:
        text.append(" !", style="$warn-bold")
    return text


def result_title(result: BenchResult) -> str:
    when = f", finished {clock(result.finished_at)} UTC" if result.finished_at else ""
    return f"Run {result.bench_id} ({result.mode}{when})"


def result_table(result: BenchResult) -> Table:
    cut = f" ({result.partial})" if result.partial else ""
    table = Table(
        title=f"{result_title(result)}: output tok/s{cut}",
        expand=False,
        title_justify="left",
        caption_justify="left",
    )
    table.add_column("asked", justify="right")
    table.add_column("ran", justify="right")
    for arm in result.arms:
        table.add_column(arm, justify="right", style=ARM_STYLE.get(arm, ("", ""))[0])
    if result.stopped:
        table.add_column("stopped", justify="left")
    for level in result.levels:
        reached = Text(num(level.reached, ".0f"), style="$warn" if level.short else "")
        cells: list[Text | str] = [figure_cell(level.arms[a]) if a in level.arms else "" for a in result.arms]
        if result.stopped:
            stop = level.stopped
            cells.append(Text(stop.cell, style="" if stop.outcome == "bound" else "$warn") if stop else "")
        table.add_row(str(level.asked), reached, *cells)
    if result.has_intervals:
        repeats = result.repeats
        if result.stopped:
            table.caption = "mean of the level's steady-state windows ± half its 95 % interval; "
        else:
            table.caption = (
                f"mean of {repeats} steady-state windows ± half its 95 % interval; " if repeats else ""
            )
        table.caption += "ran: running requests held in the window"
    else:
        table.caption = "ran: the engine's mean running requests"
    if any(level.short for level in result.levels):
        table.caption += "; yellow: fewer than asked"
    if any(arm.counts_differ for level in result.levels for arm in level.arms.values()):
        table.caption += "; !: the engine counted 2 % more or less than we received"
    if result.stopped:
        table.caption += f"\nwindows were added at a level {result.rule or 'under a stopping rule'}"
        table.caption += "".join(
            f"\n  c={level.asked}: {level.stopped.words}"
            for level in result.levels
            if level.stopped is not None
        )
    table.caption += "".join(f"\n{label}: {words}" for label, words in result.where)
    return table


def recommendation_text(result: BenchResult) -> Text:
    threshold = result.recommended_threshold
    if result.state != "finished" and result.partial:
        return Text(
            f"{result_title(result)} {result.state}: {result.error or 'no reason given'}. {result.partial}: "
            "the table holds the windows it completed; a partial run recommends no threshold.",
            style="$warn",
        )
    if result.state != "finished":
        return Text(
            f"{result_title(result)} {result.state}: {result.error or 'no reason given'}", style="$bad"
        )
    if threshold is None:
        return Text(f"No recommendation. {result.reason}", style="$warn")
    words = "speculate at every batch size" if threshold == 0 else f"stop speculating at {threshold} running"
    return Text.assemble(
        ("Recommended threshold ", "bold"), (str(threshold), "$ok-bold"), f" ({words}). {result.reason}"
    )


def result_chart(result: BenchResult) -> ChartData:
    """tok/s against concurrency on a log axis (1–16 is not squashed against 250)."""
    series = []
    # "on" is drawn last, over "adaptive" (which often equals it): both stay visible, each with its glyph.
    for arm in sorted(result.arms, key=lambda a: DRAW_ORDER.index(a) if a in DRAW_ORDER else -1):
        color, glyph = ARM_STYLE.get(arm, ("$muted", "·"))
        pts = [(math.log2(lv.asked), t, lv.arms[arm].interval) for lv in result.levels if lv.asked > 0
               and arm in lv.arms and (t := lv.arms[arm].tok_s) is not None]  # fmt: skip
        if pts:
            intervals = tuple(p[2] for p in pts) if any(p[2] is not None for p in pts) else ()
            series.append(
                Series(
                    arm,
                    tuple(p[0] for p in pts),
                    tuple(p[1] for p in pts),
                    color,
                    points=glyph,
                    intervals=intervals,
                )
            )
    asked = [lv.asked for lv in result.levels if lv.asked > 0] or [1]
    threshold = result.recommended_threshold
    vline = (
        Rule(math.log2(threshold), f"recommended threshold {threshold}", "$rule")
        if threshold and threshold > 0
        else None
    )
    return ChartData(
        series=tuple(series),
        y_format=fmt_count,
        x_range=(math.log2(min(asked)), math.log2(max(asked))),
        x_ticks=tuple(log2_ticks(asked)),
        vline=vline,
    )


STATE_STYLE = {"finished": "$ok", "cancelled": "$warn", "failed": "$bad"}
EXTERNAL = "agent bench straight at the engine"


def progress_text(run: BenchRun) -> Text:
    text = Text()
    if run.state != "running":
        style = STATE_STYLE.get(run.state, "$bad")
        text.append(f"Run {run.bench_id} {run.state} at {clock(run.updated_at)} UTC", style=style)
        if run.error:
            text.append(f": {run.error}", style=style)
        return text
    text.append(f"Run {run.bench_id} running", style="bold")
    if run.external:
        text.append(
            f" ({EXTERNAL}: the agent hears only its start and end; Ctrl-C in that terminal stops it)"
        )
        return text
    if run.phase == "waiting":
        text.append(" · ")
        text.append(run.phase_words or "waiting for the engine to drain", style="$warn")
        return text
    if run.phase == "probing":
        text.append(f" · {run.phase_words or 'timing a first request and batch'}")
        return text
    if run.arm is not None:
        text.append(f" · {run.arm} arm")
    if run.concurrency is not None:
        text.append(f" · {run.concurrency} concurrent")
    if run.level_index is not None and run.levels:
        text.append(f" · level {run.level_index + 1} of {run.levels}")
    if run.repeat is not None and run.repeats and run.repeats > 1:
        text.append(f" · repeat {run.repeat + 1} of {run.repeats}")
    if run.completed is not None and run.requests:
        text.append(f" · {run.completed}/{run.requests} requests")
    eta = run.eta_s
    text.append(f" · about {duration(eta)} left" if eta is not None else " · ETA after the first requests")
    return text


def duration_text(plan: BenchPlan | str) -> Text:
    """The plan's expected duration and where it comes from (or why there is none)."""
    if isinstance(plan, str):
        return Text(plan, style="$warn")
    text = Text.assemble((f"about {duration(plan.expected_s)}", "bold"), f" ({plan.basis})")
    if plan.at_most_s is not None:
        text = Text.assemble(
            (
                f"about {duration(plan.expected_s)} for the first windows, {duration(plan.at_most_s)} at most",
                "bold",
            ),
            f" ({plan.basis})",
        )
    if plan.drain_wait_s and plan.busy_now:
        text.append(
            f"; first it waits up to {duration(plan.drain_wait_s)} for the {plan.busy_now} requests "
            "on the engine now to finish",
            style="$warn",
        )
    return text


def rule_words(request: BenchRequest) -> str:
    """The stopping rule of a start, in the confirm's words: the rule's own (``StopRule.words``, as
    the result's table says it) after the first windows, which the agent's plan below counts."""
    rule = request.options.stop
    said = rule.words() if rule is not None else "as asked"
    return f"the first windows of every arm at every level, then more at a level {said}"


def confirm_body(
    request: BenchRequest, profile: str, where: str, plan: BenchPlan | str | None = None
) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="dim")
    table.add_column()
    levels = request.concurrency
    options = request.options
    table.add_row("mode", MODE_WORDS.get(request.mode, request.mode))
    table.add_row("levels", f"{', '.join(map(str, levels))} concurrent streams (up to {max(levels)} at once)")
    per_window = request.min_requests
    table.add_row(
        "measured",
        (f"windows of at least {per_window} completed requests" if per_window
         else "windows of two requests per stream (at least 8)")
        + ", at least 1 s, at the asked concurrency (the ramp is not measured)",
    )  # fmt: skip
    if request.until is not None or request.budget_s is not None:
        table.add_row("windows", rule_words(request))
    else:
        table.add_row("repeats", f"{options.repeats} windows per arm and level, for each figure's interval")
    if request.arms:
        table.add_row("arms", ", ".join(request.arms) + " only")
    table.add_row("tokens", f"{options.input_len} in, {options.output_len} out per request")
    table.add_row("against", Text.assemble((profile, "bold"), f" ({where}), beside the traffic it serves"))
    if plan is not None:
        table.add_row("duration", duration_text(plan))
    return table


_BUDGET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h)?\s*$")
_UNIT_S = {None: 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def request_or_words(fields: dict[str, object]) -> BenchRequest | str:
    """The request the Bench screen's fields make, or the first rule they break in the agent's own
    words (``BenchRequest`` is the agent's body: the same bounds, checked before anything is sent)."""
    try:
        return BenchRequest.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        return field_words(exc.errors())


def stop_fields(until: str, budget: str) -> StopRule | str | None:
    """The stopping rule from what the operator typed (``4%`` or ``0.04``; ``1200``, ``20m`` or
    ``1h``), None when both are empty, or what is wrong in words. The agent checks the ranges and
    names a field it refuses."""
    fields: dict[str, float] = {}
    text = until.strip()
    if text:
        try:
            fields["until"] = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            return f"until: {text} is not a share; type a percentage such as 4%"
    text = budget.strip()
    if text:
        match = _BUDGET.match(text)
        if match is None:
            return f"budget: {text} is not a duration; type seconds (1200) or minutes (20m) or hours (1h)"
        fields["budget_s"] = float(match.group(1)) * _UNIT_S[match.group(2)]
    return StopRule.model_validate(fields) if fields else None


def ended_words(run: BenchRun, earlier: str | None = None) -> Text:
    """What the screen says, once, when a run ended without a result (cancelled, failed): how and
    why, and the newest finished run ``earlier`` when the list has one (nothing is pointed to that
    is not there)."""
    how = run.error or run.message or "no reason given"
    text = Text(
        f"Run {run.bench_id} {run.state} at {clock(run.updated_at)} UTC: {how}. It has no table.",
        style=STATE_STYLE.get(run.state, "$bad"),
    )
    if earlier is not None:
        text.append(f" The newest finished run, {earlier}, is in the list below.", style="dim")
    return text
