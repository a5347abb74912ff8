"""A workload that changes over time, replayed through the engine model on its virtual clock.

Closed loop, as ``agent.sim.loadmodel`` runs one level: the phase in force says how many clients
there are; each client sends its next request as soon as its previous one finished, shaped by the
phase in force when it is sent (prompt and output length, and how well the drafts match what it
asks). A request's predictability is drawn from its own generator (seeded by its number), so two
replays with different settings send the same requests and differ only by the setting.

``on_tick(engine, now)`` runs every ``tick_s`` modelled seconds between two forward passes, where
the agent's telemetry would sample the server: a what-if with a fixed threshold passes nothing, the
autopilot's replay (``agent.whatif.autopilot``) reads the model's ``/metrics`` there and
moves the live threshold through the engine's controller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from agent.sim.config import SimConfig
from agent.sim.engine import Engine
from agent.sim.request import SimRequest
from agent.sim.workload import Workload, acceptance_named

Tick = Callable[[Engine, float], None]


@dataclass
class ReplayResult:
    seconds: float
    output_tokens: int
    """Output tokens delivered within the run (finished requests and the ones still running)."""
    completed: int
    mean_running: float
    phase_tokens: list[int] = field(default_factory=list)
    """Output tokens delivered within each phase."""

    @property
    def output_tok_s(self) -> float:
        return self.output_tokens / self.seconds if self.seconds > 0 else 0.0


def replay(
    config: SimConfig,
    workload: Workload,
    *,
    seed: int = 0,
    engine: Engine | None = None,
    tick_s: float = 1.0,
    on_tick: Tick | None = None,
) -> ReplayResult:
    eng = engine if engine is not None else Engine(config, seed=seed)
    start = eng.now
    end = start + workload.seconds
    sent: list[SimRequest] = []
    active = 0
    phase_index = -1
    marks: list[int] = []

    def delivered() -> int:
        return sum(r.output_len for r in sent)

    def enter(now: float) -> None:
        nonlocal phase_index
        index, phase, _ = workload.at(now - start)
        if index != phase_index:
            if phase_index >= 0:
                marks.append(delivered())
            phase_index = index
            eng.cal = replace(eng.cal, acceptance=acceptance_named(phase.acceptance))

    def send() -> None:
        nonlocal active
        _, phase, _ = workload.at(eng.now - start)
        req = SimRequest(
            rid=eng.new_rid(),
            input_len=phase.input_len,
            max_new_tokens=phase.output_len,
            ignore_eos=True,
            notify=finished,
            prompt_key=len(sent),
        )
        sent.append(req)
        active += 1
        eng.submit(req)

    def finished(req: SimRequest) -> None:
        nonlocal active
        if req.finished:
            active -= 1
            top_up()

    def top_up() -> None:
        if eng.now >= end:
            return
        _, phase, into = workload.at(eng.now - start)
        while active < phase.clients_at(into):
            send()

    running_area = 0.0
    next_tick = start + tick_s
    enter(eng.now)
    top_up()
    while eng.now < end:
        enter(eng.now)
        top_up()
        plan = eng.plan_step()
        if plan is None:  # nobody wants to run: wait for the next tick (clients may come back)
            eng.stats.on_idle(eng)
            eng.now = min(end, max(eng.now, next_tick))
        else:
            running_area += len(eng.running) * plan.duration
            eng.commit_step(plan)
        if eng.now >= next_tick:
            if on_tick is not None:
                on_tick(eng, eng.now)
            next_tick = max(next_tick + tick_s, eng.now + tick_s / 2)
    marks.append(delivered())
    phase_tokens = [b - a for a, b in zip([0, *marks[:-1]], marks, strict=True)]
    seconds = eng.now - start
    return ReplayResult(
        seconds=seconds,
        output_tokens=delivered(),
        completed=sum(1 for r in sent if r.finished),
        mean_running=running_area / seconds if seconds > 0 else 0.0,
        phase_tokens=phase_tokens,
    )
