"""The line at the top of every screen: which host and profile, the engine, the link, health, pause.

What matters at 3 a.m. is on the right and never cut (engine state, link, health, pause); where the
console is connected to is on the left and gives way with an ellipsis when the terminal is narrow.
A link problem's whole cause and fix are in the banner below (``console.widgets.link_banner``).
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from console.model import ConsoleModel
from console.widgets.format import age, clock

_HEALTH = {
    "critical": ("✖", "$badge-bad"),
    "warning": ("▲", "$badge-warn"),
    "info": ("●", "$badge-info"),
}


def health_chip(model: ConsoleModel) -> Text:
    """Healthy only when the link is up and the engine's readings are in: a console that is
    reconnecting, or has no readings yet, knows nothing about health and says so."""
    items = model.health.items
    worst = model.health.worst
    word = model.health_word()
    if model.latest is None and word != "unknown_link":
        return Text("")
    if word == "unknown_link":
        return Text("? health unknown", style="dim")
    if word == "unknown_data" and worst is None:
        return Text("? no readings yet", style="dim")
    if worst is None:
        return Text("✓ healthy", style="$ok")
    glyph, style = _HEALTH.get(worst, ("●", "bold"))
    noun = "finding" if len(items) == 1 else "findings"
    return Text(f" {glyph} {len(items)} {noun} ", style=style)


def link_chip(model: ConsoleModel) -> Text:
    link = model.link
    if link.state == "connected":
        return Text("● live", style="$ok")
    if link.state in ("connecting", "reconnecting"):
        retry = f", retry in {link.retry_in_s:.0f}s" if link.retry_in_s is not None else ""
        return Text(
            f"◌ {link.state} (attempt {link.attempt}{retry}); data {age(model.data_age_s())}",
            style="$warn-bold",
        )
    if link.state == "ended":
        return Text(f"■ {link.message or 'ended'}", style="$warn")
    return Text("✖ not connected", style="$bad-bold")


def status_left(model: ConsoleModel, where: str, host: str | None = None) -> Text:
    """Where: the fleet's host name (first, so it is never cut), production or not, the profile,
    the snapshot's time, the link."""
    latest = model.latest
    left = Text(no_wrap=True, overflow="ellipsis")
    if host is not None:
        left.append(f" {host} ", style="reverse bold")
        left.append(" ")
    if latest is not None and latest.production:
        left.append(" PRODUCTION ", style="$badge-bad")
        left.append(" ")
    left.append(latest.profile_name if latest and latest.profile_name else "?", style="bold")
    if latest is not None:  # the time before the place: the socket path is what gives way
        left.append(f"  {clock(latest.time)} UTC", style="dim")
    left.append(f"  {where}", style="dim")
    return left


def status_right(model: ConsoleModel, *, paused: bool, readonly: bool, unseen: int) -> Text:
    """What state: the engine, the link, health, read-only, paused; never cut."""
    latest = model.latest
    right = Text(no_wrap=True)
    if latest is not None and model.stale:
        # The last state the agent reported, not a live one: "ready" must not read as now.
        right.append(f"engine was {latest.engine_state} {age(model.data_age_s())}  ", style="dim")
    elif latest is not None:
        right.append(f"engine {latest.engine_kind or '?'} {latest.engine_state}  ")
    right.append_text(link_chip(model))
    chip = health_chip(model)
    if chip.plain:
        right.append("  ")
        right.append_text(chip)
    if readonly:
        right.append("  read-only", style="$info")
    if paused:
        right.append(f"  ❚❚ PAUSED ({unseen} new)", style="$note-bold")
    return right


def status_text(
    model: ConsoleModel, where: str, *, paused: bool, readonly: bool, unseen: int, host: str | None = None
) -> Table:
    grid = Table.grid(expand=True, padding=(0, 1))  # a space between where and what, even when cut
    grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
    grid.add_column(no_wrap=True, justify="right")
    grid.add_row(
        status_left(model, where, host), status_right(model, paused=paused, readonly=readonly, unseen=unseen)
    )
    return grid


class StatusLine(Static):
    """Re-rendered on the paint cadence; carries the ``-production`` class for the accent colour."""

    def show(
        self,
        model: ConsoleModel,
        where: str,
        *,
        paused: bool,
        readonly: bool,
        unseen: int,
        host: str | None = None,
    ) -> None:
        latest = model.latest
        self.set_class(bool(latest and latest.production), "-production")
        self.set_class(model.stale, "-stale")
        self.update(status_text(model, where, paused=paused, readonly=readonly, unseen=unseen, host=host))
