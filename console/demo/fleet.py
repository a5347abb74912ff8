"""``k25console --demo --fleet``: three simulated hosts behind SGLang's real router, traffic through it.

Each host is a demo stack of its own (``console.demo.stack``: an agent on its own socket supervising
its own simulated engine), with its own speculation threshold: ``gpu-a`` keeps the
profile's crossover (143), ``gpu-b`` stops drafting from 24 running requests, ``gpu-c`` drafts at
every size the server runs (256). The router (``smg``, cache-aware: the demo's prompts land on the worker that holds
their prefix, so the hosts' loads differ) sits in front of the three engines; one ramp of traffic
(1 → 300 → 1 every two minutes) goes through it, and ``gpu-a``'s agent reads the router's view.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from console.demo.router import Router, RouterError
from console.demo.stack import DemoError, DemoStack


@dataclass(frozen=True)
class DemoHost:
    name: str
    threshold: int


HOSTS = (DemoHost("gpu-a", 143), DemoHost("gpu-b", 24), DemoHost("gpu-c", 256))
PEAK = 300
PERIOD_S = 120.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def with_threshold(threshold: int) -> Callable[[str], str]:
    def edit(text: str) -> str:
        return re.sub(r"(?m)^threshold = \d+$", f"threshold = {threshold}", text, count=1)

    return edit


class FleetDemo:
    """Start with :meth:`start`, always :meth:`stop` (also after a failed start)."""

    def __init__(self) -> None:
        self.engine_urls: list[str] = []
        self.router_port, self.metrics_port = free_port(), free_port()
        router_url = f"http://127.0.0.1:{self.router_port}"
        metrics_url = f"http://127.0.0.1:{self.metrics_port}"
        self.stacks = [
            DemoStack(
                traffic=False,
                edit_profile=with_threshold(host.threshold),
                agent_args=["--router-url", router_url, "--router-metrics-url", metrics_url]
                if i == 0
                else [],
            )
            for i, host in enumerate(HOSTS)
        ]
        self.router: Router | None = None
        self.traffic: subprocess.Popen[bytes] | None = None

    def hosts(self) -> list[tuple[str, Path, str]]:
        """Each host's name, its agent's socket and its engine's URL (as the router names it)."""
        return [
            (host.name, stack.socket_path, url)
            for host, stack, url in zip(HOSTS, self.stacks, self.engine_urls, strict=True)
        ]

    def start(self) -> None:
        for stack in self.stacks:
            stack.start()
        # Each agent picks its engine's port; the router is told the addresses the agents report.
        self.engine_urls = [str(stack.wait_engine_ready().engine_url) for stack in self.stacks]
        workers = self.engine_urls
        log = self.stacks[0].state_dir / "router.log"
        try:
            self.router = Router(workers, self.router_port, self.metrics_port, log, policy="cache_aware")
            self.router.start()
        except RouterError as exc:
            raise DemoError(str(exc)) from None
        with (self.stacks[0].state_dir / "traffic.log").open("ab") as out:
            self.traffic = subprocess.Popen(
                [sys.executable, "-m", "console.demo.traffic", "--url", self.router.url,
                 "--peak", str(PEAK), "--period", str(PERIOD_S), "--parent", str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def stop(self) -> None:
        if self.traffic is not None and self.traffic.poll() is None:
            self.traffic.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.traffic.wait(timeout=5)
            if self.traffic.poll() is None:
                self.traffic.kill()
        if self.router is not None:
            self.router.stop()
        for stack in self.stacks:
            stack.stop()
