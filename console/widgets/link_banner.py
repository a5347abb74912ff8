"""The link's trouble in full: what failed, why, and what fixes it, wrapped over as many lines as it
takes. Shown under the status line only while the console is not connected."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from console.model import LinkStatus
from console.widgets.format import duration


def banner_text(link: LinkStatus) -> Text:
    if link.state == "reconnecting":
        retry = f"; next try in {duration(link.retry_in_s)}" if link.retry_in_s is not None else ""
        head = Text(f"Reconnecting (attempt {link.attempt}{retry}). ", style="$warn-bold")
    elif link.state == "connecting":
        head = Text("Connecting… ", style="$warn-bold")
    else:
        head = Text("Cannot connect; not retrying. ", style="$bad-bold")
    head.append(link.message or "", style="")
    return head


class LinkBanner(Static):
    """Hidden while connected, before the first problem and at the end of a replay (the status line
    says so), so it costs no space on a good day."""

    def show(self, link: LinkStatus) -> None:
        visible = link.state in ("connecting", "reconnecting", "failed") and bool(link.message)
        self.display = visible
        if visible:
            self.update(banner_text(link))
