"""SGLang's router's own view of its workers, read from the real router's answers (smg 1.13.0's
``/workers`` and its metrics page, in front of three simulated engines, one killed:
``tests/console/data/``), and read over a real socket with its size limits."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agent.sglang.router import MAX_METRICS_BYTES, parse_workers, read_router
from agent.sglang.router_metrics import parse_metrics

CAPTURE = Path(__file__).parents[1] / "console" / "data" / "smg-1.13.0-workers.json"


def test_the_captured_view_names_the_unhealthy_worker_and_each_ones_load() -> None:
    data = json.loads(CAPTURE.read_text())
    view = parse_workers("http://r", data, 1.0)
    assert view.reachable and view.error is None
    assert [w.url for w in view.workers] == [w["url"] for w in data["workers"]]
    by_url = {w.url: w for w in view.workers}
    for raw in data["workers"]:
        worker = by_url[raw["url"]]
        assert worker.healthy is raw["is_healthy"] and worker.in_flight == raw["load"]
        loads = (raw.get("engine_load") or {}).get("loads") or []
        assert worker.running == (sum(x["num_running_reqs"] for x in loads) if loads else None)
    assert [w.healthy for w in view.workers].count(False) == 1


def test_an_answer_that_is_no_worker_list_says_so_and_an_unknown_load_stays_unknown() -> None:
    bad = parse_workers("http://r", {"workers": [{"load": 1}]}, 1.0)
    assert not bad.reachable and bad.error is not None and "workers.0.url" in bad.error
    minus = parse_workers("http://r", {"workers": [{"url": "http://w", "load": -1}]}, 1.0)
    assert minus.workers[0].in_flight is None and minus.workers[0].running is None


METRICS_CAPTURE = CAPTURE.with_name("smg-1.13.0-metrics.txt")


def test_the_captured_metrics_page_gives_each_workers_circuit_breaker_and_health() -> None:
    series = parse_metrics(METRICS_CAPTURE.read_text())
    workers = json.loads(CAPTURE.read_text())["workers"]
    assert set(series) == {w["url"] for w in workers}
    for raw in workers:
        s = series[raw["url"]]
        assert s.healthy is raw["is_healthy"]
        assert s.circuit == ("closed" if raw["is_healthy"] else "open")
    out = next(w["url"] for w in workers if not w["is_healthy"])
    assert series[out].circuit_failures == 10


class _Answers(BaseHTTPRequestHandler):
    """A router on a real socket: ``/workers`` from the capture, ``/metrics`` as big as told."""

    metrics_bytes = 0

    def do_GET(self) -> None:
        if self.path == "/workers":
            body = CAPTURE.read_bytes()
        elif self.path == "/metrics" and self.metrics_bytes:
            body = (METRICS_CAPTURE.read_text() * (self.metrics_bytes // 50_000 + 1)).encode()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        if self.path == "/workers":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def answering() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        _Answers.metrics_bytes = 0


async def test_a_metrics_page_over_its_limit_is_not_read_and_the_workers_are_still_shown(
    answering: str,
) -> None:
    _Answers.metrics_bytes = MAX_METRICS_BYTES + 1  # sent without a length: cut off as it arrives
    view = await read_router(answering, answering)
    assert view.reachable and len(view.workers) == 3
    assert (
        view.metrics_error == f"the router's metrics port's /metrics answer is over {MAX_METRICS_BYTES} bytes"
    )
    assert all(w.circuit is None for w in view.workers)


async def test_a_metrics_port_that_does_not_answer_says_so_and_one_that_does_adds_the_circuits(
    answering: str,
) -> None:
    missing = await read_router(answering, answering)
    assert missing.metrics_error == "the router's metrics port answered 404 to /metrics"
    _Answers.metrics_bytes = 1
    view = await read_router(answering, answering)
    assert view.metrics_error is None
    assert sorted(str(w.circuit) for w in view.workers) == ["closed", "closed", "open"]
    plain = await read_router(answering)
    assert plain.metrics_url is None and plain.metrics_error is None and plain.reachable


REPO = Path(__file__).resolve().parents[2]


def _serve(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "agent.cli.main", "serve", "--engine", "sim", "--gpus", "none"]
    argv += ["--profile", str(REPO / "profiles" / "local-sim.toml"), "--state-dir", str(tmp_path / "state")]
    return subprocess.run([*argv, *extra], capture_output=True, text=True, timeout=60, cwd=REPO)


def test_serve_refuses_a_router_metrics_url_it_cannot_use_before_touching_anything(tmp_path: Path) -> None:
    lonely = _serve(tmp_path, "--router-metrics-url", "http://127.0.0.1:29000")
    assert lonely.returncode == 2
    assert "--router-metrics-url 'http://127.0.0.1:29000' needs --router-url" in lonely.stderr
    bad = _serve(tmp_path, "--router-url", "http://127.0.0.1:30000", "--router-metrics-url", "ftp://r:29000")
    assert bad.returncode == 2 and "is not an http:// or https:// URL" in bad.stderr
    assert not (tmp_path / "state").exists()
