"""A closed loop of clients against the engine model, entirely on its virtual clock.

The same measurement as ``bench_serving --max-concurrency C --random-input-len I
--random-output-len O`` with ``ignore_eos``: ``C`` clients, each sending its next request as soon as
the previous one finishes, ``num_requests`` in all; output throughput is every output token over
the time from the first request to the last answer. No HTTP and no sleeping, so the calibration
test and what-ifs ("what does threshold 16 do at concurrency 64?") run a modelled hour in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.sim.config import SimConfig
from agent.sim.engine import Engine
from agent.sim.request import SimRequest


@dataclass(frozen=True)
class LoadResult:
    concurrency: int
    completed: int
    duration_s: float
    output_tok_s: float
    mean_running: float
    accept_length: float | None
    retractions: int
    decode_steps: int


def run_closed_loop(
    config: SimConfig,
    concurrency: int,
    input_len: int = 1024,
    output_len: int = 256,
    num_requests: int | None = None,
    seed: int = 0,
    engine: Engine | None = None,
) -> LoadResult:
    """Run ``num_requests`` (default ``max(4·concurrency, 32)``) through a fresh engine, ``concurrency`` at a time."""
    eng = engine if engine is not None else Engine(config, seed=seed)
    total = num_requests if num_requests is not None else max(4 * concurrency, 32)
    sent = 0
    done: list[SimRequest] = []
    start = eng.now

    def send() -> None:
        nonlocal sent
        sent += 1
        req = SimRequest(
            rid=eng.new_rid(),
            input_len=input_len,
            max_new_tokens=output_len,
            ignore_eos=True,
            notify=on_progress,
        )
        eng.submit(req)

    def on_progress(req: SimRequest) -> None:
        if req.finished:
            done.append(req)
            if sent < total:
                send()

    for _ in range(min(concurrency, total)):
        send()
    running_area = 0.0
    decode_steps = 0
    verify_tokens = 0
    verify_ct = 0
    while len(done) < total:
        plan = eng.plan_step()
        if plan is None:
            raise RuntimeError("the engine stalled with requests outstanding")
        if plan.kind == "decode":
            decode_steps += 1
        running_area += len(eng.running) * plan.duration  # what sglang:num_running_reqs shows meanwhile
        eng.commit_step(plan)
    for req in done:
        verify_tokens += req.output_len - 1
        verify_ct += req.verify_ct
    duration = eng.now - start
    output = sum(r.output_len for r in done)
    return LoadResult(
        concurrency=concurrency,
        completed=len(done),
        duration_s=duration,
        output_tok_s=output / duration if duration > 0 else 0.0,
        mean_running=running_area / duration if duration > 0 else 0.0,
        accept_length=(verify_tokens / verify_ct) if verify_ct else None,
        retractions=eng.stats.retracted_requests,
        decode_steps=decode_steps,
    )
