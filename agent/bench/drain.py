"""Before the first window: wait until the engine has drained what other clients left on it.

A benchmark measures the engine alone. Started while another client's requests still run (the
demo's traffic had 250 in flight), its probe request and first level queue behind them: the run sat
at 0 % for 90 s and then expected an hour. So a run first waits, up to ``drain_wait_s``, until
SGLang's ``num_running_reqs`` and ``num_queue_reqs`` both read 0, and says so on its progress (phase
"waiting", with the counts). An engine that does not drain in time (a production server beside its
traffic) is measured anyway, and the result says how busy it was.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from agent.sglang.client import EngineClient, EngineError
from agent.wire.bench import DEFAULT_DRAIN_WAIT_S as DEFAULT_DRAIN_WAIT_S

POLL_S = 0.5
READ_TIMEOUT_S = 2.0
"""A saturated engine may answer /metrics late (the sim took 75 s while it shed cut requests): a
read that does not answer in time keeps the last counts, and the wait goes on saying so."""


@dataclass(frozen=True)
class Busy:
    """What the engine held at one look: requests of other clients."""

    running: int | None
    queued: int | None

    @property
    def idle(self) -> bool:
        """Nothing running and nothing queued. An engine that exports no queue gauge (a scripted
        engine in the tests; SGLang always does) is idle once nothing runs: an unknown queue kept
        every run waiting the whole ``drain_wait_s`` first (2 min)."""
        return self.running == 0 and not self.queued

    def words(self) -> str:
        def part(n: int | None, what: str) -> str:
            return f"{'?' if n is None else n} {what}"

        return f"{part(self.running, 'running')}, {part(self.queued, 'queued')}"


@dataclass(frozen=True)
class DrainOutcome:
    drained: bool
    waited_s: float
    at_start: Busy
    """What the engine held when the run began to wait."""
    at_end: Busy
    """What it held when the run went on (idle when drained)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "drained": self.drained,
            "waited_s": round(self.waited_s, 1),
            "at_start": asdict(self.at_start),
            "at_end": asdict(self.at_end),
        }


async def busy(engine: EngineClient, timeout_s: float = READ_TIMEOUT_S) -> Busy:
    try:
        async with asyncio.timeout(timeout_s):
            reading = await engine.metrics()
    except (EngineError, TimeoutError):
        reading = None
    if reading is None:
        return Busy(None, None)
    return Busy(reading.gauge_int("running"), reading.gauge_int("queued"))


async def wait_for_drain(
    engine: EngineClient,
    limit_s: float,
    report: Callable[[Busy, float], None],
    *,
    poll_s: float = POLL_S,
) -> DrainOutcome:
    """Poll the engine until it is idle or ``limit_s`` passed; ``report(busy, waited_s)`` on each look
    while it is not idle. An engine without metrics (no ``--enable-metrics``) is not waited for."""
    started = time.monotonic()
    first = now = await busy(engine)
    while not now.idle and now.running is not None and time.monotonic() - started < limit_s:
        report(now, time.monotonic() - started)
        await asyncio.sleep(poll_s)
        read = await busy(engine)
        now = read if read.running is not None else now  # no answer in time: the last counts hold
    return DrainOutcome(now.idle, time.monotonic() - started, first, now)
