"""Progress of a benchmark run: one record type for the daemon's stream and the terminal.

A run is a list of steps (``schedule.plan``: one arm's warm-up and window at one level); progress is
the share of the run's expected time that has passed, with an ETA from ``schedule.DurationModel``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from agent.bench.drain import Busy
from agent.bench.schedule import DurationModel, Step, format_duration
from agent.wire.bench import BenchPhase
from agent.wire.bench import BenchProgress as BenchProgress

Phase = BenchPhase
"""``BenchProgress`` is a wire model (``agent.wire.bench``): every ``bench.progress`` event carries it."""


ProgressCallback = Callable[[BenchProgress], None]


def ignore_progress(_: BenchProgress) -> None:
    """The default callback."""


class RunTracker:
    """The run's steps, the duration model and the callback: every progress report goes through here."""

    def __init__(
        self,
        steps: Sequence[Step],
        model: DurationModel,
        levels: int,
        repeats: int,
        callback: ProgressCallback,
    ) -> None:
        self.steps = list(steps)
        self.model = model
        self.levels = levels
        self.repeats = repeats
        self.callback = callback
        self.started = time.monotonic()
        self.done = 0
        self._step_started = self.started
        self._last_measuring = 0.0
        self.projected: list[Step] = []
        """Steps a stopping rule expects to add still (``stopping``): counted in the ETA only."""
        self.rule_words: str | None = None
        """The stopping rule in words, for the plan's line (None: the windows are fixed)."""

    def add(self, steps: Sequence[Step]) -> None:
        """A stopping rule adds a pass at a level: its steps join the run (and leave the projection)."""
        self.steps += steps
        self.projected = self.projected[len(steps) :]
        self.repeats = max([self.repeats, *(s.repeat + 1 for s in steps)])

    def project(self, steps: Sequence[Step]) -> None:
        self.projected = list(steps)

    def _eta(self, current: Step | None) -> float:
        rest = self.steps[self.done + (1 if current is not None else 0) :]
        eta = self.model.remaining(rest) + self.model.remaining(self.projected)
        if current is not None:
            in_step = time.monotonic() - self._step_started
            eta += max(0.0, self.model.guess(current.concurrency) - in_step)
        return eta

    def _emit(self, step: Step, phase: Phase, message: str, completed: int = 0, requests: int = 0) -> None:
        elapsed = time.monotonic() - self.started
        eta = self._eta(None if phase == "measured" else step)
        self.callback(
            BenchProgress(
                arm=step.arm,
                concurrency=step.concurrency,
                level_index=step.level_index,
                levels=self.levels,
                completed=completed,
                requests=requests,
                fraction=min(1.0, elapsed / max(elapsed + eta, 1e-9)),
                message=message,
                phase=phase,
                repeat=step.repeat,
                repeats=self.repeats,
                step=step.index + (1 if phase == "measured" else 0),
                steps=len(self.steps),
                elapsed_s=round(elapsed, 1),
                eta_s=round(eta, 1),
            )
        )

    def waiting(self, busy: Busy, waited_s: float) -> None:
        """The engine still holds other clients' requests: the run waits before its first request."""
        if self.steps:
            self._emit(
                self.steps[0],
                "waiting",
                f"waiting for the engine to drain before the first request: {busy.words()} "
                f"(other clients' requests, {waited_s:.0f} s so far)",
            )

    def probing(self, top: int) -> None:
        """The run times a request alone and a batch at its top level before its first window; at a
        top level of 250 that took the demo 74 s, with no progress said (the bar sat empty)."""
        if self.steps:
            self._emit(
                self.steps[0],
                "probing",
                f"timing one request alone and a batch of up to {top} before the first window, "
                "to estimate the run's length",
            )

    def planned(self) -> float:
        """Report the plan; returns the expected duration in seconds."""
        expected = self.model.remaining(self.steps)
        if self.steps:
            first = self.steps[0]
            arms = len({s.arm for s in self.steps})
            if self.rule_words is None:
                words = (
                    f"{len(self.steps)} steps ({self.levels} levels x {arms} arms x {self.repeats} repeats), "
                    f"expected about {format_duration(expected)}"
                )
            else:
                words = (
                    f"{len(self.steps)} steps first ({self.levels} levels x {arms} arms x {self.repeats} "
                    f"windows, expected about {format_duration(expected)}), then more windows at a level "
                    f"{self.rule_words}"
                )
            self._emit(first, "planned", words)
        return expected

    def begin(self, step: Step) -> None:
        self._step_started = time.monotonic()

    def measuring(self, step: Step, completed: int, requests: int) -> None:
        """Called at every completion; reported at most 5 times a second."""
        now = time.monotonic()
        if now - self._last_measuring < 0.2:
            return
        self._last_measuring = now
        self._emit(step, "measuring", f"level {step.level_index + 1}/{self.levels}", completed, requests)

    def measured(self, step: Step, summary: str, request_s: float | None = None) -> None:
        self.model.record(step.concurrency, time.monotonic() - self._step_started, request_s)
        self.done = step.index + 1
        self._emit(step, "measured", summary)


class TerminalProgress:
    """On a terminal: one bar on stderr, redrawn at most 10 times a second. Elsewhere (a log, a
    pipe): the plan and one line per finished step, so a captured run still shows where it was."""

    def __init__(self, stream: TextIO | None = None, width: int = 24) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.width = width
        self._last_draw = 0.0
        self._last_wait = -1e9

    def __call__(self, progress: BenchProgress) -> None:
        eta = "" if progress.eta_s is None else f"ETA {format_duration(progress.eta_s)}"
        where = f"[{progress.step}/{progress.steps}] c={progress.concurrency} {progress.arm} r{progress.repeat + 1}"
        if progress.phase == "planned":
            self._line(f"plan: {progress.message}")
            return
        if progress.phase == "waiting":
            now = time.monotonic()
            if now - self._last_wait >= (1.0 if self.tty else 10.0):
                self._last_wait = now
                self._line(progress.message)
            return
        if not self.tty:
            if progress.phase == "measured":
                self._line(f"{where}: {progress.message}; {format_duration(progress.elapsed_s)} in, {eta}")
            return
        now = time.monotonic()
        if now - self._last_draw < 0.1 and progress.phase != "measured":
            return
        self._last_draw = now
        filled = int(self.width * progress.fraction)
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(
            f"\r[{bar}] {progress.fraction * 100:5.1f}%  {where:<28} "
            f"{progress.completed}/{progress.requests} req  {eta:<16}"
        )
        self.stream.flush()

    def _line(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r" + " " * 90 + "\r")
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
