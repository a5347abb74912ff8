"""Lines of figures that break only between figures, never inside one.

Rich wraps a Text at any space, so a narrow screen read ``over 29`` at a line's end and ``s`` at the
next line's start, or ``threshold 130 · 65`` and then ``running``: a value cut from its unit or its
label. A :class:`Flow` holds each line as groups ("ITL p50 72 ms p99 384 ms over 29 s", "threshold
130 · 65 running") and lays them out at the width it is drawn at (so a resize lays it out again):
a group that does not fit after the others starts the next line whole. Only a group wider than the
whole width wraps inside itself (a sentence, such as a reason, may).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.text import Text

SEPARATOR = "   "
"""Between two groups on one line, unless a line says otherwise."""


class Flow:
    """Lines of groups (Text), laid out at the width the widget gives them (module docstring)."""

    def __init__(self, *groups: Text | str, separator: str = SEPARATOR) -> None:
        self.lines: list[tuple[str, list[Text]]] = []
        """Each line's separator and its groups."""
        if groups:
            self.add_line(*groups, separator=separator)

    def add_line(self, *groups: Text | str, separator: str = SEPARATOR) -> Flow:
        """A new line of these groups (empty strings and Texts left out), ``separator`` between two
        groups that share a screen line."""
        self.lines.append((separator, [g if isinstance(g, Text) else Text(g) for g in groups if g]))
        return self

    @property
    def plain(self) -> str:
        """The text as it reads on a screen wide enough for every line (what tests and logs read)."""
        return "\n".join(sep.join(g.plain for g in groups) for sep, groups in self.lines)

    def laid_out(self, width: int) -> Iterator[Text]:
        """The screen's lines at ``width`` cells: groups joined while they fit, a new line before a
        group that does not."""
        for sep, groups in self.lines:
            line = Text()
            for group in groups:
                if line.cell_len and line.cell_len + cell_len(sep) + group.cell_len > width:
                    yield line
                    line = Text()
                if line.cell_len:
                    line.append(sep, style="dim")
                line.append_text(group)
            yield line

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable[Text]:
        yield from self.laid_out(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max((g.cell_len for _, groups in self.lines for g in groups), default=0)
        whole = max((cell_len(line) for line in self.plain.splitlines()), default=0)
        return Measurement(min(widest, options.max_width), min(whole, options.max_width))
