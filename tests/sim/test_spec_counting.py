"""The simulated engine counts speculation as the real one did, after the same requests.

The real capture (``tests/fixtures/sglang-0.5.23-real``: patched SGLang 0.5.23 on one H200, the tiny
target with the always-accepted EAGLE-3 head, 3/1/4 adaptive, ``--decode-log-interval 10``) holds:

* ``metrics-idle-after-start.prom``: the page after start, when only SGLang's own warm-up request
  (6 prompt tokens, 8 out) had run;
* ``engine.log``: from "ready to roll", ``agent smoke``'s four non-streaming requests of 48 tokens
  (threshold 32 as launched; threshold 1; threshold 0; steps pinned to 1, each set through
  ``/set_internal_state``) with SGLang's decode log every 10 passes. A decode-log line and the
  ``sglang:spec_accept_length`` / ``spec_accept_rate`` gauges are set in the same place
  (``report_decode_stats``), so the last line before a request's response is the gauge after it;
  ``avg_spec_accept_length`` is the lifetime sum of the lines' windows (``_average_accept_length``),
  each 10 passes of one request at c=1.

The simulated server gets the same requests over HTTP and must give the same answers. The old sim
restarted its decode-log count whenever it went idle, so a request shorter than the interval was
never reported (three 64-token requests on the Kimi profile: gauge 0, no average); and it had no
warm-up and no overlap ride, which move every window boundary here.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent.profile.store import load_profile
from agent.sglang.live_control import LIVE_STEPS_KEY, LIVE_THRESHOLD_KEY
from agent.sim.server import RunningSim, run_sim

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "fixtures" / "sglang-0.5.23-real"
TINY_ORACLE = REPO / "tests" / "smoke" / "profile-tiny-oracle.toml"
PROMPT = " ".join(["word"] * 8)  # the smoke's prompt: 8 tokens ("#new-token: 8" in the log)
SMOKE_SETTINGS: tuple[dict[str, int] | None, ...] = (
    None,  # as launched: threshold 32
    {LIVE_THRESHOLD_KEY: 1},  # never speculate
    {LIVE_THRESHOLD_KEY: 0},  # always
    {LIVE_STEPS_KEY: 1},  # steps pinned to 1
)
DECODE_LINE = re.compile(r"Decode batch, #running-req: (\d+), .*accept len: ([\d.]+), accept rate: ([\d.]+),")


@dataclass(frozen=True)
class Answer:
    accept_length: float
    accept_rate: float
    average: float | None


def real_answers_after_the_smoke_requests() -> list[Answer]:
    """From the real engine log: the gauges and the lifetime average after each smoke request."""
    lines = (REAL / "engine.log").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "ready to roll" in line)
    answers: list[Answer] = []
    last: tuple[float, float] | None = None
    accepted = forwards = 0.0
    for line in lines[start:]:
        if (m := DECODE_LINE.search(line)) is not None:
            assert m.group(1) == "1"  # c=1: each window is 10 passes of one request
            last = float(m.group(2)), float(m.group(3))
            accepted += last[0] * 10
            forwards += 10
        elif '"POST /generate HTTP/1.1" 200' in line:
            assert last is not None
            answers.append(Answer(last[0], last[1], accepted / forwards))
            if len(answers) == len(SMOKE_SETTINGS):
                return answers
    raise AssertionError("the engine log holds fewer smoke requests than expected")


def _gauges(page: str) -> dict[str, float]:
    """Each sample's value by name (``[mode]`` added where the family has that label), summed over
    the other labels (``is_streaming``, the ranks)."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(page):
        for sample in family.samples:
            mode = sample.labels.get("mode")
            key = sample.name + (f"[{mode}]" if mode else "")
            out[key] = out.get(key, 0.0) + sample.value
    return out


