"""The benchmark's guards against the real agent: said before any load is sent, and a quiet stream.

A production profile's server gets load only when the request repeats the profile's name; a compare
that cannot force speculation off is refused before it starts, with SGLang's reason; progress
reaches the stream coalesced, and every run's start and end carry its line of the run history.
"""

from __future__ import annotations

import itertools
import re
import time
from typing import Any

import pytest
from daemon_harness import Agent, read_stream

from agent.bench.runner import BEFORE_WINDOWS

pytestmark = pytest.mark.slow

QUICK = {"mode": "sweep", "concurrency": [1], "requests_per_level": 1, "input_len": 16, "output_len": 4,
         "warmup_requests": 0, "min_level_seconds": 0}  # fmt: skip


def _edit_profile(agent: Agent, *replacements: tuple[str, str]) -> None:
    """Each (regex, replacement) must match the profile."""
    text = agent.profile.read_text()
    for old, new in replacements:
        text, n = re.subn(old, new, text, flags=re.MULTILINE)
        assert n, old
    agent.profile.write_text(text)


def _stored_runs(agent: Agent) -> list[str]:
    return sorted(p.name for p in (agent.state_dir / "bench").glob("*.json"))


async def test_a_production_bench_needs_the_profiles_name_typed(make_agent: Any) -> None:
    agent: Agent = make_agent("sim-prod")
    _edit_profile(agent, ("production = false", "production = true"))
    agent.start().wait_state("ready")
    async with agent.client() as c:
        since = (await c.get("/v1/status")).json()["last_seq"]
        bare = await c.post("/v1/bench", json={**QUICK, "concurrency": [1, 250]})
        wrong = await c.post("/v1/bench", json={**QUICK, "confirm_production": "sim-pro"})
        assert _stored_runs(agent) == []  # nothing was started, nothing recorded
        right = await c.post("/v1/bench", json={**QUICK, "confirm_production": "sim-prod"})
        assert right.status_code == 202, right.text
        bench_id = right.json()["bench_id"]
        items = await read_stream(
            c, since, lambda it: any(d.get("name") == "bench.finished" for k, d in it if k == "event"), 60
        )
        runs = (await c.get("/v1/bench")).json()["runs"]
    assert bare.status_code == 422
    detail = bare.json()["detail"]
    assert detail.startswith("confirm_production: sim-prod is a production profile")
    assert "up to 250 concurrent requests" in detail
    assert wrong.status_code == 422 and "(got “sim-pro”)" in wrong.json()["detail"]
    started = [d for k, d in items if k == "event" and d["name"] == "bench.started"]
    assert [d["data"]["bench_id"] for d in started] == [bench_id]  # only the confirmed one ran
    assert runs[0]["bench_id"] == bench_id and runs[0]["profile"] == "sim-prod"


async def test_a_compare_without_a_live_threshold_is_refused_before_it_starts(make_agent: Any) -> None:
    agent: Agent = make_agent("sim-tree")
    _edit_profile(
        agent,
        ("eagle_topk = 1", "eagle_topk = 4"),
        ("num_draft_tokens = 4", "num_draft_tokens = 16"),
        ("adaptive = true", "adaptive = false"),
        (r"^threshold = \d+\n", ""),
        (r"^live_steps = \[1, 2, 3\]\n", ""),
    )
    agent.start().wait_state("ready")
    async with agent.client() as c:
        started = time.monotonic()
        compare = await c.post("/v1/bench", json={**QUICK, "mode": "compare"})
        refused_in = time.monotonic() - started
        assert _stored_runs(agent) == []
        sweep = await c.post("/v1/bench", json=QUICK)
    assert compare.status_code == 422
    detail = compare.json()["detail"]
    assert detail.startswith("mode: a compare needs the live speculation threshold")
    assert "speculative_adaptive" in detail and "Run a sweep" in detail and "baseline_url" in detail
    assert refused_in < 5  # answered at once, not after measuring a level
    assert sweep.status_code == 202, sweep.text  # the server as configured can still be measured


async def test_bench_progress_reaches_the_stream_coalesced_and_the_end_carries_the_history_line(
    shared_agent: Agent,
) -> None:
    body = {**QUICK, "concurrency": [1, 2, 3, 4], "requests_per_level": 2, "min_level_seconds": 0.5}
    async with shared_agent.client() as c:
        since = (await c.get("/v1/status")).json()["last_seq"]
        started = await c.post("/v1/bench", json=body)
        assert started.status_code == 202, started.text
        items = await read_stream(
            c, since, lambda it: any(d.get("name") == "bench.finished" for k, d in it if k == "event"), 120
        )
        runs = (await c.get("/v1/bench")).json()["runs"]
    bench = [d for k, d in items if k == "event" and d["kind"] == "bench"]
    progress = [d for d in bench if d["name"] == "bench.progress"]
    duration = bench[-1]["time"] - bench[0]["time"]
    # One progress event per level (four levels) was what flooded the log; now one per 5 s at most,
    # but for the one that ends a phase before the windows (probing, waiting), sent at once.
    phases = [p["data"]["phase"] for p in progress]
    coalesced = [
        p for i, p in enumerate(progress)
        if not (i and phases[i - 1] in BEFORE_WINDOWS and phases[i] != phases[i - 1])
    ]  # fmt: skip
    assert len(coalesced) < len(progress) and phases[0] == "probing"
    assert 1 <= len(coalesced) <= 1 + int(duration / 5.0), [p["message"] for p in progress]
    gaps = [b["time"] - a["time"] for a, b in itertools.pairwise(coalesced)]
    assert all(g >= 4.9 for g in gaps)
    assert "eta_s" in progress[0]["data"] and "elapsed_s" in progress[0]["data"]
    end = bench[-1]
    assert end["name"] == "bench.finished"
    line = next(r for r in runs if r["bench_id"] == started.json()["bench_id"])
    # the event carries the run's history line as GET /v1/bench lists it (and that the agent ran it)
    assert end["data"] == {**line, "external": False}
    assert line["state"] == "finished" and line["profile"] == "sim-shared"
