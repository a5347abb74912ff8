"""SGLang's router (``smg``, pinned in the ``fleet`` and ``test`` extras) on loopback, in front of the
fleet demo's simulated engines (and the fleet's end-to-end test).

It is started as its own process group, told every worker at start, polls their health every two
seconds (its default is a minute: an unhealthy mark would take that long to show), and is stopped
with SIGTERM after a one-second grace period, SIGKILL if it outstays it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

READY_TIMEOUT_S = 30.0


class RouterError(RuntimeError):
    pass


def router_argv(worker_urls: list[str], port: int, metrics_port: int, policy: str) -> list[str]:
    if importlib.util.find_spec("smg") is None:
        raise RouterError(
            "SGLang's router is not installed here: pip install 'k25console[fleet]' (smg==1.13.0); "
            "./dev setup installs it"
        )
    return [
        sys.executable, "-m", "smg", "launch", "--host", "127.0.0.1", "--port", str(port),
        "--worker-urls", *worker_urls, "--policy", policy,
        "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port),
        "--health-check-interval-secs", "2", "--shutdown-grace-period-secs", "1", "--log-level", "warn",
    ]  # fmt: skip


class Router:
    """One router process; ``start`` returns once it says ready with every worker healthy."""

    def __init__(self, worker_urls: list[str], port: int, metrics_port: int, log: Path, policy: str) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.argv = router_argv(worker_urls, port, metrics_port, policy)
        self.workers = len(worker_urls)
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log.read_text(errors="replace")[-1500:]
                raise RouterError(f"the router exited with {self.proc.returncode}: {tail}")
            with contextlib.suppress(httpx.HTTPError, ValueError):
                ready = httpx.get(self.url + "/readiness", timeout=2.0).json()
                if ready.get("healthy_workers") == self.workers:
                    return
            time.sleep(0.2)
        self.stop()
        raise RouterError(f"the router did not see {self.workers} healthy workers in {READY_TIMEOUT_S:.0f} s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
