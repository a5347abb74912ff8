"""``console.widgets.table_fit``: the widths that fit a table into the screen (the audit's table)."""

from __future__ import annotations

from console.widgets.table_fit import PADDING, fit_widths, longest_word

FLOORS = (8, 6, 16, 11)
WRAPS = 2


def total(widths: list[int]) -> int:
    return sum(widths) + PADDING * len(widths)


def test_the_natural_widths_when_they_fit() -> None:
    natural = [8, 12, 30, 11]
    assert fit_widths(natural, total(natural), wraps=WRAPS, floors=FLOORS) == natural


def test_the_wrapping_column_keeps_its_longest_word_where_the_others_can_give() -> None:
    rows = ["run 20261206-100016-b3b4b5 (sweep at 1)", "threshold 143 → 100"]
    word = longest_word(rows)
    assert word == len("20261206-100016-b3b4b5")
    natural = [8, 20, len(rows[0]), 11]
    available = 8 + 6 + word + 11 + PADDING * 4  # the other columns at their floors
    without = fit_widths(natural, available, wraps=WRAPS, floors=FLOORS)
    assert without[WRAPS] < word, "without the word, the change narrows first and the id would fold"
    widths = fit_widths(natural, available, wraps=WRAPS, floors=FLOORS, word=word)
    assert widths == [8, 6, word, 11] and total(widths) <= available


def test_a_word_wider_than_any_room_folds_rather_than_scroll_the_table() -> None:
    natural = [8, 20, 60, 11]
    available = 8 + 6 + 18 + 11 + PADDING * 4
    widths = fit_widths(natural, available, wraps=WRAPS, floors=FLOORS, word=40)
    assert widths == [8, 6, 18, 11] and total(widths) == available
