"""One telemetry tick: read SGLang, sample the GPUs, and turn both into an ``Observation``.

The collector only wires the three rooms of telemetry together and keeps their state:

* ``engine_reader``: every request to the engine (``/metrics`` every tick, ``/server_info`` every
  few, kept-alive connections, redaction) — the only I/O besides the GPU sampler;
* ``window``: a few minutes of counters and histograms (pure);
* ``derive`` / ``derive_spec``: what the reading and the window mean, as the Snapshot's parts (pure).

An ``Observation`` is a Snapshot without its identity: the daemon numbers it and stamps the
profile and engine kind once (``Observation.snapshot``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import httpx
from pydantic import BaseModel

from agent.profile.schema import Profile
from agent.sglang.info_view import ServerInfo
from agent.sglang.reading import MetricsReading
from agent.telemetry import derive
from agent.telemetry.derive import ProfileFacts, Windows
from agent.telemetry.derive_spec import speculation
from agent.telemetry.draft_waste import DraftWaste
from agent.telemetry.drafting import DraftingReadings
from agent.telemetry.engine_reader import METRICS_RETRY_TICKS, EngineReader
from agent.telemetry.findings import HealthInputs, evaluate
from agent.telemetry.gpu_worker import SampleThread
from agent.telemetry.nvml import GpuSampler
from agent.telemetry.window import CounterWindow
from agent.wire import Finding, Gpus, KvView, Latency, Load, Snapshot, Speculation, Throughput
from agent.wire.snapshot import EngineState

__all__ = ["METRICS_RETRY_TICKS", "SCRAPED_STATES", "Collector", "Identity", "Observation"]

SCRAPED_STATES: Final = frozenset({"ready", "draining", "unknown", "starting", "restarting"})
"""Engine states in which SGLang may answer; in the others the collector does not try."""
ACCEPT_HISTORY: Final = 30

_M = TypeVar("_M", bound=BaseModel)


@dataclass(frozen=True)
class Identity:
    """What the daemon knows better than the collector, stamped once on each Snapshot."""

    profile_name: str | None
    production: bool
    engine_kind: Literal["sglang", "sim"] | None


@dataclass(frozen=True)
class Observation:
    """One tick's Snapshot parts, before it is numbered and stamped with its identity."""

    time: float
    engine_state: EngineState
    engine_pid: int | None
    metrics_source: Literal["metrics", "server_info", "none"]
    throughput: Throughput
    load: Load
    latency: Latency
    speculation: Speculation
    kv: KvView
    gpus: Gpus
    findings: list[Finding]

    def snapshot(self, seq: int, identity: Identity) -> Snapshot:
        return Snapshot(
            seq=seq,
            time=self.time,
            profile_name=identity.profile_name,
            production=identity.production,
            engine_kind=identity.engine_kind,
            engine_state=self.engine_state,
            engine_pid=self.engine_pid,
            metrics_source=self.metrics_source,
            throughput=self.throughput,
            load=self.load,
            latency=self.latency,
            speculation=self.speculation,
            kv=self.kv,
            gpus=self.gpus,
            findings=self.findings,
        )


def _api_key_from(profile: Profile) -> str | None:
    path = profile.server.api_key_file
    if not path:
        return None
    try:
        return Path(path).expanduser().read_text().strip() or None
    except OSError:
        return None


