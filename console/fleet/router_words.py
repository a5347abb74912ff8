"""The Fleet screen's router panel in an operator's words: the router's figures for each worker beside
its host's agent's, where the two views disagree, and how the router's split sits against each host's
speculation threshold. Unknown is a dash; what is computed is ``console.fleet.routing``'s."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from agent.wire.router import RouterWorker
from console.fleet.routing import FRESH_S, RouterRow, SplitEntry
from console.fleet.state import FleetState
from console.widgets.findings import SEVERITY_GLYPH, SEVERITY_STYLE
from console.widgets.format import DASH, num

CIRCUIT_WORDS = {
    "closed": ("closed", "$ok"),
    "open": ("OPEN", "$bad-bold"),
    "half_open": ("half-open", "$warn-bold"),
}


def _pct(value: float | None) -> str:
    return num(value * 100 if value is not None else None, ".0f", "%")


def _pair(router: str, agent: str) -> str:
    return f"{router} / {agent}"


def _health(w: RouterWorker) -> Text:
    if w.healthy is None:
        return Text(DASH)
    return Text("healthy", style="$ok") if w.healthy else Text("UNHEALTHY", style="$bad-bold")


def _circuit(w: RouterWorker) -> Text:
    if w.circuit is None:
        return Text(DASH, style="dim")
    word, style = CIRCUIT_WORDS[w.circuit]
    return Text(word, style=style)


def _poll_age(w: RouterWorker, read_at: float | None) -> str:
    if w.load_polled_at is None or read_at is None:
        return DASH
    return f"{max(0.0, read_at - w.load_polled_at):.0f} s"


def _head(state: FleetState) -> Text:
    view = state.router
    assert view is not None
    head = Text(no_wrap=True, overflow="ellipsis")
    head.append("Router ", style="bold")
    head.append(f"{view.url or DASH}", style="dim")
    if state.router_via:
        head.append(f"  via {state.router_via}", style="dim")
    age = state.router_age_s()
    if age is not None:
        old = age > FRESH_S
        head.append(
            f"  read {age:.0f} s ago" + (" (old)" if old else ""), style="$warn-bold" if old else "dim"
        )
    return head


def _table(state: FleetState, rows: list[RouterRow], wide: bool) -> Table:
    read_at = state.router.read_at if state.router is not None else None
    table = Table(box=None, padding=(0, 1), show_edge=False, expand=False, header_style="bold")
    labels = [("worker", "left")] if wide else []
    labels += [("host", "left"), ("router", "left"), ("circuit", "left"), ("in flight", "right"),
               ("run", "right"), ("queue", "right"), ("KV", "right"), ("cache", "right")]  # fmt: skip
    labels += [("polled", "right")] if wide else []
    for label, justify in labels:
        table.add_column(label, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for r in rows:
        w, a = r.worker, r.agent
        host = Text(r.host, style="bold") if r.host else Text("not in this fleet", style="$warn")
        if r.host is None and not wide:
            host = Text(w.url.removeprefix("http://"), style="$warn")
        agent_run = num(a.running) if a is not None else DASH
        agent_queue = num(a.queued) if a is not None else DASH
        agent_kv = _pct(a.kv_used) if a is not None else DASH
        cells: list[Text | str] = [w.url.removeprefix("http://")] if wide else []
        cells += [
            host, _health(w), _circuit(w), num(w.in_flight),
            _pair(num(w.running), agent_run), _pair(num(w.queued), agent_queue),
            _pair(_pct(w.token_usage), agent_kv), _pct(w.cache_hit_rate),
        ]  # fmt: skip
        cells += [_poll_age(w, read_at)] if wide else []
        table.add_row(*cells)
    return table


def _split_words(entry: SplitEntry) -> str:
    if entry.routed is False:
        return "not routed"
    if not entry.configured:
        return "no drafter"
    if entry.threshold is None:
        return "threshold unknown"
    drafting = "drafting" if entry.drafting else "not drafting"
    return f"threshold {entry.threshold}: {drafting}"


def split_line(entries: list[SplitEntry]) -> Text:
    """e.g. "the router sends 140 running to gpu-a (threshold 128: not drafting), 30 to gpu-b (...)"."""
    text = Text()
    text.append("Split: ", style="bold")
    if not entries:
        text.append("no worker of the router is a host of this fleet", style="dim")
        return text
    text.append("the router sends ")
    for i, entry in enumerate(entries):
        if i:
            text.append(", ")
        running = "none" if entry.routed is False else num(entry.running)
        text.append(f"{running} running to {entry.host}" if i == 0 else f"{running} to {entry.host}")
        style = "$ok" if entry.drafting else ("dim" if entry.drafting is None else "$warn")
        text.append(f" ({_split_words(entry)})", style=style)
    return text


def findings_lines(state: FleetState) -> Text | None:
    findings = state.router_findings()
    if not findings:
        return None
    text = Text()
    for i, f in enumerate(findings):
        if i:
            text.append("\n")
        text.append(
            f"{SEVERITY_GLYPH.get(f.severity, '●')} {f.title}", style=SEVERITY_STYLE.get(f.severity, "")
        )
        text.append(f"\n  → {f.action}", style="dim")
    return text


def router_panel(state: FleetState, wide: bool) -> RenderableType:
    view = state.router
    if view is None:
        return Text("Router: no agent of this fleet reads one (agent serve --router-url)", style="dim")
    head = _head(state)
    if not view.reachable:
        head.append(f"  {view.error or 'not read'}", style="$bad")
        return head
    parts: list[RenderableType] = [head]
    findings = findings_lines(state)
    if findings is not None:
        parts.append(findings)
    rows = state.router_rows()
    parts.append(_table(state, rows, wide))
    parts.append(Text("run, queue, KV: the router's figure / the agent's", style="dim"))
    if view.metrics_error:
        parts.append(Text(f"circuit breakers not read: {view.metrics_error}", style="$warn"))
    elif view.metrics_url is None:
        parts.append(Text("circuit breakers: not read (agent serve --router-metrics-url)", style="dim"))
    parts.append(split_line(state.router_split()))
    return Group(*parts)
