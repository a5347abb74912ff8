"""The last hour of snapshots and events, numbered by one cursor, for catch-up after a reconnect.

Snapshots and events share a ``SeqCursor`` so that a console which saw seq N asks for everything
after N, of both kinds, and misses nothing. A buffer is bounded twice: by age (an hour) so that the
console can draw an hour of history, and by count so that a fast tick or an event storm cannot grow
the agent's memory without limit.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar


class SeqCursor:
    """Monotonic sequence numbers, starting after ``start`` (1 for a fresh agent)."""

    def __init__(self, start: int = 0) -> None:
        self._counter = itertools.count(start + 1)
        self._last = start

    def next(self) -> int:
        self._last = next(self._counter)
        return self._last

    @property
    def last(self) -> int:
        return self._last


class _Sequenced(Protocol):
    @property
    def seq(self) -> int: ...

    @property
    def time(self) -> float: ...


T = TypeVar("T", bound=_Sequenced)


class RingBuffer(Generic[T]):
    """Items that carry their own ``seq`` and ``time`` (``wire.Snapshot``, ``wire.Event``).

    ``add(build)`` takes the next seq from the cursor and calls ``build(seq)``, so the item is made
    with its number (wire models are frozen). ``append(item)`` stores an item that already has one.
    """

    def __init__(
        self,
        *,
        max_age_s: float = 3600.0,
        max_items: int = 20_000,
        cursor: SeqCursor | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_items < 1 or max_age_s <= 0:
            raise ValueError("a ring buffer needs max_items >= 1 and max_age_s > 0")
        self._items: deque[T] = deque(maxlen=max_items)
        self._max_age = max_age_s
        self.cursor = cursor if cursor is not None else SeqCursor()
        self._clock = clock

    def add(self, build: Callable[[int], T]) -> T:
        item = build(self.cursor.next())
        self.append(item)
        return item

    def append(self, item: T) -> None:
        if self._items and item.seq <= self._items[-1].seq:
            raise ValueError(f"seq {item.seq} is not after the last stored seq {self._items[-1].seq}")
        self._items.append(item)
        self._expire()

    def _expire(self) -> None:
        oldest = self._clock() - self._max_age
        while self._items and self._items[0].time < oldest:
            self._items.popleft()

    def since(self, seq: int, limit: int | None = None) -> list[T]:
        """Items with a seq greater than ``seq``, oldest first (at most ``limit``, the oldest ones)."""
        self._expire()
        newer: list[T] = []
        for item in reversed(self._items):
            if item.seq <= seq:
                break
            newer.append(item)
        newer.reverse()
        return newer if limit is None else newer[:limit]

    def latest(self) -> T | None:
        return self._items[-1] if self._items else None

    @property
    def first_seq(self) -> int | None:
        """The oldest seq still held: a console that asks for less has lost the items in between."""
        self._expire()
        return self._items[0].seq if self._items else None

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items))
