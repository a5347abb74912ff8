"""The "/" filter of a list (k9s, lazygit): a row stays when any of its cells contains the typed text."""

from __future__ import annotations


def row_matches(term: str, *cells: object) -> bool:
    """Case-insensitive; an empty term keeps every row."""
    if not term:
        return True
    term = term.lower()
    return any(term in str(cell).lower() for cell in cells if cell is not None)
