"""The simulated engine over real HTTP on a real socket: SGLang 0.5.23's shapes, live control, auth."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent.profile.schema import Profile
from agent.sglang import live_control
from agent.sim.request import StepPlan
from agent.sim.server import RunningSim, run_sim
from agent.sim.warmup import WARMUP_MAX_NEW_TOKENS

MODEL = "kimi-k2.5"


async def until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Poll a condition of the engine (no event exists for these) until it holds or time runs out."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


@pytest.fixture
async def sim(local_sim: Profile) -> AsyncIterator[RunningSim]:
    async with run_sim(local_sim, port=0, speedup=20, seed=2) as running:
        yield running


@pytest.fixture
async def client(sim: RunningSim) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=sim.url, timeout=30) as c:
        yield c


def _words(n: int) -> str:
    return " ".join(["hello"] * n)


async def _stream_generate(client: httpx.AsyncClient, tokens: int) -> list[dict[str, Any]]:
    body = {
        "text": _words(64),
        "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True},
        "stream": True,
    }
    events: list[dict[str, Any]] = []
    async with client.stream("POST", "/generate", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                payload = line[6:]
                events.append({"done": True} if payload == "[DONE]" else json.loads(payload))
    return events


async def test_every_endpoint_answers_in_sglangs_shapes(sim: RunningSim, client: httpx.AsyncClient) -> None:
    for path in ("/health", "/health_generate", "/ready"):
        response = await client.get(path)
        assert (response.status_code, response.content) == (200, b"")
    model_info = (await client.get("/model_info")).json()
    assert model_info["served_model_name"] == MODEL
    assert model_info["architectures"] == ["KimiK25ForConditionalGeneration"]
    models = (await client.get("/v1/models")).json()
    assert models["object"] == "list" and models["data"][0]["id"] == MODEL

    info = (await client.get("/server_info")).json()
    assert info["version"] == "0.5.23"
    assert info["speculative_algorithm"] == "EAGLE3" and info["speculative_adaptive"] is True
    assert "--speculative-adaptive" in info["launch_command"]
    state = info["internal_states"][0]
    assert (
        state["memory_usage"]["token_capacity"]
        == info["max_total_num_tokens"]
        == sim.engine.config.pool_tokens
    )
    assert state["effective_max_running_requests_per_dp"] == 256
    assert state["decode_cuda_graph_bs"][:8] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert "avg_spec_accept_length" not in state  # before the first decode log window, as in SGLang
    assert state[live_control.READBACK_FIELD]["prebuilt_steps"] == [0, 1, 2, 3]

    events = await _stream_generate(client, 300)  # > 40 decode passes: one decode log window
    state = (await client.get("/server_info")).json()["internal_states"][0]
    assert 1.5 < state["avg_spec_accept_length"] < 4.0
    assert state["last_gen_throughput"] > 0
    assert events[-1] == {"done": True}

    flushed = await client.post("/flush_cache")
    assert flushed.status_code == 200 and flushed.text.startswith("Cache flushed.")
    state = (await client.get("/server_info")).json()["internal_states"][0]
    assert "avg_spec_accept_length" not in state  # /flush_cache restarts the accept-length totals


async def test_accepted_connections_have_nagle_off(sim: RunningSim, client: httpx.AsyncClient) -> None:
    """uvicorn writes a response's head and body in two sends; with Nagle on, the body waits for the
    client's delayed ACK (~40 ms per JSON answer on a kept-alive connection). The server's end of each
    connection must have TCP_NODELAY set."""
    assert (await client.get("/server_info")).status_code == 200
    sockets = sim.connection_sockets()
    assert sockets, "the kept-alive connection is not among the server's connections"
    for sock in sockets:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


async def test_flush_cache_refuses_while_busy(sim: RunningSim, client: httpx.AsyncClient) -> None:
    task = asyncio.create_task(_stream_generate(client, 5000))
    await until(lambda: len(sim.engine.running) == 1)
    refused = await client.get("/flush_cache")
    assert refused.status_code == 400
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_generate_stream_is_cumulative_and_ends_with_meta_info(client: httpx.AsyncClient) -> None:
    events = await _stream_generate(client, 50)
    assert events[-1] == {"done": True}
    chunks = events[:-1]
    counts = [c["meta_info"]["completion_tokens"] for c in chunks]
    assert counts == sorted(counts) and counts[-1] == 50
    assert any(b - a > 1 for a, b in itertools.pairwise(counts))  # speculation: several tokens a chunk
    last = chunks[-1]
    assert len(last["text"].split()) == len(last["output_ids"]) == 50
    meta = last["meta_info"]
    assert meta["finish_reason"] == {"type": "length", "length": 50}
    assert meta["prompt_tokens"] == 64
    assert meta["spec_verify_ct"] >= 1
    assert meta["spec_accept_length"] == pytest.approx(50 / meta["spec_verify_ct"])
    assert sum(meta["spec_correct_drafts_histogram"]) == meta["spec_verify_ct"]
    assert all(c["meta_info"]["finish_reason"] is None for c in chunks[:-1])


async def test_openai_client_parses_streams_and_bodies(sim: RunningSim) -> None:
    client = openai.AsyncOpenAI(base_url=f"{sim.url}/v1", api_key="unused", max_retries=0)
    stream = await client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": _words(20)}],
        max_tokens=40,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"ignore_eos": True},
    )
    text, usage, finish = "", None, None
    async for chunk in stream:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
        usage = chunk.usage or usage
    assert finish == "length"
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (20, 40)
    assert len(text.split()) == 40

    completion = await client.completions.create(
        model=MODEL, prompt=_words(10), max_tokens=12, stream=True, extra_body={"ignore_eos": True}
    )
    pieces = [c.choices[0].text async for c in completion if c.choices]
    assert len("".join(pieces).split()) == 12

    whole = await client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "hi there"}],
        max_tokens=7,
        extra_body={"ignore_eos": True},
    )
    assert whole.usage is not None and whole.usage.completion_tokens == 7
    assert len((whole.choices[0].message.content or "").split()) == 7

    natural = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert natural.choices[0].finish_reason == "stop"  # without ignore_eos the modelled text ends by itself
    assert natural.usage is not None and natural.usage.completion_tokens >= 1
    await client.close()


async def test_metrics_parse_and_count_what_was_served(sim: RunningSim, client: httpx.AsyncClient) -> None:
    await _stream_generate(client, 30)
    await client.post(
        "/generate",
        json={"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 5, "ignore_eos": True}},
    )
    response = await client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    # SGLang's own warm-up request (8 tokens, not streamed) is counted with ours, as on the real server.
    generated = {s.labels["is_streaming"]: s.value for s in families["sglang:generation_tokens"].samples}
    assert generated == {"true": 30.0, "false": 5.0 + WARMUP_MAX_NEW_TOKENS}
    requests = {s.labels["is_streaming"]: s.value for s in families["sglang:num_requests"].samples}
    assert requests == {"true": 1.0, "false": 2.0}
    running = families["sglang:num_running_reqs"].samples[0]
    assert running.labels == {
        "model_name": MODEL,
        "engine_type": "unified",
        "tp_rank": "0",
        "pp_rank": "0",
        "moe_ep_rank": "0",
    }
    assert running.value == 0
    ttft = [s for s in families["sglang:time_to_first_token_seconds"].samples if s.name.endswith("_count")]
    assert sum(s.value for s in ttft) == 3
    itl_count = next(
        s.value for s in families["sglang:inter_token_latency_seconds"].samples if s.name.endswith("_count")
    )
    assert itl_count == (30 - 1) + (5 - 1) + (WARMUP_MAX_NEW_TOKENS - 1)  # every token after each first
    max_total = families["sglang:max_total_num_tokens"].samples[0].value
    assert max_total == sim.engine.config.pool_tokens
    verify = families["sglang:spec_verify_calls"].samples[0].value
    assert verify >= 3  # at least one verify per request after its prefill


async def test_threshold_takes_effect_at_the_next_step(sim: RunningSim, client: httpx.AsyncClient) -> None:
    plans: list[tuple[int, int]] = []  # (batch, steps) of every decode pass, in order
    applied_at: list[int] = []
    engine, server = sim.engine, sim.server
    plan_step, apply = engine.plan_step, server.apply_internal_state

    def logged_plan() -> StepPlan | None:
        plan = plan_step()
        if plan is not None and plan.kind == "decode":
            plans.append((len(plan.batch), plan.steps))
        return plan

    def logged_apply(args: dict[str, int | float]) -> bool:
        ok = apply(args)
        applied_at.append(len(plans))
        return ok

    engine.plan_step = logged_plan  # type: ignore[method-assign]
    server.apply_internal_state = logged_apply  # type: ignore[method-assign]

    set_state = "/set_internal_state"
    assert (
        await client.post(set_state, json={"server_args": {live_control.LIVE_THRESHOLD_KEY: 0}})
    ).json() == [True]
    load = [asyncio.create_task(_stream_generate(client, 20000)) for _ in range(6)]
    await until(lambda: len(engine.running) == 6 and bool(plans) and plans[-1] == (6, 3))

    assert (
        await client.post(set_state, json={"server_args": {live_control.LIVE_THRESHOLD_KEY: 4}})
    ).json() == [True]
    first_after = applied_at[-1]
    await until(lambda: len(plans) > first_after)
    assert plans[first_after] == (6, 0)  # the very next decode pass speculates no more
    assert all(steps == 0 for _, steps in plans[first_after:])

    await until(lambda: engine.active_steps == 0)
    info = (await client.get("/server_info")).json()
    state = info["internal_states"][0]
    assert state[live_control.READBACK_FIELD]["threshold"] == 4
    assert state[live_control.READBACK_FIELD]["active_steps"] == 0
    assert state["speculative_num_steps"] == 0
    metrics = {f.name: f for f in text_string_to_metric_families((await client.get("/metrics")).text)}
    assert metrics["sglang:spec_num_steps"].samples[0].value == 0

    # Pinning 1 step and lifting the threshold: the next pass drafts one token.
    body = {"server_args": {live_control.LIVE_THRESHOLD_KEY: 0, live_control.LIVE_STEPS_KEY: 1}}
    assert (await client.post(set_state, json=body)).json() == [True]
    first_after = applied_at[-1]
    await until(lambda: len(plans) > first_after)
    assert plans[first_after] == (6, 1)
    for task in load:
        task.cancel()
    await asyncio.gather(*load, return_exceptions=True)
    await until(lambda: not engine.running)  # disconnected clients were aborted


@pytest.mark.parametrize(
    "server_args",
    [
        {"not_a_key": 1},
        {"max_running_requests": 8},  # a real ServerArgs field, but not live-settable in 0.5.23
        {live_control.LIVE_THRESHOLD_KEY: -1},
        {live_control.LIVE_THRESHOLD_KEY: 8.5},
        {live_control.LIVE_STEPS_KEY: 5},  # no runtime state was built for 5 steps
        {live_control.LIVE_STEPS_KEY: 0},
        {live_control.LIVE_THRESHOLD_KEY: 16, "not_a_key": 1},  # one bad key rejects the whole request
        {"pp_max_micro_batch_size": 0},
        {"dspark_force_budget_frac": 0.5},
    ],
)
async def test_bad_keys_are_rejected_and_the_engine_keeps_serving(
    sim: RunningSim, client: httpx.AsyncClient, server_args: dict[str, Any]
) -> None:
    before = sim.engine.controller.readback() if sim.engine.controller else None
    response = await client.post("/set_internal_state", json={"server_args": server_args})
    assert (response.status_code, response.json()) == (200, [False])
    assert (sim.engine.controller.readback() if sim.engine.controller else None) == before
    served = await client.post("/generate", json={"text": "a b", "sampling_params": {"max_new_tokens": 3}})
    assert served.json()["meta_info"]["completion_tokens"] >= 1


async def test_sglangs_own_keys_are_accepted(client: httpx.AsyncClient) -> None:
    for key, value in (("speculative_accept_threshold_single", 0.9), ("pp_max_micro_batch_size", 8)):
        response = await client.put("/set_internal_state", json={"server_args": {key: value}})
        assert response.json() == [True]
        state = (await client.get("/server_info")).json()["internal_states"][0]
        assert state[key] == value


@pytest.mark.parametrize(
    "body", [{"server_args": {"adaptive_spec_threshold": "8"}}, {"server_args": [1]}, ["x"]]
)
async def test_malformed_set_internal_state_is_a_400(client: httpx.AsyncClient, body: Any) -> None:
    response = await client.post("/set_internal_state", json=body)
    assert response.status_code == 400
    assert response.json()["object"] == "error"


async def test_bad_generation_requests_say_why(client: httpx.AsyncClient) -> None:
    too_long = await client.post(
        "/v1/chat/completions",
        json={"model": MODEL, "messages": [{"role": "user", "content": "x"}], "max_tokens": 10_000_000},
    )
    assert too_long.status_code == 400 and "context length" in too_long.json()["message"]
    wrong_type = await client.post("/v1/completions", content=b"{}", headers={"content-type": "text/plain"})
    assert wrong_type.status_code == 400
    empty = await client.post("/generate", json={"sampling_params": {}})
    assert empty.status_code == 400 and "text or input_ids" in empty.json()["error"]["message"]
    missing = await client.get("/nope")
    assert missing.status_code == 404


async def test_keys_guard_routes_as_sglang_does(local_sim: Profile) -> None:
    keys = {"api_key": "k-user", "admin_api_key": "k-admin"}
    async with (
        run_sim(local_sim, port=0, speedup=20, **keys) as sim,
        httpx.AsyncClient(base_url=sim.url) as c,
    ):
        assert (await c.get("/health")).status_code == 200
        assert (await c.get("/metrics")).status_code == 200
        denied = await c.get("/server_info")
        assert (denied.status_code, denied.json()) == (401, {"error": "Unauthorized"})
        user = {"Authorization": "Bearer k-user"}
        admin = {"Authorization": "Bearer k-admin"}
        info = (await c.get("/server_info", headers=user)).json()
        # The real server hands its keys out here; whoever shows /server_info must redact them.
        assert (info["api_key"], info["admin_api_key"]) == ("k-user", "k-admin")
        body = {"server_args": {live_control.LIVE_THRESHOLD_KEY: 16}}
        assert (await c.post("/set_internal_state", json=body, headers=user)).status_code == 401
        assert (await c.post("/set_internal_state", json=body, headers=admin)).json() == [True]
        assert (await c.post("/generate", json={"text": "a"}, headers=admin)).status_code == 401


async def test_a_request_the_pool_can_never_hold_gets_an_error(local_sim: Profile) -> None:
    small = local_sim.model_copy(
        update={"server": local_sim.server.model_copy(update={"max_total_tokens": 3000})}
    )
    async with (
        run_sim(small, port=0, speedup=20) as sim,
        httpx.AsyncClient(base_url=sim.url, timeout=30) as c,
    ):
        body = {"text": _words(2500), "sampling_params": {"max_new_tokens": 1000, "ignore_eos": True}}
        refused = await c.post("/generate", json=body)
        assert refused.status_code == 400 and "3000" in refused.json()["error"]["message"]
        async with c.stream("POST", "/generate", json={**body, "stream": True}) as response:
            lines = [line async for line in response.aiter_lines() if line.startswith("data: ")]
        assert "KV cache" in json.loads(lines[0][6:])["error"]["message"]
        assert lines[-1] == "data: [DONE]"
        fits = await c.post("/generate", json={"text": "a b", "sampling_params": {"max_new_tokens": 4}})
        assert fits.json()["meta_info"]["completion_tokens"] == 4
