"""The footer every screen shows: Textual's, without the binding that outlives its keys."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.events import Resize
from textual.widgets import Footer

WIDE_COLUMNS = 150
"""From this width each screen key is shown with its name; below it they share one group entry."""


class ConsoleFooter(Footer):
    """Textual 8.2.8's ``Footer.compose`` binds every ``FooterKey`` it makes to the footer's
    ``compact`` reactive, and a watcher is only forgotten when that reactive changes, which ours never
    does. Every screen switch recomposes the footer, so each switch left ~20 dead keys alive for good
    (the soak's growing console). Dropping the watchers of keys that are gone, before composing new
    ones, keeps the number of live widgets flat; the rest is Textual's own footer."""

    def compose(self) -> ComposeResult:
        watchers = getattr(self, "__watchers", {}).get("compact")
        if watchers:
            watchers[:] = [(node, callback) for node, callback in watchers if node.is_attached]
        yield from super().compose()

    def on_resize(self, event: Resize) -> None:
        combine = event.size.width < WIDE_COLUMNS
        if combine != self.combine_groups:
            self.combine_groups = combine
            self.call_after_refresh(self.recompose)
