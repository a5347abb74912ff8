"""Accept-length readings the health rules may believe: each one over a window spent drafting.

The accept length is a ratio over ``Windows.rate_s`` (``derive_spec``). For that long after
speculation switches back on, the window still holds the verify calls of the plain decoding before
it (one token each), so the ratio reads near 1.0 although the draft accepts well: judging the draft
on those readings raised "speculation accepts almost nothing" at every switch back on. Only a
reading whose window starts at or after the tick that first showed speculation on counts; a tick
not speculating (or unknown) ends the run.
"""

from __future__ import annotations

from collections import deque

from agent.wire import Speculation


class DraftingReadings:
    def __init__(self, maxlen: int) -> None:
        self._values: deque[float] = deque(maxlen=maxlen)
        self._since: float | None = None

    def clear(self) -> None:
        self._values.clear()
        self._since = None

    def observe(self, now: float, spec: Speculation, running: int | None) -> bool:
        """Take this tick's reading if it counts; returns whether it was taken."""
        if spec.on is not True:
            self.clear()
            return False
        if self._since is None:
            self._since = now
        if spec.accept_length is None or (running or 0) <= 0:
            return False
        window = spec.accept_window_s or 0.0
        if now - window < self._since:
            return False  # the window reaches back into the plain decoding before the switch
        self._values.append(spec.accept_length)
        return True

    @property
    def values(self) -> tuple[float, ...]:
        """Oldest first."""
        return tuple(self._values)
