"""A log pane whose lines wrap to the width it has, and wrap again when that width changes.

Textual's ``RichLog`` wraps a line once, as it is written, to at least ``min_width`` (78 columns by
default): at 80 columns, inside a border and beside a scrollbar, the ends of the engine log's long
lines were cut off, and the lines written before a resize kept the old width, so the events pane
dropped words after the terminal shrank. This one has no minimum, keeps what it was given (as many
entries as lines it keeps), and writes it again at the new width after a resize; its scrollbar
gutter is always reserved, so a scrollbar appearing never hides a line's end.
"""

from __future__ import annotations

from collections import deque
from typing import Self

from rich.console import RenderableType
from textual.events import Resize
from textual.widgets import RichLog


class WrappingLog(RichLog):
    DEFAULT_CSS = """
    WrappingLog { scrollbar-gutter: stable; }
    """

    def __init__(self, *, max_lines: int, auto_scroll: bool = True, id: str | None = None) -> None:
        super().__init__(max_lines=max_lines, wrap=True, min_width=1, auto_scroll=auto_scroll, id=id)
        self._written: deque[RenderableType | object] = deque(maxlen=max_lines)
        self._wrapped_at = 0
        """The content width the lines on screen were wrapped to (0: not yet known)."""

    def write(
        self,
        content: RenderableType | object,
        width: int | None = None,
        expand: bool = False,
        shrink: bool = True,
        scroll_end: bool | None = None,
        animate: bool = False,
    ) -> Self:
        self._written.append(content)
        return super().write(content, width, expand, shrink, scroll_end, animate)

    def clear(self) -> Self:
        self._written.clear()
        return super().clear()

    def on_resize(self, event: Resize) -> None:
        """After the size is known (RichLog's own handler writes what waited for it), a new width
        writes every kept line again, wrapped to it."""
        self.call_after_refresh(self._rewrap)

    def _rewrap(self) -> None:
        width = self.scrollable_content_region.width
        if width <= 0 or width == self._wrapped_at:
            return
        first = self._wrapped_at == 0
        self._wrapped_at = width
        if first or not self._written:
            return
        at_end = self.is_vertical_scroll_end
        kept = list(self._written)
        super().clear()
        for content in kept:
            super().write(content, scroll_end=False)
        if at_end:
            self.scroll_end(animate=False)
