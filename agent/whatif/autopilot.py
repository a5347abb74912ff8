"""The autopilot against the engine model, on its virtual clock: ``bench/studies/autopilot.py`` and
``agent sim-whatif --workload ... --autopilot``.

Nothing is special-cased for the model: every tick, the model's own ``/metrics`` page is rendered
(``agent.sim.metrics``, SGLang's names) and read back by the agent's reader (``agent.sglang.reading``),
its ``/server_info`` every few ticks as the collector reads it, and the Snapshot parts are derived by
the agent's telemetry code (``agent.telemetry.derive``, ``derive_spec``); the pilot sees exactly what
it sees in ``agent serve``. Its commands go to the engine's controller, as the simulated server's
``/set_internal_state`` applies them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from agent.control.autopilot.pilot import Command, Effect, Notice, Pilot
from agent.control.autopilot.sample import sample_of
from agent.control.autopilot.settings import PilotSettings, settings_of
from agent.profile.schema import Profile
from agent.sglang.info_view import ServerInfo, parse_server_info
from agent.sglang.reading import read_page
from agent.sim import metrics
from agent.sim.config import sim_config
from agent.sim.engine import Engine
from agent.sim.info import ServerInfo as SimServerInfo
from agent.sim.replay import ReplayResult, replay
from agent.sim.workload import Workload
from agent.telemetry import derive
from agent.telemetry.derive import ProfileFacts, Windows
from agent.telemetry.derive_spec import speculation
from agent.telemetry.window import CounterWindow
from agent.wire import Snapshot

SERVER_INFO_EVERY_TICKS = 5
"""As the collector's default (``telemetry.server_info_every_ticks``)."""


class ModelTelemetry:
    """What the agent's telemetry would make of the engine model at each tick."""

    def __init__(self, engine: Engine, profile: Profile) -> None:
        self.engine = engine
        self.registry = metrics.registry_for(engine)
        self.server = SimServerInfo(engine, port=0, seed=engine.seed)
        self.windows = Windows()
        self.window = CounterWindow(self.windows.keep_s)
        self.facts = ProfileFacts.of(profile)
        self.info: ServerInfo | None = None
        self.ticks = 0
        self.seq = 0

    def refresh(self) -> None:
        """Read ``/server_info`` on the next tick (after a live change, as the daemon asks the collector)."""
        self.info = None

    def snapshot(self, now: float) -> Snapshot:
        if self.info is None or self.ticks % SERVER_INFO_EVERY_TICKS == 0:
            self.info = parse_server_info(self.server.server_info())
        self.ticks += 1
        reading = read_page(metrics.render(self.registry))
        self.window.add(now, reading.counters, reading.histograms)
        profile, info = self.facts.profile, self.info
        load = derive.load(reading, info, profile)
        spec = speculation(reading, info, self.window, self.windows, self.facts, "ready", load.running, False)
        self.seq += 1
        return Snapshot(
            seq=self.seq,
            time=now,
            engine_state="ready",
            engine_pid=1,
            metrics_source="metrics",
            throughput=derive.throughput(reading, self.window, self.windows),
            load=load,
            speculation=spec,
            kv=derive.kv_view(reading, info, load.running, spec.configured, self.facts),
        )


@dataclass
class Record:
    """What happened in one replay with the autopilot: every command and notice, and its state."""

    commands: list[tuple[float, Command, bool]] = field(default_factory=list)
    notices: list[tuple[float, Notice]] = field(default_factory=list)
    thresholds: list[tuple[float, int, int, int]] = field(default_factory=list)
    """(time, live threshold, pinned steps, running) at every tick."""
    engine_changes: int = 0
    """Times the engine's live setting really changed (counted at the engine, not by the pilot)."""
    pilot_s: list[float] = field(default_factory=list)
    """CPU seconds the pilot took on each tick (what it adds to the agent's telemetry tick)."""

    def count(self, *kinds: str) -> int:
        return sum(1 for _, cmd, ok in self.commands if ok and cmd.kind in kinds)

    @property
    def moves(self) -> int:
        """Every change it made to the engine (moves and probes, starts and ends)."""
        return self.count("move", "probe", "probe_end")


