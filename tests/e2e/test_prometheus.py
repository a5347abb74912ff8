"""The agent in an operator's monitoring stack: a real Prometheus scrapes a real ``agent serve --engine
sim --metrics-listen`` and the simulated engine's own ``/metrics`` (SGLang's names), and answers PromQL.

One test walks the story, because each step needs the state the previous one left: Prometheus sees the
agent, the threshold moved through the agent's API shows up as the new value, load on the simulator
raises a finding (a series per finding code) and moving the threshold below the running batch switches
speculation off (counted), the finding clears (0, not gone), a benchmark's recommendation arrives, and
at the end every PromQL expression of the Grafana dashboard is evaluated by that Prometheus.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
from agent_harness import REPO, AgentProc, prepare_profiles, short_root

from agent.profile import load_profile

from .prometheus import Prometheus, prometheus_binary, running_prometheus
from .sshd import free_port
from .waiting import until

DASHBOARD = REPO / "deploy" / "grafana" / "k25console.json"
MAX_RUNNING = 4
"""The test profile's max_running_requests: a few streams fill it and the rest queue."""
LOAD_STREAMS = 8
WAIT_S = 30.0

GRAFANA_VARIABLES = {"$__rate_interval": "15s", "$__interval": "5s", "$__range": "5m"}
"""What Grafana substitutes before it sends a query; every $ in the dashboard must be one of these."""

if prometheus_binary() is None:
    # Never skipped: a missing Prometheus fails loudly (`./dev test` installs it as root, or says how).
    raise RuntimeError("this test runs a real Prometheus: apt-get install --no-install-recommends prometheus")


@contextlib.contextmanager
def agent_with_metrics() -> Iterator[tuple[AgentProc, int]]:
    root = short_root("k25prom-")
    edit = lambda text: text.replace(  # noqa: E731
        "max_running_requests = 256", f"max_running_requests = {MAX_RUNNING}"
    )
    port = free_port()
    agent = AgentProc(
        root=root,
        profile=prepare_profiles(root, edit=edit),
        extra_args=["--metrics-listen", f"127.0.0.1:{port}"],
    )
    try:
        agent.start()
        yield agent, port
    finally:
        agent.stop()
        shutil.rmtree(root, ignore_errors=True)


@contextlib.asynccontextmanager
async def load(engine_url: str, streams: int) -> AsyncIterator[None]:
    """``streams`` long streaming requests on the engine, read as they come, cancelled on exit."""
    body = {"text": "tell me a long story", "stream": True,
            "sampling_params": {"max_new_tokens": 20_000, "ignore_eos": True}}  # fmt: skip

    async def one(client: httpx.AsyncClient) -> None:
        async with client.stream("POST", f"{engine_url}/generate", json=body) as r:
            async for _ in r.aiter_raw():
                pass

    async with httpx.AsyncClient(timeout=None) as client:
        tasks = [asyncio.create_task(one(client)) for _ in range(streams)]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def apply(agent: AgentProc, kind: str, value: int) -> dict[str, Any]:
    async with agent.aclient() as c:
        plan = await c.post(
            "/v1/actions", json={"request_id": f"prom-{kind}-{time.time_ns()}", "kind": kind, "value": value}
        )
        plan.raise_for_status()
        assert plan.json()["mode"] == "live", plan.json()
        done = await c.post(f"/v1/actions/{plan.json()['action_id']}/confirm")
        done.raise_for_status()
        result: dict[str, Any] = done.json()
    assert result["status"] == "applied", result
    return result


async def run_bench(agent: AgentProc) -> dict[str, Any]:
    """A small compare through the agent's API; returns its stored record once the stream says it ended."""
    body = {"mode": "compare", "concurrency": [1, 2], "requests_per_level": 2, "input_len": 32,
            "output_len": 8, "warmup_requests": 0, "min_level_seconds": 0}  # fmt: skip
    ended = {"bench.finished", "bench.failed", "bench.cancelled"}
    async with agent.aclient() as c:
        since = (await c.get("/v1/status")).json()["last_seq"]
        started = await c.post("/v1/bench", json=body)
        assert started.status_code == 202, started.text
        bench_id = started.json()["bench_id"]

        async def until_it_ends() -> None:
            async with c.stream("GET", "/v1/stream", params={"since": since}, timeout=None) as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("data: "):
                        item = json.loads(line.removeprefix("data: "))
                        if item.get("name") in ended and item.get("data", {}).get("bench_id") == bench_id:
                            return

        await asyncio.wait_for(until_it_ends(), 120)
        record: dict[str, Any] = (await c.get(f"/v1/bench/{bench_id}")).json()
    assert record["state"] == "finished", record.get("error")
    return record


def dashboard_expressions() -> list[tuple[str, str]]:
    """(where, expr) for every target of every panel and every annotation of the dashboard."""
    board = json.loads(DASHBOARD.read_text())
    found = [(f"annotation {a['name']!r}", a["expr"]) for a in board["annotations"]["list"] if "expr" in a]
    for panel in board["panels"]:
        for t in panel.get("targets", []):
            found.append((f"panel {panel['title']!r} target {t['refId']}", t["expr"]))
    return found


