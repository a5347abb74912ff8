"""``agent sim`` in a subprocess on a free port, for the bench scripts that measure against it.

``bench/studies/bench_repeat.py`` and ``bench/studies/independent_load.py`` start the simulated engine the same way:
on a free local port, its output into a log file (they count its fell-behind warnings afterwards),
``/health`` polled until it answers (or the process exits first), and terminated on the way out
whatever happened in between.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench import REPO

AGENT = [sys.executable, "-m", "agent.cli.main"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"agent sim exited with {proc.returncode} before it answered")
        try:
            if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url}/health did not answer within {timeout_s:.0f} s")


@contextmanager
def running_sim(profile: str, speedup: float, log_path: Path) -> Iterator[str]:
    """``agent sim --profile P --speedup S`` answering ``/health``, its output in ``log_path``: its URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        sim = subprocess.Popen(
            [*AGENT, "sim", "--profile", profile, "--speedup", str(speedup), "--port", str(port)],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_healthy(url, sim)
            yield url
        finally:
            sim.terminate()
            sim.wait(timeout=30)
