"""A one-line stacked bar (used / reserved / free) with a legend, drawn with eighth blocks.

Textual's ProgressBar shows one fraction; the KV pool needs three side by side, in proportion.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.geometry import Size
from textual.reactive import reactive
from textual.widget import Widget

_EIGHTHS = " ▏▎▍▌▋▊▉"


@dataclass(frozen=True)
class Segment:
    label: str
    value: float
    style: str


def render_bar(segments: list[Segment], width: int) -> Text:
    """The bar alone: each segment gets its share of ``width`` cells in eighths, the last one filled."""
    total = sum(max(0.0, s.value) for s in segments)
    bar = Text()
    if width <= 0:
        return bar
    if total <= 0:
        return Text("░" * width, style="dim")
    cells_used = 0
    start_eighths = 0.0
    for segment in segments:
        end_eighths = start_eighths + max(0.0, segment.value) / total * width * 8
        first_cell = cells_used
        last_cell = min(width, round(end_eighths) // 8)
        full = max(0, last_cell - first_cell)
        bar.append("█" * full, style=segment.style)
        cells_used += full
        remainder = round(end_eighths) - last_cell * 8
        if remainder > 0 and cells_used < width:
            bar.append(_EIGHTHS[remainder], style=segment.style)
            cells_used += 1
            end_eighths = cells_used * 8
        start_eighths = end_eighths
    if cells_used < width:
        bar.append("█" * (width - cells_used), style=segments[-1].style)
    return bar


def legend_lines(segments: list[Segment], unit: str, width: int) -> list[Text]:
    """``■ label value (share)`` for each segment, as many to a line as fit in ``width``: a segment
    moves to the next line whole (at 80 columns one line cut off the free count)."""
    total = sum(max(0.0, s.value) for s in segments) or 1.0
    lines: list[Text] = []
    for segment in segments:
        entry = Text("■ ", style=segment.style)
        entry.append(f"{segment.label} {segment.value:,.0f}{unit} ({segment.value / total:.0%})")
        if lines and lines[-1].cell_len + 3 + entry.cell_len <= width:
            lines[-1].append("   ")
            lines[-1].append_text(entry)
        else:
            lines.append(entry)
    return lines


class StackedBar(Widget):
    """The bar on the first line, ``label value (share)`` for each segment below, wrapped by segment."""

    DEFAULT_CSS = """
    StackedBar { height: auto; }
    """

    segments: reactive[tuple[Segment, ...]] = reactive(tuple, layout=True)
    unit: reactive[str] = reactive("")

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return 1 + len(legend_lines(list(self.segments), self.unit, width))

    def render(self) -> Text:
        segments = list(self.segments)
        text = render_bar(segments, self.size.width)
        for line in legend_lines(segments, self.unit, self.size.width):
            text.append("\n")
            text.append_text(line)
        return text
