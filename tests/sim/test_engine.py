"""The engine model's scheduling rules: batch cap, chunked prefill, KV admission, retraction, aborts."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from agent.profile.schema import Profile
from agent.sim import metrics, protocol
from agent.sim.config import sim_config
from agent.sim.engine import Engine
from agent.sim.request import SimRequest


def _with_server(profile: Profile, **server: object) -> Profile:
    return profile.model_copy(update={"server": profile.server.model_copy(update=server)})


def _run(engine: Engine, until_steps: int = 100_000) -> None:
    for _ in range(until_steps):
        plan = engine.plan_step()
        if plan is None:
            return
        engine.commit_step(plan)
        assert engine.kv_used == sum(r.kv_allocated for r in [*engine.running, *engine.waiting])
        assert 0 <= engine.kv_used <= engine.config.pool_tokens


def _metric(engine: Engine, name: str) -> float:
    text = metrics.render(metrics.registry_for(engine)).decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    raise AssertionError(name)


def test_max_running_requests_caps_the_batch(baseline_profile: Profile) -> None:
    engine = Engine(sim_config(_with_server(baseline_profile, max_running_requests=8)), seed=1)
    for i in range(20):
        engine.submit(SimRequest(rid=str(i), input_len=100, max_new_tokens=50))
    seen = 0
    while (plan := engine.plan_step()) is not None:
        engine.commit_step(plan)
        seen = max(seen, len(engine.running))
        assert len(engine.running) <= 8
    assert seen == 8


def test_long_prompts_are_prefilled_in_chunks(baseline_profile: Profile) -> None:
    engine = Engine(sim_config(_with_server(baseline_profile, chunked_prefill_size=1000)), seed=1)
    req = SimRequest(rid="long", input_len=3500, max_new_tokens=4)
    engine.submit(req)
    prefills = []
    while (plan := engine.plan_step()) is not None:
        if plan.kind == "prefill":
            prefills.append(sum(plan.tokens))
        engine.commit_step(plan)
    assert prefills == [1000, 1000, 1000, 500]
    assert req.output_len == 4 and req.finish_reason == {"type": "length", "length": 4}


def test_full_kv_pool_queues_new_requests(baseline_profile: Profile) -> None:
    engine = Engine(sim_config(_with_server(baseline_profile, max_total_tokens=3500)), seed=1)
    for i in range(10):
        engine.submit(SimRequest(rid=str(i), input_len=900, max_new_tokens=100, ignore_eos=True))
    plan = engine.plan_step()
    assert plan is not None and plan.kind == "prefill"
    assert len(plan.batch) == 3  # 3 x (900 + 100) fit in 3,500 slots, a fourth would not
    assert _metric(engine, "sglang:num_queue_reqs") == 7
    engine.commit_step(plan)
    _run(engine)
    assert all(r.output_len == 100 for r in plan.batch)


def test_decode_out_of_kv_retracts_and_requeues(local_sim: Profile) -> None:
    """Without ignore_eos admission counts on a fraction of max_new_tokens; when outputs outgrow it,
    SGLang retracts the least advanced requests and runs them again later."""
    config = sim_config(_with_server(local_sim, max_total_tokens=6000))
    engine = Engine(config, seed=4)
    reqs = [
        SimRequest(rid=str(i), input_len=400, max_new_tokens=2000, ignore_eos=False, natural_len=1500)
        for i in range(12)
    ]
    for req in reqs:
        engine.submit(req)
    _run(engine)
    assert engine.stats.retracted_requests > 0
    assert _metric(engine, "sglang:num_retracted_requests_total") == engine.stats.retracted_requests
    assert any(r.retractions > 0 for r in reqs)
    assert all(r.finish_reason == {"type": "stop", "matched": 163586} and r.output_len == 1500 for r in reqs)
    assert engine.kv_used == 0


def test_speculation_reserves_kv_ahead_of_each_request(local_sim: Profile) -> None:
    engine = Engine(sim_config(local_sim), seed=1)
    req = SimRequest(rid="a", input_len=100, max_new_tokens=1000)
    engine.submit(req)
    _run(engine, until_steps=3)  # prefill, then decode steps
    reserve = engine.config.reserve_per_decode
    assert reserve == 8
    assert req.committed < req.kv_allocated <= req.committed + reserve


def test_abort_frees_the_request_everywhere(local_sim: Profile) -> None:
    engine = Engine(sim_config(local_sim), seed=1)
    running = SimRequest(rid="run", input_len=100, max_new_tokens=500)
    engine.submit(running)
    _run(engine, until_steps=4)
    waiting = SimRequest(rid="wait", input_len=100, max_new_tokens=5)
    engine.submit(waiting)
    engine.abort(running)
    engine.abort(waiting)
    assert engine.idle and engine.kv_used == 0
    assert running.finish_reason is not None and running.finish_reason["type"] == "abort"
    assert engine.stats.aborted == 2


def test_same_seed_same_run(local_sim: Profile) -> None:
    def run(seed: int) -> list[int]:
        engine = Engine(sim_config(local_sim), seed=seed)
        reqs = [
            SimRequest(rid=str(i), input_len=50, max_new_tokens=120) for i in range(3)
        ]  # below the threshold
        for req in reqs:
            engine.submit(req)
        _run(engine)
        return [r.verify_ct for r in reqs]

    assert run(9) == run(9)
    assert run(9) != run(10)


def test_a_request_larger_than_the_pool_is_refused_not_left_waiting(baseline_profile: Profile) -> None:
    engine = Engine(sim_config(_with_server(baseline_profile, max_total_tokens=2000)), seed=1)
    huge = SimRequest(rid="huge", input_len=1900, max_new_tokens=500, ignore_eos=True)
    small = SimRequest(rid="small", input_len=100, max_new_tokens=10, ignore_eos=True)
    engine.submit(huge)
    engine.submit(small)
    _run(engine)
    assert huge.finish_reason is not None and huge.finish_reason["type"] == "abort"
    assert huge.finish_reason["status_code"] == 400 and "2000" in huge.finish_reason["message"]
    assert small.output_len == 10 and engine.idle


def test_kv_is_taken_in_whole_pages(local_sim: Profile) -> None:
    engine = Engine(sim_config(_with_server(local_sim, page_size=16)), seed=2)
    assert engine.config.pool_tokens % 16 == 0
    assert engine.config.reserve_per_decode == 8
    reqs = [SimRequest(rid=str(i), input_len=37 + i, max_new_tokens=60) for i in range(3)]
    for req in reqs:
        engine.submit(req)
    while (plan := engine.plan_step()) is not None:
        engine.commit_step(plan)
        for req in engine.running:
            assert req.kv_allocated % 16 == 0
            assert req.kv_allocated >= req.committed
    assert all(r.output_len == 60 for r in reqs) and engine.kv_used == 0


def test_speculation_without_max_running_requests_gets_sglangs_48(local_sim: Profile) -> None:
    config = sim_config(_with_server(local_sim, max_running_requests=None))
    assert config.max_running_requests == 48
    assert any("reset to 48" in note for note in config.notes)


def test_a_prompts_predictability_is_its_own(eagle3_profile: Profile) -> None:
    """Same prompt, same predictability (whatever was drawn before it); other prompts, their own."""

    def first_accept(engine: Engine, prompt: str) -> float:
        gen = protocol.parse_generate({"text": prompt}, 131072, "m")
        req = SimRequest(
            rid=engine.new_rid(), input_len=gen.input_len, max_new_tokens=8, prompt_key=gen.prompt_key
        )
        engine.submit(req)
        return req.first_accept

    config = sim_config(eagle3_profile)
    engine = Engine(config, seed=3)
    first = first_accept(engine, "the same words")
    others = {first_accept(engine, f"prompt number {i}") for i in range(20)}
    assert first_accept(engine, "the same words") == first
    assert first_accept(Engine(config, seed=3), "the same words") == first
    assert len(others) == 20, "different prompts draw different values"
    assert first_accept(Engine(config, seed=4), "the same words") != first, "the engine's seed still counts"
    plain = [SimRequest(rid=str(i), input_len=4, max_new_tokens=8) for i in range(2)]
    for req in plain:
        engine.submit(req)
    assert plain[0].first_accept != plain[1].first_accept, "without a prompt key: the engine's generator"
