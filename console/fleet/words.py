"""The Fleet screen's cells and lines in an operator's words: states as words, unknown as a dash,
a host's values greyed while its link is down (they are what it was last heard doing)."""

from __future__ import annotations

from rich.text import Text

from console.fleet.model import SORT_WORDS, FleetRow, FleetTotal
from console.fleet.state import FleetState
from console.widgets.action_words import label_of
from console.widgets.findings import SEVERITY_GLYPH, SEVERITY_STYLE
from console.widgets.format import DASH, num

LINK_WORDS = {
    "connected": ("● live", "$ok"),
    "connecting": ("◌ connecting", "$warn"),
    "reconnecting": ("◌ retry", "$warn-bold"),
    "failed": ("✖ down", "$bad-bold"),
    "ended": ("■ ended", "$warn"),
}
OUTCOME_STYLE = {
    "applied": "$ok",
    "applying": "$warn",
    "noop": "dim",
    "cancelled": "$warn",
    "rejected": "$bad",
    "failed": "$bad-bold",
    "unreachable": "$bad-bold",
    "lost": "$bad-bold",
}
OUTCOME_WORDS = {
    "applied": "applied",
    "applying": "applying",
    "noop": "nothing to do",
    "cancelled": "cancelled",
    "rejected": "refused",
    "failed": "failed",
    "unreachable": "not reached",
    "lost": "link lost while applying",
}


RIGHT = frozenset({"tok_s", "running", "queued", "threshold", "kv"})
"""Columns of numbers, right-aligned."""


def columns(wide: bool) -> list[tuple[str, str]]:
    state = [("link", "link"), ("engine", "engine")] if wide else [("state", "state")]
    accept = [("accept", "accept")] if wide else []
    return [
        ("pick", " "),
        ("host", "host"),
        *state,
        ("tok_s", "tok/s"),
        ("running", "run"),
        ("queued", "queue"),
        ("spec", "spec"),
        ("threshold", "thr"),
        *accept,
        ("kv", "KV"),
        ("worst", "worst finding"),
    ]


def _spec(row: FleetRow) -> str:
    if row.speculating is None:
        return DASH
    if not row.speculating:
        return "off"
    steps = num(row.steps)
    return f"on {steps}" + (" pin" if row.pinned_steps is not None and row.pinned_steps >= 0 else "")


def _worst(row: FleetRow) -> Text:
    if row.worst is None:
        return Text("none" if row.engine is not None else DASH, style="dim")
    f = row.worst
    more = f" +{row.findings - 1}" if row.findings > 1 else ""
    return Text(
        f"{SEVERITY_GLYPH.get(f.severity, '●')} {f.title}{more}", style=SEVERITY_STYLE.get(f.severity, "")
    )


def _link(row: FleetRow) -> Text:
    word, style = LINK_WORDS.get(row.link, (row.link, ""))
    return Text(word, style=style)


def _state(row: FleetRow) -> Text:
    """One column for both when narrow: the engine's state while the link is up, else the link's."""
    if row.link == "connected" and row.engine is not None:
        return Text(f"● {row.engine}", style="$ok" if row.engine == "ready" else "$warn")
    return _link(row)


def cells(row: FleetRow, state: FleetState, wide: bool) -> list[Text]:
    dim = "dim" if row.stale else ""
    engine = (row.engine or DASH) if not row.stale else (f"was {row.engine}" if row.engine else DASH)
    link = [_link(row), Text(engine, style=dim)] if wide else [_state(row)]
    accept = [Text(num(row.accept_length, ".2f"), style=dim)] if wide else []
    kv = num(row.kv_used * 100 if row.kv_used is not None else None, ".0f", "%")
    return [
        Text("✓" if row.name in state.picked else " ", style="$info"),
        Text(row.name, style="bold"),
        *link,
        Text(num(row.output_tok_s), style=dim, justify="right"),
        Text(num(row.running), style=dim, justify="right"),
        Text(num(row.queued), style=dim, justify="right"),
        Text(_spec(row), style=dim),
        Text(num(row.threshold), style=dim, justify="right"),
        *accept,
        Text(kv, style=dim, justify="right"),
        _worst(row) if not row.stale else Text(_worst(row).plain, style="dim"),
    ]


def fit(table: list[list[Text]], labels: list[str], width: int) -> None:
    """Cut the last column's cells (the worst finding, free text) with an ellipsis so that the row
    fits ``width``: a table sizes a column to its widest cell and would cut the row instead."""
    if not table:
        return
    gap = 2  # a column's padding
    used = sum(max(len(label), *(c.cell_len for c in (row[i] for row in table))) + gap
               for i, label in enumerate(labels[:-1]))  # fmt: skip
    room = max(len(labels[-1]), width - used - gap)
    for row in table:
        row[-1].truncate(room, overflow="ellipsis")


def title(state: FleetState, rows: list[FleetRow], *, readonly: bool) -> Text:
    live = sum(1 for r in rows if r.link == "connected")
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("FLEET", style="bold")
    text.append(f"  {len(rows)} hosts, {live} live", style="" if live == len(rows) else "$warn-bold")
    arrow = "↓" if state.descending else "↑"
    text.append(f"  sorted by {SORT_WORDS[state.sort]} {arrow}", style="dim")
    if state.picked:
        text.append(f"  {len(state.picked)} picked", style="$info")
    if readonly:
        text.append("  read-only", style="$info")
    return text


def total_line(total: FleetTotal) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("total ", style="bold")
    if total.reporting == 0:
        text.append("no host reporting", style="dim")
        return text
    text.append(f"{num(total.output_tok_s)} tok/s, {num(total.running)} running, {num(total.queued)} queued")
    text.append(f"; {total.speculating} of {total.reporting} speculating")
    if total.reporting < total.hosts:
        text.append(f"  ({total.reporting} of {total.hosts} hosts)", style="$warn")
    return text


def change_lines(state: FleetState) -> Text:
    change = state.change
    if change is None:
        return Text(
            "enter opens a host, F comes back; c changes threshold, steps or profile on the picked "
            "hosts (space picks one, a all)",
            style="dim",
        )
    text = Text()
    text.append(f"Change {change.change_id}: {label_of(change.kind, change.value)}", style="bold")
    if state.change_note:
        text.append(f"  {state.change_note}", style="$warn")
    for outcome in change.outcomes:
        text.append(f"\n  {outcome.host}: ")
        text.append(OUTCOME_WORDS[outcome.outcome], style=OUTCOME_STYLE[outcome.outcome])
        text.append(f" — {outcome.message}", style="dim")
    return text
