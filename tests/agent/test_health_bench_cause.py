"""Issue 39, item 7: the agent's own benchmark does not raise an alarm about itself. Against the real
agent on the simulated engine; fails on the code before issue 39, where a benchmark's load raised
"Time to first token p99 ... s, over the target" as a warning that advised tuning the server, with
no word that the benchmark's own requests caused it.

The choice (``agent.telemetry.bench_load``): the finding still shows (the number is real, and a
benchmark on a server with clients slows them), but it names the benchmark in its title, is info,
and says nothing is to be changed for it, until the telemetry windows no longer hold the run's
requests."""

from __future__ import annotations

from typing import Any

import pytest
from daemon_harness import read_stream

from agent.wire import Snapshot

pytestmark = pytest.mark.slow

HEALTH = "\n[health]\nttft_p99_target_s = 1.0\n"
LOAD = {"mode": "sweep", "concurrency": [48], "requests_per_level": 400, "input_len": 2900, "output_len": 200,
        "warmup_requests": 0}  # fmt: skip


def _ttft(data: dict[str, Any]) -> bool:
    return any(f["code"] == "ttft_over_target" for f in data["findings"])


async def test_a_finding_the_agents_benchmark_caused_names_it_and_raises_no_alarm(make_agent: Any) -> None:
    agent = make_agent("sim-bench-load")
    text = agent.profile.read_text().replace("[server]\n", "[server]\nmax_total_tokens = 40000\n", 1)
    agent.profile.write_text(text + HEALTH)
    agent.start().wait_state("ready")
    async with agent.client() as c:
        since = (await c.get("/v1/status")).json()["last_seq"]
        started = await c.post("/v1/bench", json=LOAD)
        assert started.status_code == 202, started.text
        bench_id = started.json()["bench_id"]
        try:
            items = await read_stream(c, since, lambda it: it[-1][0] == "snapshot" and _ttft(it[-1][1]), 120)
        finally:
            await c.post(f"/v1/bench/{bench_id}/cancel")
        status = (await c.get("/v1/status")).json()
    snap = Snapshot.model_validate(items[-1][1])
    f = next(f for f in snap.findings if f.code == "ttft_over_target")
    assert f.value is not None and f.value > 1.0
    assert f.severity == "info" and f"from the agent's benchmark {bench_id}" in f.title, f
    assert f.action.startswith("Nothing to change for the benchmark's load"), f.action
    assert status["engine_state"] == "ready"
