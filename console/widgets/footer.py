"""The footer every screen shows: Textual's, without the binding that outlives its keys, and with the
screen keys named one by one when the terminal is wide enough."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.events import Resize
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

WIDE_COLUMNS = 150
"""From this width each screen key is shown with its name; below it they share one group entry
("ohkgcbpla screens"), so pause, help and quit are never cut at 100 columns."""


class ConsoleFooter(Footer):
    """Textual 8.2.8's ``Footer.compose`` binds every ``FooterKey`` it makes to the footer's
    ``compact`` reactive, and a watcher is only forgotten when that reactive changes, which ours never
    does. Every screen switch recomposes the footer, so each switch left ~20 dead keys alive for good
    (the soak's growing console). Dropping the watchers of keys that are gone, before composing new
    ones, keeps the number of live widgets flat.

    Textual always draws a binding group as one entry (its ``combine_groups`` is not read by
    ``compose``); on a wide terminal this footer lists each key of the group with its own name."""

    def __init__(self, *, compact: bool = False) -> None:
        super().__init__(compact=compact)
        self.wide = False

    def compose(self) -> ComposeResult:
        watchers = getattr(self, "__watchers", {}).get("compact")
        if watchers:
            watchers[:] = [(node, callback) for node, callback in watchers if node.is_attached]
        if not self.wide:
            yield from super().compose()
            return
        if not self._bindings_ready:
            return
        shown: dict[str, FooterKey] = {}
        for _, binding, enabled, tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in shown or binding.key == self.app.COMMAND_PALETTE_BINDING:
                continue
            shown[binding.action] = FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                disabled=not enabled,
                tooltip=tooltip,
            )
        self.styles.grid_size_columns = len(shown)
        for key in shown.values():
            yield key.data_bind(compact=Footer.compact)
        palette = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE and palette is not None:
            _, binding, enabled, _ = palette
            yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description,
                            binding.action, classes="-command-palette", disabled=not enabled)  # fmt: skip

    def on_resize(self, event: Resize) -> None:
        wide = event.size.width >= WIDE_COLUMNS
        if wide != self.wide:
            self.wide = wide
            self.call_after_refresh(self.recompose)
