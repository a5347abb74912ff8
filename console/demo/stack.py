"""The demo's two processes: ``agent serve --engine sim`` on a private socket, and the traffic ramp.

The agent deliberately leaves its engine running when it exits (an agent restart must not restart
SGLang), so the demo asks it to stop *with* its engine first; then both processes' groups are
terminated, waited for and killed if need be, and the engine's group too. Nothing is left running,
even if the console itself is killed: the agent runs under ``console.demo.guard``, which does the
same the moment the console's process is gone.
The demo works on copies of the shipped profiles, so saving one never writes into the checkout.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from agent.wire.api import DEMO_STATE_PREFIX, AgentStatus
from console.demo.profiles import find_profile

READY_TIMEOUT_S = 20.0


class DemoError(RuntimeError):
    pass


class DemoStack:
    """Start with :meth:`start`, always :meth:`stop` (also safe after a failed start)."""

    def __init__(
        self,
        profile: str = "local-sim",
        *,
        traffic: bool = True,
        peak: int = 250,
        period_s: float = 120.0,
        gpu_fixture: Path | None = None,
        agent_args: list[str] | None = None,
        edit_profile: Callable[[str], str] | None = None,
    ) -> None:
        # Without a capture to replay, the GPU screen shows the simulated 8-GPU host (labelled so).
        self.gpus = (
            ["--gpus", "fixture", "--gpu-fixture", str(gpu_fixture)] if gpu_fixture else ["--gpus", "sim"]
        )
        self.profile_path = find_profile(profile)
        self.traffic = traffic
        self.peak = peak
        self.period_s = period_s
        # Short path: UNIX socket paths are limited to ~108 bytes. `agent status` finds it by its prefix.
        self.state_dir = Path(tempfile.mkdtemp(prefix=DEMO_STATE_PREFIX))
        self.processes: list[subprocess.Popen[bytes]] = []
        self.agent_log = self.state_dir / "agent-stderr.log"
        self.profiles_dir = self.state_dir / "profiles"
        self.profiles_dir.mkdir(mode=0o700)
        for shipped in self.profile_path.parent.glob("*.toml"):
            shutil.copy(shipped, self.profiles_dir / shipped.name)
        self.profile_path = self.profiles_dir / self.profile_path.name
        if edit_profile is not None:  # the fleet demo's hosts: each its own port and settings
            self.profile_path.write_text(edit_profile(self.profile_path.read_text()))
        self.agent_args = agent_args or []

    @property
    def socket_path(self) -> Path:
        return self.state_dir / "run" / "agent.sock"

    @property
    def token_path(self) -> Path:
        return self.state_dir / "token"

    def _spawn(self, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.processes.append(proc)
        return proc

    def start(self) -> None:
        guard = [
            sys.executable, "-m", "console.demo.guard", "--parent", str(os.getpid()),
            "--socket", str(self.socket_path), "--token-file", str(self.token_path), "--",
        ]  # fmt: skip
        agent = self._spawn(
            [
                *guard,
                sys.executable,
                "-m",
                "agent.cli.main",
                "serve",
                "--engine",
                "sim",
                "--profile",
                str(self.profile_path),
                "--state-dir",
                str(self.state_dir),
                "--profiles-dir",
                str(self.profiles_dir),
                "--drain-timeout",
                "2",
                *self.gpus,
                *self.agent_args,
            ],
            self.agent_log,
        )
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not (self.socket_path.exists() and self.token_path.exists()):
            if agent.poll() is not None:
                raise DemoError(f"the demo agent exited with {agent.returncode}: {self._log_tail()}")
            if time.monotonic() > deadline:
                raise DemoError(f"the demo agent did not open {self.socket_path} in {READY_TIMEOUT_S:.0f} s")
            time.sleep(0.05)
        if self.traffic:
            self._spawn(
                [
                    sys.executable,
                    "-m",
                    "console.demo.traffic",
                    "--socket",
                    str(self.socket_path),
                    "--token-file",
                    str(self.token_path),
                    "--peak",
                    str(self.peak),
                    "--period",
                    str(self.period_s),
                    "--parent",
                    str(os.getpid()),
                ],
                self.state_dir / "traffic.log",
            )

    def wait_engine_ready(self, timeout_s: float = READY_TIMEOUT_S) -> AgentStatus:
        """The agent's status once its engine is ready (the fleet demo's router wants its address)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, httpx.HTTPError, ValueError):
                status = AgentStatus.model_validate(self._agent_call("GET", "/v1/status"))
                if status.engine_state == "ready" and status.engine_url:
                    return status
            time.sleep(0.1)
        raise DemoError(f"the demo engine was not ready in {timeout_s:.0f} s: {self._log_tail()}")

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return self.agent_log.read_text(errors="replace")[-2000:]
        return ""

    def _agent_call(self, method: str, path: str, body: object = None) -> dict[str, object]:
        token = self.token_path.read_text(encoding="utf-8").strip()
        transport = httpx.HTTPTransport(uds=str(self.socket_path))
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(
            transport=transport, base_url="http://agent", timeout=5.0, headers=headers
        ) as client:
            response = client.request(method, path, json=body)
            response.raise_for_status()
            result: dict[str, object] = response.json()
            return result

    def _stop_agent_and_engine(self) -> int | None:
        """Ask the agent to exit with its engine; returns the engine's pid to make sure of it after."""
        engine_pid: int | None = None
        with contextlib.suppress(OSError, httpx.HTTPError, ValueError):
            engine_pid = AgentStatus.model_validate(self._agent_call("GET", "/v1/status")).engine_pid
            self._agent_call("POST", "/v1/agent/stop", {"engine_too": True})
            if self.processes:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.processes[0].wait(timeout=10)
        return engine_pid

    def stop(self) -> None:
        engine_pid = self._stop_agent_and_engine() if self.processes else None
        for proc in reversed(self.processes):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.processes):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
            # the group may hold children the leader left behind (the engine of a real agent)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        self.processes.clear()
        if engine_pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(engine_pid, signal.SIGKILL)  # its own group, TP workers and all
        shutil.rmtree(self.state_dir, ignore_errors=True)
