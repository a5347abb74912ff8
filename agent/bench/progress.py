"""Progress of a benchmark run: one record type for the daemon's stream and the terminal bar."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, TextIO


@dataclass(frozen=True)
class BenchProgress:
    arm: str
    """"sweep" for a plain sweep, else "on" / "off" / "adaptive" / "baseline"."""
    concurrency: int
    level_index: int
    levels: int
    completed: int
    """Measured requests finished at this level."""
    requests: int
    fraction: float
    """Of the whole run, 0..1, by requests."""
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


ProgressCallback = Callable[[BenchProgress], None]


def ignore_progress(_: BenchProgress) -> None:
    """The default callback."""


class TerminalProgress:
    """A one-line bar on stderr, redrawn at most 10 times a second, only when stderr is a terminal."""

    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.width = width
        self._last_draw = 0.0

    def __call__(self, progress: BenchProgress) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        level_done = progress.completed >= progress.requests
        if now - self._last_draw < 0.1 and not level_done:
            return
        self._last_draw = now
        filled = int(self.width * progress.fraction)
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(
            f"\r[{bar}] {progress.fraction * 100:5.1f}%  {progress.arm:<8} c={progress.concurrency:<4} "
            f"{progress.completed}/{progress.requests} req  {progress.message[:40]:<40}"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
