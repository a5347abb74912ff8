"""The line at the top of every screen: which host, which profile, is the link alive, is the view paused."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from console.model import ConsoleModel
from console.widgets.format import age, clock


def status_text(model: ConsoleModel, where: str, *, paused: bool, readonly: bool, unseen: int) -> Text:
    latest = model.latest
    text = Text()
    profile = latest.profile_name if latest and latest.profile_name else "?"
    if latest is not None and latest.production:
        text.append(" PRODUCTION ", style="bold white on red")
        text.append(" ")
    text.append(f"{profile}", style="bold")
    text.append(f"  {where}", style="dim")
    if latest is not None:
        text.append(f"  engine {latest.engine_kind or '?'} {latest.engine_state}")
        text.append(f"  @ {clock(latest.time)} UTC")
    link = model.link
    if link.state == "connected":
        text.append("  ● live", style="green")
    elif link.state in ("connecting", "reconnecting"):
        label = "connecting" if link.state == "connecting" else "reconnecting"
        retry = f", retry in {link.retry_in_s:.0f}s" if link.retry_in_s is not None else ""
        text.append(
            f"  ◌ {label} (attempt {link.attempt}{retry}); data {age(model.data_age_s())}",
            style="bold yellow",
        )
        if link.message:
            text.append(f" — {link.message}", style="yellow")
    elif link.state == "ended":
        text.append(f"  ■ {link.message}", style="yellow")
    else:
        text.append(f"  ✖ {link.message}", style="bold red")
    if readonly:
        text.append("  read-only", style="cyan")
    if paused:
        text.append(f"  ❚❚ PAUSED ({unseen} new)", style="bold magenta")
    return text


class StatusLine(Static):
    """Re-rendered on the paint cadence; carries the ``-production`` class for the accent colour."""

    def show(self, model: ConsoleModel, where: str, *, paused: bool, readonly: bool, unseen: int) -> None:
        latest = model.latest
        self.set_class(bool(latest and latest.production), "-production")
        self.set_class(model.stale, "-stale")
        self.update(status_text(model, where, paused=paused, readonly=readonly, unseen=unseen))
