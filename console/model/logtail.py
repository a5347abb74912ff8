"""Following a log the agent serves as "the last N lines": what is new since the last fetch, and
where a search term matches.

The agent answers ``GET /v1/logs?tail=N`` with the newest N lines; two fetches overlap. The new
lines are those after the longest end of the old fetch that starts the new one, so a line that
repeats (a periodic "decode batch" line) is not mistaken for the join.
"""

from __future__ import annotations

from collections.abc import Sequence


def new_lines(old: Sequence[str], new: Sequence[str]) -> tuple[list[str], bool]:
    """(lines to append, whether the old view must be replaced because the fetches do not join).

    The join is the longest suffix of ``old`` that is a prefix of ``new``; with none (the log moved
    on by more than a whole tail, or was rotated) the new fetch replaces the view.
    """
    if not old:
        return list(new), True
    if list(old) == list(new):
        return [], False
    first = new[0] if new else None
    # Only a position holding the new fetch's first line can start the join: try those, longest first.
    for start in (i for i, line in enumerate(old) if line == first):
        size = len(old) - start
        if size <= len(new) and list(old[start:]) == list(new[:size]):
            return list(new[size:]), False
    return list(new), True


def matching_lines(lines: Sequence[str], term: str) -> list[int]:
    """Indexes of the lines containing ``term``, case-insensitively; none for an empty term."""
    needle = term.casefold()
    if not needle:
        return []
    return [n for n, line in enumerate(lines) if needle in line.casefold()]


def step_match(matches: Sequence[int], current: int | None, forward: bool) -> int | None:
    """The position in ``matches`` after (or before) ``current``, wrapping; None with no matches."""
    if not matches:
        return None
    if current is None:
        return 0 if forward else len(matches) - 1
    return (current + (1 if forward else -1)) % len(matches)
