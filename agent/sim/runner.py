"""Drives the engine model in wall-clock time: one modelled second lasts ``1/speedup`` real seconds.

Virtual time is a fixed linear map of the event loop's clock, and each step ends at the wall time
of its modelled end, so lateness never accumulates into the model: when the loop is late the next
steps simply run back to back until the model is on time again (and a request that arrives while
the model is behind joins at the model's "now"). How late each step's end is observed is kept in
``lateness_s``: that is the scheduling delay ``bench/costs/sim_speed.py`` reports.

Sleeping uses the loop's timer to within ~1.5 ms of the target and a short blocking sleep for the
rest: asyncio rounds selector timeouts up to whole milliseconds, which alone would make every step
up to 1 ms late.

A host too busy for the speedup shows as lateness: each window of ``LAG_WINDOW_S`` in which a step
ended more than ``LAG_WARN_S`` late is logged once (a warning on stderr under ``agent sim``), with
the worst lateness in wall and modelled time, so a benchmark's odd figure can be traced to the
simulator falling behind rather than to the modelled engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque

from agent.sim.engine import Engine
from agent.sim.request import SimRequest

_TIMER_SLACK_S = 0.0015
LAG_WINDOW_S = 10.0
LAG_WARN_S = 0.025

log = logging.getLogger(__name__)


class EngineRunner:
    def __init__(self, engine: Engine, speedup: float = 1.0) -> None:
        if speedup <= 0:
            raise ValueError("speedup must be positive")
        self.engine = engine
        self.speedup = speedup
        self.lateness_s: deque[float] = deque(maxlen=200_000)
        self.steps = 0
        self._wake = asyncio.Event()
        self._step_end: float | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wall0 = 0.0
        self._virt0 = 0.0
        self.lag_warnings = 0
        self._lag_window_start = 0.0
        self._lag_window_max = 0.0
        self._lag_window_late = 0

    # ------------------------------------------------------------------ clock

    def virtual_now(self) -> float:
        assert self._loop is not None
        return self._virt0 + (self._loop.time() - self._wall0) * self.speedup

    def wall_at(self, virtual: float) -> float:
        return self._wall0 + (virtual - self._virt0) / self.speedup

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wall0 = self._loop.time()
        self._virt0 = self.engine.now
        self._lag_window_start = self._wall0
        self._task = asyncio.create_task(self._run(), name="sim-engine")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # ------------------------------------------------------------------ requests

    def submit(self, req: SimRequest) -> None:
        # A request joins at the end of the step in flight (even when the model lags the wall clock),
        # or now when the engine is idle.
        now = self.virtual_now()
        at = min(now, self._step_end) if self._step_end is not None else max(now, self.engine.now)
        self.engine.submit(req, at=at)
        self._wake.set()

    def abort(self, req: SimRequest) -> None:
        self.engine.abort(req)

    # ------------------------------------------------------------------ loop

    async def _run(self) -> None:
        assert self._loop is not None
        loop = self._loop
        engine = self.engine
        while True:
            plan = engine.plan_step()
            if plan is None:
                engine.stats.on_idle(engine)
                self._wake.clear()
                await self._wake.wait()
                engine.now = max(engine.now, self.virtual_now())
                continue
            end = engine.now + plan.duration
            self._step_end = end
            target = self.wall_at(end)
            delay = target - loop.time()
            if delay > _TIMER_SLACK_S:
                await asyncio.sleep(delay - _TIMER_SLACK_S)
            else:
                await asyncio.sleep(0)
            remaining = target - loop.time()
            if remaining > 0:
                time.sleep(remaining)
            late = loop.time() - target
            self.lateness_s.append(late)
            self._note_lag(late, loop.time())
            self.steps += 1
            engine.commit_step(plan)
            self._step_end = None

    def _note_lag(self, late: float, now: float) -> None:
        if late > LAG_WARN_S:
            self._lag_window_late += 1
            self._lag_window_max = max(self._lag_window_max, late)
        if now - self._lag_window_start < LAG_WINDOW_S:
            return
        if self._lag_window_late:
            self.lag_warnings += 1
            log.warning(
                "agent sim: the model fell behind the wall clock: %d steps ended more than %.0f ms late in the last "
                "%.0f s, the worst by %.0f ms (%.2f modelled s at speedup %g); the host is too busy "
                "for this speedup",
                self._lag_window_late,
                LAG_WARN_S * 1000,
                now - self._lag_window_start,
                self._lag_window_max * 1000,
                self._lag_window_max * self.speedup,
                self.speedup,
            )
        self._lag_window_start, self._lag_window_max, self._lag_window_late = now, 0.0, 0
