"""Column widths that fit a table into its width, so that no value is cut into another value.

A DataTable sizes each column to its widest cell and scrolls sideways past the screen's edge: at 80
columns the audit's change column read ``143 → 10`` (the rest beyond the edge) and at 100 its "from"
column ``unix soc``. Here every column gets its natural width when they all fit; when they do not,
the column that wraps (a change: "threshold 143 → 100; steps 3 → 2") gives way first, down to a
floor, and then the others, each down to its own floor. A cell in a column that gave way is either
wrapped over more lines (:func:`wrapped`) or ends with an ellipsis (:func:`ended`): a reader sees
that it goes on, never a shorter value that looks whole.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text

PADDING = 2
"""A DataTable cell's padding, left and right (``cell_padding`` 1)."""


def natural_widths(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """Each column's widest cell (its header included), in terminal cells."""
    widths = [cell_len(h) for h in header]
    for row in rows:
        for n, cell in enumerate(row):
            widths[n] = max(widths[n], max((cell_len(line) for line in cell.splitlines()), default=0))
    return widths


def longest_word(cells: Sequence[str]) -> int:
    """The widest word (between spaces) of ``cells``, in terminal cells."""
    return max((cell_len(word) for cell in cells for word in cell.split()), default=0)


def fit_widths(
    natural: Sequence[int], available: int, *, wraps: int, floors: Sequence[int], word: int = 0
) -> list[int]:
    """Widths (without padding) whose sum with the padding is at most ``available``: the natural ones
    when they fit; else column ``wraps`` narrows first (to its floor), then every other column narrows
    in turn, the widest first, each to its floor. Below the floors' sum the floors are returned (the
    table then scrolls sideways, the one case left where a value is out of sight, never cut).

    ``word``, the wrapping column's longest word (:func:`longest_word`), raises that column's floor
    as far as the other columns' floors leave room: a word such as a run's id then keeps to one line
    rather than folding in two, and a word wider than any room folds rather than scroll the table."""
    widths = list(natural)
    room = available - PADDING * len(widths)
    others = sum(f for n, f in enumerate(floors) if n != wraps)
    floors = [max(f, min(word, room - others)) if n == wraps else f for n, f in enumerate(floors)]
    over = sum(widths) - room
    if over <= 0:
        return widths
    give = min(over, max(0, widths[wraps] - floors[wraps]))
    widths[wraps] -= give
    over -= give
    while over > 0:
        spare = [
            (widths[n] - floors[n], n) for n in range(len(widths)) if n != wraps and widths[n] > floors[n]
        ]
        if not spare:
            break
        _, widest = max(spare)
        widths[widest] -= 1
        over -= 1
    return widths


def ended(value: str | Text, width: int) -> Text:
    """A cell on one line: whole when it fits, else cut with an ellipsis at its end."""
    text = value.copy() if isinstance(value, Text) else Text(value)
    text.no_wrap = True
    text.overflow = "ellipsis"
    if cell_len(text.plain) > width:
        text.truncate(width, overflow="ellipsis")
    return text


def wrapped(value: str | Text) -> Text:
    """A cell that wraps over as many lines as it needs (its row is as high as its tallest cell)."""
    text = value.copy() if isinstance(value, Text) else Text(value)
    text.no_wrap = False
    text.overflow = "fold"
    return text