class Collector:
    """Builds one Observation per ``tick``; the caller (the daemon) owns the schedule and the stream.

    ``api_key`` (or the profile's ``server.api_key_file``) is what ``/server_info`` needs when the
    server has one. ``set_engine`` points the collector at a restarted engine or a new profile and
    forgets the old history.
    """

    def __init__(
        self,
        engine_url: str | None,
        profile: Profile,
        gpus: GpuSampler,
        http: httpx.AsyncClient,
        clock: Callable[[], float] = time.time,
        *,
        api_key: str | None = None,
        request_timeout_s: float | None = None,
        windows: Windows | None = None,
        sample_gpus_in_thread: bool = True,
        gpu_timeout_s: float = 2.0,
    ) -> None:
        self._gpus = gpus
        self._clock = clock
        self.windows = windows or Windows()
        self._gpu_thread = sample_gpus_in_thread
        self._gpu_worker: SampleThread[Gpus] | None = None
        self._gpu_timeout = gpu_timeout_s
        self._gpu_pending: asyncio.Future[Gpus] | None = None
        self._explicit_key = api_key
        self._reader = EngineReader(http, request_timeout_s=request_timeout_s)
        self._window = CounterWindow(self.windows.keep_s)
        self._accept = DraftingReadings(ACCEPT_HISTORY)
        self._waste = DraftWaste()
        self._facts = ProfileFacts.of(profile)
        self._last_reading: MetricsReading | None = None
        self._info: ServerInfo | None = None
        self._last_error: str | None = None
        self._previous: dict[str, BaseModel] = {}
        self.set_engine(engine_url, profile)

    # -- configuration ------------------------------------------------------------------------
    def set_engine(self, engine_url: str | None, profile: Profile | None = None) -> None:
        """Point at a (re)started engine: history from the old process means nothing for the new one."""
        if profile is not None and profile is not self._facts.profile:
            self._facts = ProfileFacts.of(profile)
        prof = self._facts.profile
        self._reader.point_at(
            engine_url, self._explicit_key or _api_key_from(prof), prof.telemetry.server_info_every_ticks
        )
        self._info = None
        self._window.clear()
        self._accept.clear()
        self._waste.clear()

    def refresh_server_info(self) -> None:
        """Read ``/server_info`` on the next tick (after a live change, to show its read-back at once)."""
        self._reader.refresh_server_info()

    @property
    def server_info(self) -> dict[str, Any] | None:
        """The last ``/server_info``, redacted."""
        return self._reader.redacted_server_info

    @property
    def info(self) -> ServerInfo | None:
        """The typed view of the last ``/server_info``."""
        return self._info

    @property
    def last_reading(self) -> MetricsReading | None:
        return self._last_reading

    @property
    def last_error(self) -> str | None:
        """Why the last read failed, in words (None when it worked)."""
        return self._last_error

    # -- the tick -----------------------------------------------------------------------------
    async def tick(self, engine_state: EngineState = "unknown", engine_pid: int | None = None) -> Observation:
        now = self._clock()
        if self._gpu_thread and self._gpu_pending is None:
            if self._gpu_worker is None:
                self._gpu_worker = SampleThread(self._gpus.sample)
            self._gpu_pending = self._gpu_worker.submit()
        reading: MetricsReading | None = None
        engine_down = self._reader.url is None or engine_state not in SCRAPED_STATES
        if not engine_down:
            try:
                read = await self._reader.read()
                reading, self._info, self._last_error = read.reading, read.info, read.error
            except Exception as exc:  # an answer we did not foresee must not cost the snapshot
                self._last_error = f"reading SGLang failed: {type(exc).__name__}: {exc}"
        else:
            self._reader.idle()
            self._window.clear()
            self._last_error = None
        gpus = await self._gpu_sample() if self._gpu_thread else self._gpus.sample()
        self._last_reading = reading
        if reading is not None:
            self._window.add(now, reading.counters, reading.histograms)
        return self._observe(now, engine_state, engine_pid, engine_down, reading, gpus)

    async def _gpu_sample(self) -> Gpus:
        """The thread's sample; a driver call that hangs (it happens with a wedged GPU) costs one
        error state per tick instead of the whole telemetry loop, and no second thread is started
        while the first is stuck."""
        pending = self._gpu_pending
        assert pending is not None
        if not pending.done():  # usually done: it ran while the HTTP answers were on their way
            await asyncio.wait((pending,), timeout=self._gpu_timeout)
        if not pending.done():
            return Gpus(
                source="none",
                state="error",
                detail=f"the GPU driver did not answer within {self._gpu_timeout:g} s (NVML call hanging)",
            )
        self._gpu_pending = None
        exc = pending.exception()
        if exc is not None:
            return Gpus(source="none", state="error", detail=f"GPU sampling failed: {exc}")
        return pending.result()

    async def aclose(self) -> None:
        """Close the connections the collector keeps to the engine (the caller's client is the
        caller's), and let the GPU sampling thread end."""
        self._reader.close()
        if self._gpu_worker is not None and self._gpu_pending is None:
            self._gpu_worker.close()
            self._gpu_worker = None

    # -- the derivation, wired --------------------------------------------------------------------
    def _observe(
        self,
        now: float,
        engine_state: EngineState,
        engine_pid: int | None,
        engine_down: bool,
        reading: MetricsReading | None,
        gpus: Gpus,
    ) -> Observation:
        facts, windows, window, info = self._facts, self.windows, self._window, self._info
        load = derive.load(reading, info, facts.profile)
        spec = speculation(reading, info, window, windows, facts, engine_state, load.running, engine_down)
        spec = self._waste.observe(now, spec, load.running)
        kv_view = derive.kv_view(reading, info, load.running, spec.configured, facts)
        taken = self._accept.observe(now, spec, load.running)
        if reading is not None:
            health = derive.health_inputs(
                spec, load, kv_view, info, window, windows, facts, self._accept.values, gpus
            )
            if taken:  # the rule quotes the number the snapshot shows, from the same window
                health = replace(health, accept_length=spec.accept_length)
        else:
            health = HealthInputs(gpus=gpus)
        return Observation(
            time=now,
            engine_state=engine_state,
            engine_pid=engine_pid,
            metrics_source=reading.source if reading is not None else "none",
            throughput=self._same("throughput", derive.throughput(reading, window, windows)),
            load=self._same("load", load),
            latency=self._same("latency", derive.latency(window, windows) if reading else Latency()),
            speculation=self._same("speculation", spec),
            kv=self._same("kv", kv_view),
            gpus=self._same("gpus", gpus),
            findings=[self._same(f"finding:{f.code}", f) for f in evaluate(health)],
        )

    def _same(self, key: str, part: _M) -> _M:
        """The previous tick's part when it is equal to this one: the wire models are frozen, so
        consecutive snapshots in the stream buffer share what did not change (most of an idle tick)."""
        previous = self._previous.get(key)
        # The wire models have no extras and no private state: equal field dicts are equal models
        # (what BaseModel.__eq__ checks, at half its cost; a tick compares a dozen parts).
        if previous is not None and type(previous) is type(part) and previous.__dict__ == part.__dict__:
            return previous
        self._previous[key] = part
        return part
