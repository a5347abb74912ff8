"""The agent's Prometheus page: a real daemon (not started) whose stream is fed snapshots and events,
its exporter scraped through prometheus-client's own HTTP server and parsed by its own parser.

The e2e test (tests/e2e/test_prometheus.py) scrapes a running agent with a real Prometheus; these
tests pin what each series says for states that are slow or impossible to reach on the simulator.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families

from agent.bench.store import BenchStore
from agent.profile import load_profile
from agent.serve.daemon import Daemon, ServeConfig
from agent.serve.exporter import ENGINE_STATES, OFF_REASONS, AgentExporter
from agent.serve.listen import ListenError
from agent.serve.metrics_http import MetricsServer, parse_metrics_listen, start_metrics_server
from agent.serve.paths import StatePaths
from agent.wire import ActionRequest, Finding, Snapshot, Speculation
from agent.wire.bench_result import BenchResult

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    profile_path = REPO / "profiles" / "local-sim.toml"
    profile = load_profile(profile_path)
    paths = StatePaths(tmp_path / "state").prepare()
    config = ServeConfig(
        profile=profile,
        profile_path=profile_path,
        profiles_dir=profile_path.parent,
        engine="sim",
        paths=paths,
    )
    d = Daemon(config, token="t" * 43)
    d.supervisor.profile = profile  # what begin() sets: the profile that runs
    yield d


@pytest.fixture
def served(daemon: Daemon) -> Iterator[MetricsServer]:
    exporter = AgentExporter()
    exporter.attach(daemon)
    server = start_metrics_server("127.0.0.1", 0, exporter)  # port 0: the kernel picks (tests only)
    try:
        yield server
    finally:
        server.close()


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(server: MetricsServer) -> tuple[Samples, dict[str, Metric]]:
    text = httpx.get(server.url, timeout=5).text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples: Samples = {}
    for family in families.values():
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples, families


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def snap(
    seq: int, *, on: bool | None, reason: str | None = None, findings: Iterable[Finding] = (), **spec: object
) -> Snapshot:
    speculation = Speculation(configured=True, on=on, off_reason=reason, **spec)  # type: ignore[arg-type]
    return Snapshot(seq=seq, time=1000.0 + seq, speculation=speculation, findings=list(findings))


def finding(code: str, severity: str = "warning") -> Finding:
    return Finding(code=code, severity=severity, title=code, explanation="e", action="a")  # type: ignore[arg-type]


def publish(daemon: Daemon, s: Snapshot) -> None:
    daemon.hub.publish_snapshot(lambda seq: s.model_copy(update={"seq": seq}))


def test_speculation_series_follow_the_latest_snapshot(daemon: Daemon, served: MetricsServer) -> None:
    publish(
        daemon,
        snap(
            1,
            on=True,
            threshold=12,
            threshold_available=True,
            steps=3,
            pinned_steps=-1,
            topk=1,
            draft_tokens=4,
            accept_length=2.75,
            accept_rate=0.58,
        ),
    )
    samples, _ = scrape(served)
    assert value(samples, "k25_speculation_on") == 1
    assert value(samples, "k25_speculation_threshold_requests") == 12
    assert value(samples, "k25_speculation_threshold_available") == 1
    assert value(samples, "k25_speculation_steps") == 3
    assert value(samples, "k25_speculation_steps_pinned") == -1
    assert value(samples, "k25_speculation_accept_length_tokens") == 2.75
    assert value(samples, "k25_speculation_accept_ratio") == 0.58
    assert all(value(samples, "k25_speculation_off_reason", reason=r) == 0 for r in OFF_REASONS)

    publish(
        daemon, snap(2, on=False, reason="above_threshold", threshold=12, threshold_available=True, steps=0)
    )
    samples, _ = scrape(served)
    assert value(samples, "k25_speculation_on") == 0
    assert value(samples, "k25_speculation_steps") == 0
    assert value(samples, "k25_speculation_off_reason", reason="above_threshold") == 1
    assert sum(value(samples, "k25_speculation_off_reason", reason=r) or 0 for r in OFF_REASONS) == 1
    # Unknown values are absent, never a made-up 0.
    assert value(samples, "k25_speculation_accept_length_tokens") is None


def test_unknown_speculation_state_has_no_on_series_but_says_why(
    daemon: Daemon, served: MetricsServer
) -> None:
    publish(daemon, snap(1, on=None, reason="engine_down"))
    samples, _ = scrape(served)
    assert value(samples, "k25_speculation_on") is None
    assert value(samples, "k25_speculation_off_reason", reason="engine_down") == 1


def test_switches_are_counted_between_every_snapshot_not_only_at_scrapes(
    daemon: Daemon, served: MetricsServer
) -> None:
    for seq, on in enumerate([True, False, False, True, False, None, False], start=1):
        publish(daemon, snap(seq, on=on, reason=None if on else "above_threshold"))
    samples, families = scrape(served)
    # on→off, off→on, on→off; the unknown in between is not a switch (as the stream's events say).
    assert value(samples, "k25_speculation_switches_total", to="off") == 2
    assert value(samples, "k25_speculation_switches_total", to="on") == 1
    assert families["k25_speculation_switches"].type == "counter"


def test_one_series_per_finding_code_and_a_cleared_one_reads_zero(
    daemon: Daemon, served: MetricsServer
) -> None:
    publish(daemon, snap(1, on=True, findings=[finding("queueing", "info"), finding("retractions")]))
    samples, _ = scrape(served)
    assert value(samples, "k25_finding_active", code="queueing", severity="info") == 1
    assert value(samples, "k25_finding_active", code="retractions", severity="warning") == 1

    # Raised and cleared again between two scrapes: still a series, at 0.
    publish(
        daemon, snap(2, on=True, findings=[finding("queueing", "info"), finding("gpu_power_cap", "info")])
    )
    publish(daemon, snap(3, on=True, findings=[finding("queueing", "info")]))
    samples, _ = scrape(served)
    assert value(samples, "k25_finding_active", code="queueing", severity="info") == 1
    assert value(samples, "k25_finding_active", code="retractions", severity="warning") == 0
    assert value(samples, "k25_finding_active", code="gpu_power_cap", severity="info") == 0


def test_engine_state_is_one_series_per_state(daemon: Daemon, served: MetricsServer) -> None:
    daemon.supervisor.state = "crash_loop"
    daemon.supervisor.restarts = 4
    daemon.supervisor.failures = 5
    samples, families = scrape(served)
    assert {s: value(samples, "k25_engine_state", state=s) for s in ENGINE_STATES} == {
        s: (1.0 if s == "crash_loop" else 0.0) for s in ENGINE_STATES
    }
    assert value(samples, "k25_engine_restarts_total") == 4
    assert value(samples, "k25_engine_consecutive_failures") == 5
    assert families["k25_engine_restarts"].type == "counter"


def test_engine_crashes_are_counted_from_the_engine_events(daemon: Daemon, served: MetricsServer) -> None:
    for _ in range(2):
        daemon.emit("engine", "engine.crashed", "The engine stopped unexpectedly", {"pid": 1})
    daemon.emit("engine", "engine.ready", "The engine is ready", {})
    samples, _ = scrape(served)
    assert value(samples, "k25_engine_crashes_total") == 2


async def test_applied_actions_are_counted_by_kind_and_mode(daemon: Daemon, served: MetricsServer) -> None:
    same = daemon.profile.speculation.threshold
    for n in range(2):
        plan = daemon.actions.plan(
            ActionRequest(request_id=f"req-noop-{n:04d}", kind="threshold", value=same)
        )
        assert plan.mode == "noop"
        result = await daemon.actions.confirm(plan.action_id)
        assert result is not None and result.status == "applied"
    rejected = daemon.actions.plan(ActionRequest(request_id="req-bad-0001", kind="topk", value=0))
    assert rejected.mode == "rejected"
    samples, _ = scrape(served)
    assert value(samples, "k25_actions_applied_total", kind="threshold", mode="noop") == 2
    assert value(samples, "k25_actions_applied_total", kind="topk", mode="rejected") is None


def _bench_record(store: BenchStore, bench_id: str, threshold: int, crossover: float | None) -> None:
    store.save(
        BenchResult.model_validate(
            {
                "bench_id": bench_id,
                "mode": "compare",
                "state": "finished",
                "finished_at": 1_700_000_000.0,
                "recommended_threshold": threshold,
                "recommendation": {"threshold": threshold, "crossover": crossover},
            }
        )
    )


def test_last_benchmark_is_read_from_the_store_and_follows_bench_finished(
    daemon: Daemon, served: MetricsServer
) -> None:
    store = BenchStore(daemon.paths.root)
    _bench_record(store, "20260101-000000-aaaaaa", 96, 90.5)
    store.save(BenchResult(bench_id="20260102-000000-bbbbbb", mode="compare", state="failed", error="x"))
    samples, _ = scrape(served)
    assert value(samples, "k25_bench_recommended_threshold_requests") == 96
    assert value(samples, "k25_bench_crossover_requests") == 90.5
    assert value(samples, "k25_bench_last_info", bench_id="20260101-000000-aaaaaa", mode="compare") == 1

    _bench_record(store, "20260103-000000-cccccc", 0, None)  # off never won: speculate at every size
    daemon.emit("bench", "bench.finished", "benchmark finished", {"bench_id": "20260103-000000-cccccc"})
    samples, _ = scrape(served)
    assert value(samples, "k25_bench_recommended_threshold_requests") == 0
    assert value(samples, "k25_bench_crossover_requests") is None


def test_no_benchmark_no_bench_series(served: MetricsServer) -> None:
    samples, _ = scrape(served)
    assert not [k for k in samples if k[0].startswith("k25_bench")]


def test_names_follow_prometheus_conventions_and_hold_nothing_secret(
    daemon: Daemon, served: MetricsServer
) -> None:
    publish(daemon, snap(1, on=True, threshold=4, threshold_available=True, findings=[finding("queueing")]))
    daemon.emit("engine", "engine.crashed", "crashed", {})
    text = httpx.get(served.url, timeout=5).text
    assert daemon.token not in text
    _, families = scrape(served)
    ours = {name: f for name, f in families.items() if not name.startswith("process_")}
    assert ours and all(name.startswith("k25_") for name in ours)
    for name, family in ours.items():
        assert family.documentation, name
        assert re.fullmatch(r"k25_[a-z0-9_]+", name), name
        if family.type == "counter":
            assert all(s.name.endswith("_total") for s in family.samples), name
        else:
            assert not name.endswith("_total"), name
    assert "process_cpu_seconds" in families  # the agent process's own, from prometheus-client


class _Autopilot:
    def collect(self) -> Iterable[Metric]:
        yield GaugeMetricFamily("k25_autopilot_enabled", "test source", value=1)


class _Broken:
    def collect(self) -> Iterable[Metric]:
        raise RuntimeError("boom")


def test_sources_add_their_families_and_a_broken_one_does_not_take_the_page_down(
    daemon: Daemon, served: MetricsServer
) -> None:
    served.exporter.add_source(_Broken())
    served.exporter.add_source(_Autopilot())
    samples, _ = scrape(served)
    assert value(samples, "k25_autopilot_enabled") == 1
    assert value(samples, "k25_engine_restarts_total") == 0


@pytest.mark.parametrize(
    ("text", "allow_any", "expected"),
    [
        ("127.0.0.1:9464", False, ("127.0.0.1", 9464)),
        ("localhost:9464", False, ("127.0.0.1", 9464)),
        ("[::1]:9464", False, ("::1", 9464)),
        ("0.0.0.0:9464", True, ("0.0.0.0", 9464)),
        ("[::]:9464", True, ("::", 9464)),
    ],
)
def test_metrics_listen_accepts(text: str, allow_any: bool, expected: tuple[str, int]) -> None:
    assert parse_metrics_listen(text, allow_any=allow_any) == expected


@pytest.mark.parametrize(
    ("text", "allow_any", "says"),
    [
        ("0.0.0.0:9464", False, "--metrics-listen-any"),
        ("10.1.2.3:9464", False, "not a loopback address"),
        ("gpu-host:9464", True, "must be an IP address"),
        ("127.0.0.1", False, "expected HOST:PORT"),
        ("127.0.0.1:0", False, "port must be 1-65535"),
        ("127.0.0.1:70000", False, "port must be 1-65535"),
    ],
)
def test_metrics_listen_refuses(text: str, allow_any: bool, says: str) -> None:
    with pytest.raises(ListenError, match=re.escape(says)) as err:
        parse_metrics_listen(text, allow_any=allow_any)
    assert "--metrics-listen" in str(err.value)


def _serve(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "agent.cli.main", "serve", "--engine", "sim", "--gpus", "none"]
    argv += ["--profile", str(REPO / "profiles" / "local-sim.toml"), "--state-dir", str(tmp_path / "state")]
    return subprocess.run([*argv, *extra], capture_output=True, text=True, timeout=60, cwd=REPO)


def test_serve_refuses_a_public_metrics_address_before_touching_anything(tmp_path: Path) -> None:
    done = _serve(tmp_path, "--metrics-listen", "0.0.0.0:9464")
    assert done.returncode == 2
    assert "--metrics-listen '0.0.0.0:9464'" in done.stderr and "--metrics-listen-any" in done.stderr
    assert not (tmp_path / "state").exists()
    lonely = _serve(tmp_path, "--metrics-listen-any")
    assert lonely.returncode == 2 and "needs --metrics-listen HOST:PORT" in lonely.stderr


def test_serve_with_a_taken_metrics_port_exits_before_the_engine_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve(tmp_path, "--metrics-listen", f"127.0.0.1:{port}")
    assert done.returncode == 2, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert not (tmp_path / "state" / "engine.json").exists()  # no engine was launched
    assert not (tmp_path / "state" / "run" / "agent.sock").exists()  # and the API socket is gone