def as_sent(expr: str) -> str:
    for name, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(name, value)
    assert "$" not in expr, f"{expr}: a Grafana variable the test does not know"
    return expr


def names_in(expr: str) -> set[str]:
    return set(re.findall(r"\b(k25_[a-z0-9_]+|sglang:[A-Za-z0-9_:]+)", expr))


async def test_prometheus_scrapes_the_agent_and_the_dashboard_queries_evaluate() -> None:
    with agent_with_metrics() as (agent, metrics_port):
        engine_url = agent.status()["engine_url"]
        engine = urlsplit(engine_url).netloc
        with running_prometheus(
            agent.root / "prometheus", {"k25-agent": f"127.0.0.1:{metrics_port}", "sglang": engine}
        ) as prom:
            await scenario(agent, engine_url, prom)


async def scenario(agent: AgentProc, engine_url: str, prom: Prometheus) -> None:
    shipped = agent.status()
    await until(lambda: prom.targets_up() == {"k25-agent": 1.0, "sglang": 1.0}, timeout_s=WAIT_S,
                what="both targets up")  # fmt: skip
    await until(
        lambda: prom.value('k25_engine_state{state="ready"}') == 1, timeout_s=WAIT_S, what="engine ready"
    )
    threshold = prom.value("k25_speculation_threshold_requests")
    profiled = load_profile(shipped["profile_path"]).speculation.threshold
    assert profiled not in (None, 64)  # the move below must be a change
    assert threshold == profiled, f"the profile's threshold, read back from the engine (status {shipped})"

    # The threshold moved through the agent's API is what Prometheus has next.
    await apply(agent, "threshold", 64)
    await until(
        lambda: prom.value("k25_speculation_threshold_requests") == 64,
        timeout_s=WAIT_S,
        what="threshold 64 in Prometheus",
    )
    assert prom.value('k25_actions_applied_total{kind="threshold",mode="live"}') == 1

    async with load(engine_url, LOAD_STREAMS):
        # More streams than max_running_requests: the agent raises "queueing", one series for the code.
        await until(
            lambda: prom.value('k25_finding_active{code="queueing"}') == 1,
            timeout_s=WAIT_S,
            what="the queueing finding as a series",
        )
        # The engine's own page is scraped on its own schedule: the queue shows up there by the next scrape.
        await until(
            lambda: prom.value('sum(sglang:num_queue_reqs{job="sglang"})') == LOAD_STREAMS - MAX_RUNNING,
            timeout_s=WAIT_S,
            what="the engine's queue in Prometheus",
        )
        assert prom.value("k25_speculation_on") == 1
        await until(
            lambda: prom.value("k25_speculation_accept_length_tokens") is not None,
            timeout_s=WAIT_S,
            what="an accept length while speculating",
        )
        # A threshold below the running batch: the engine stops speculating, and says why.
        await apply(agent, "threshold", 2)
        await until(
            lambda: (
                prom.value('k25_speculation_switches_total{to="off"}') == 1
                and prom.value('k25_speculation_off_reason{reason="above_threshold"}') == 1
            ),
            timeout_s=WAIT_S,
            what="a switch to off, above the threshold",
        )
        assert prom.value("k25_speculation_on") == 0
        assert prom.value("k25_speculation_threshold_requests") == 2
    # The load is gone: the finding clears and reads 0 (still one series per code seen).
    await until(
        lambda: prom.value('k25_finding_active{code="queueing"}') == 0,
        timeout_s=WAIT_S,
        what="the queueing finding cleared",
    )

    record = await run_bench(agent)
    await until(
        lambda: prom.value("k25_bench_recommended_threshold_requests") == record["recommended_threshold"],
        timeout_s=WAIT_S,
        what="the benchmark's recommendation in Prometheus",
    )
    crossover = (record.get("recommendation") or {}).get("crossover")
    assert prom.value("k25_bench_crossover_requests") == crossover

    # Every expression of the Grafana dashboard evaluates, and names only series that exist.
    known = prom.metric_names()
    may_be_absent = set() if crossover is not None else {"k25_bench_crossover_requests"}
    # The minute's rejected and wasted drafts exist once requests finished while drafting (the load
    # above never finishes; the benchmark's levels may all have run with speculation off).
    may_be_absent |= {
        "k25_speculation_rejected_draft_ratio",
        "k25_speculation_wasted_draft_seconds_per_minute",
    }
    expressions = dashboard_expressions()
    assert len(expressions) >= 25
    for where, expr in expressions:
        prom.query(as_sent(expr))  # PromQLError names the expression and Prometheus' reason
        missing = names_in(expr) - known - may_be_absent
        assert not missing, f"{where}: {expr}: no such series in Prometheus: {sorted(missing)}"
    # The switch annotation finds the switch it should mark.
    off = next(e for w, e in expressions if w == "annotation 'Speculation off'")
    assert prom.api("query", query=as_sent(off).replace("[5s]", "[10m]"))["result"]