@pytest.fixture
async def tiny_oracle() -> AsyncIterator[RunningSim]:
    """The captures' profile with the always-accepted head. The sim sizes its KV pool from Kimi's
    memory figures, in which one H200 holds nothing: tp 8 gives it a pool (counting does not use it)."""
    profile = load_profile(TINY_ORACLE)
    server = profile.server.model_copy(update={"tp_size": 8, "mem_fraction_static": None})
    profile = profile.model_copy(update={"server": server})
    async with run_sim(profile, speedup=50, seed=3, draft_acceptance="oracle") as sim:
        yield sim


async def test_after_the_warm_up_the_sim_counts_what_the_real_server_counted(tiny_oracle: RunningSim) -> None:
    real = _gauges((REAL / "metrics-idle-after-start.prom").read_text())
    async with httpx.AsyncClient(base_url=tiny_oracle.url) as client:
        sim = _gauges((await client.get("/metrics")).text)
        state = (await client.get("/server_info")).json()["internal_states"][0]
    for name in (
        "sglang:num_requests_total",
        "sglang:prompt_tokens_total",
        "sglang:generation_tokens_total",
        "sglang:spec_verify_calls_total",
        "sglang:cuda_graph_passes_total[decode_cuda_graph]",
        "sglang:realtime_tokens_total[decode]",
        "sglang:spec_accept_length",
    ):
        assert sim[name] == real[name], name
    # the warm-up's two verify calls took three decode passes: the overlap ride
    passes = real["sglang:cuda_graph_passes_total[decode_cuda_graph]"]
    assert (real["sglang:spec_verify_calls_total"], passes) == (2, 3)
    assert "avg_spec_accept_length" not in state  # 3 passes: no decode-log window yet


async def test_after_each_smoke_request_the_sim_answers_as_the_real_server_did(
    tiny_oracle: RunningSim,
) -> None:
    real = real_answers_after_the_smoke_requests()
    assert [a.accept_length for a in real] == [4.0, 1.0, 3.1, 2.0]  # the capture, as parsed
    sim: list[Answer] = []
    async with httpx.AsyncClient(base_url=tiny_oracle.url, timeout=30) as client:
        for setting in SMOKE_SETTINGS:
            if setting is not None:
                answer = await client.post("/set_internal_state", json={"server_args": setting})
                assert answer.json() == [True]
            body = {"text": PROMPT, "sampling_params": {"max_new_tokens": 48, "ignore_eos": True}}
            meta = (await client.post("/generate", json=body)).json()["meta_info"]
            assert meta["completion_tokens"] == 48
            page = _gauges((await client.get("/metrics")).text)
            state = (await client.get("/server_info")).json()["internal_states"][0]
            sim.append(
                Answer(
                    page["sglang:spec_accept_length"],
                    page["sglang:spec_accept_rate"],
                    state.get("avg_spec_accept_length"),
                )
            )
    for got, want in zip(sim, real, strict=True):
        assert got.accept_length == pytest.approx(want.accept_length, abs=0.005)
        assert got.accept_rate == pytest.approx(want.accept_rate, abs=0.005)
        assert got.average == pytest.approx(want.average, abs=1e-9)


async def test_three_short_requests_on_the_kimi_profile_are_reported() -> None:
    """The issue's case: three non-streaming 64-token requests at c=1 on the Kimi profile (decode log
    every 40 passes, about 26 passes a request) cross the interval together, as on the real server."""
    profile = load_profile(REPO / "profiles" / "kimi-k25-eagle3.toml")
    async with run_sim(profile, speedup=20, seed=4) as sim, httpx.AsyncClient(base_url=sim.url) as client:
        for i in range(3):
            body = {"text": f"request {i}", "sampling_params": {"max_new_tokens": 64, "ignore_eos": True}}
            assert (await client.post("/generate", json=body, timeout=60)).status_code == 200
        page = _gauges((await client.get("/metrics")).text)
        state = (await client.get("/server_info")).json()["internal_states"][0]
    assert page["sglang:spec_accept_length"] > 1.0
    assert state["avg_spec_accept_length"] > 1.0
