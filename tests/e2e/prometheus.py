"""A real Prometheus server (Debian's ``prometheus`` package) on loopback, for the exporter's e2e test.

Its configuration is generated per test: a short scrape interval, one job per target. The file is
JSON, which is YAML too, so nothing is quoted by hand. Waiting is polling Prometheus' own HTTP API
for the condition with a deadline (its scrapes raise no event we could await).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from .sshd import free_port
from .waiting import wait_until

SCRAPE_INTERVAL = "1s"


def prometheus_binary() -> str | None:
    return shutil.which("prometheus") or next(
        (p for p in ("/usr/bin/prometheus", "/usr/local/bin/prometheus") if Path(p).exists()), None
    )


class PromQLError(Exception):
    """Prometheus refused or failed to evaluate an expression; the message is Prometheus' own."""


@dataclass
class Prometheus:
    url: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    def api(self, path: str, **params: str) -> Any:
        r = httpx.get(f"{self.url}/api/v1/{path}", params=params, timeout=10)
        body = r.json()
        if body.get("status") != "success":
            raise PromQLError(f"{params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query: the vector's samples (``metric`` labels and ``value`` [time, "text"])."""
        data = self.api("query", query=expr)
        result: list[dict[str, Any]] = data["result"] if data["resultType"] == "vector" else [data]
        return result

    def value(self, expr: str) -> float | None:
        """The single sample's value, or None when the vector is empty."""
        result = self.query(expr)
        if not result:
            return None
        assert len(result) == 1, f"{expr}: more than one series: {result}"
        return float(result[0]["value"][1])

    def metric_names(self) -> set[str]:
        return set(self.api("label/__name__/values"))

    def targets_up(self) -> dict[str, float]:
        return {s["metric"]["job"]: float(s["value"][1]) for s in self.query("up")}

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@contextlib.contextmanager
def running_prometheus(root: Path, targets: dict[str, str], *, timeout_s: float = 60) -> Iterator[Prometheus]:
    """Prometheus scraping ``targets`` (job name -> ``host:port``) every second, on a free loopback port."""
    binary = prometheus_binary()
    assert binary, "Prometheus is not installed (apt-get install prometheus; .ci/run does)"
    root.mkdir(parents=True, exist_ok=True)
    config = {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "scrape_timeout": SCRAPE_INTERVAL},
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": [target]}]} for job, target in targets.items()
        ],
    }
    config_path = root / "prometheus.yml"
    config_path.write_text(json.dumps(config, indent=1))
    port = free_port()
    log_path = root / "prometheus.log"
    argv = [
        binary,
        f"--config.file={config_path}",
        f"--storage.tsdb.path={root / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    prom = Prometheus(f"http://127.0.0.1:{port}", proc, log_path)

    def ready() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited with {proc.returncode}:\n{prom.log()[-3000:]}")
        return httpx.get(f"{prom.url}/-/ready", timeout=2).status_code == 200

    try:
        try:
            wait_until(ready, timeout_s=timeout_s, what="Prometheus to be ready")
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}\n{prom.log()[-3000:]}") from exc
        yield prom
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