class OfflineAutopilot:
    """``on_tick`` for ``agent.sim.replay.replay``: the pilot reading the model and steering it."""

    def __init__(self, engine: Engine, profile: Profile, settings: PilotSettings | None = None) -> None:
        self.engine = engine
        self.telemetry = ModelTelemetry(engine, profile)
        self.pilot = Pilot(settings or settings_of(profile))
        self.record = Record()
        self._enabled = False

    def __call__(self, engine: Engine, now: float) -> None:
        snap = self.telemetry.snapshot(now)
        effects: list[Effect] = []
        if not self._enabled:
            self._enabled = True
            self.pilot.now = now
            effects += self.pilot.configure(self.pilot.settings, True)
        started = time.perf_counter()
        effects += self.pilot.observe(sample_of(snap))
        self.record.pilot_s.append(time.perf_counter() - started)
        controller = engine.controller
        if controller is not None:
            self.record.thresholds.append(
                (now, controller.threshold, controller.pinned_steps, len(engine.running))
            )
        self._run(effects, now)

    def _run(self, effects: list[Effect], now: float) -> None:
        while effects:
            effect = effects.pop(0)
            if isinstance(effect, Notice):
                self.record.notices.append((now, effect))
                continue
            self.pilot.issued(effect)
            ok, message = self.apply(effect)
            self.record.commands.append((now, effect, ok))
            effects.extend(self.pilot.applied(effect, ok, message, now))

    def apply(self, cmd: Command) -> tuple[bool, str]:
        controller = self.engine.controller
        if controller is None:
            return False, "the engine has no adaptive controller"
        target = cmd.target
        why = controller.check_threshold(target.threshold) or controller.check_steps(target.steps)
        if why is not None:
            return False, why
        changed = (controller.threshold, controller.pinned_steps) != (target.threshold, target.steps)
        if controller.threshold != target.threshold:
            controller.set_threshold(target.threshold)
        if controller.pinned_steps != target.steps:
            controller.set_pinned_steps(target.steps)
        self.record.engine_changes += 1 if changed else 0
        self.telemetry.refresh()
        return True, "applied"


@dataclass(frozen=True)
class Run:
    """One replay of a workload: what it delivered, and the autopilot's record when it ran one."""

    label: str
    threshold: int | None
    result: ReplayResult
    record: Record | None = None
    settings: PilotSettings | None = None

    @property
    def tokens(self) -> int:
        return self.result.output_tokens

    def moves_bound(self) -> int:
        """What ``max_moves_per_minute`` allows over the whole replay."""
        if self.settings is None:
            return 0
        return int(self.settings.max_moves_per_minute * max(1, round(self.result.seconds / 60.0)))

    def busiest_minute(self) -> int:
        """The most changes it made in any 60 s (the bound holds in every minute, not on average)."""
        times = [
            at for at, cmd, ok in (self.record.commands if self.record else []) if ok and cmd.kind in MOVES
        ]
        return max((sum(1 for t in times if s <= t < s + 60.0) for s in times), default=0)


MOVES = ("move", "probe", "probe_end")


def run_fixed(profile: Profile, workload: Workload, threshold: int | None, *, seed: int = 0) -> Run:
    """The workload with a fixed live threshold (None: the profile's) and SGLang's own step policy."""
    config = sim_config(profile)
    engine = Engine(config, seed=seed)
    if threshold is not None and engine.controller is not None:
        engine.controller.set_threshold(threshold)
    used = engine.controller.threshold if engine.controller is not None else None
    return Run(f"threshold {used}", used, replay(config, workload, engine=engine))


def run_autopilot(
    profile: Profile, workload: Workload, *, seed: int = 0, settings: PilotSettings | None = None
) -> Run:
    """The workload with the autopilot on from the start, on the profile's threshold."""
    config = sim_config(profile)
    engine = Engine(config, seed=seed)
    pilot = OfflineAutopilot(engine, profile, settings)
    result = replay(config, workload, engine=engine, on_tick=pilot)
    return Run("autopilot", None, result, pilot.record, pilot.pilot.settings)
