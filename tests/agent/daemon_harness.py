"""The harness for the daemon tests: ``agent serve --engine sim`` as a real subprocess on a socket in /tmp.

The faults these tests need (an engine killed, an agent killed and started again, file modes, what
reaches the logs) exist only between real processes, so nothing here runs the app in-process.
Waiting is on conditions (a socket that answers, an event on the stream), never a blind sleep.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "profiles"
ENGINE_KEY = "sk-k25test-" + "5f3c9a" * 4
"""The simulated engine's API key: must never show up in anything the agent writes or serves."""

T = TypeVar("T")


def wait_until(condition: Callable[[], T], *, timeout_s: float, what: str, interval_s: float = 0.05) -> T:
    """Poll a condition that raises no event we could await (another process's state)."""
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except Exception as exc:
            last = exc
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout_s} s waiting for {what} (last error: {last!r})")
        time.sleep(interval_s)


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in (b"Z", b"X")


def write_profile(
    root: Path, name: str, *, env: dict[str, str] | None = None, key_file: Path | None = None
) -> Path:
    """local-sim, renamed, with an API key file and optional engine environment."""
    text = (PROFILES / "local-sim.toml").read_text()
    text = text.replace('name = "local-sim"', f'name = "{name}"')
    server_extra = ""
    if key_file is not None:
        server_extra += f'api_key_file = "{key_file}"\n'
    text = text.replace("[server]\n", "[server]\n" + server_extra, 1)
    if env:
        text += "\n[server.env]\n" + "".join(f'{k} = "{v}"\n' for k, v in env.items())
    path = root / "profiles" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@dataclass
class Agent:
    """One ``agent serve`` with its own state directory, socket and stderr log."""

    root: Path
    profile: Path
    extra: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    runs: int = 0

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def socket(self) -> Path:
        return self.state_dir / "run" / "agent.sock"

    @property
    def token(self) -> str:
        return (self.state_dir / "token").read_text().strip()

    @property
    def log_path(self) -> Path:
        return self.root / f"agent-{self.runs}.log"

    def start(self) -> Agent:
        self.runs += 1
        argv = [
            sys.executable,
            "-m",
            "agent.cli.main",
            "serve",
            "--profile",
            str(self.profile),
            "--engine",
            "sim",
        ]
        argv += ["--state-dir", str(self.state_dir), "--gpus", "none", "--drain-timeout", "5", *self.extra]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=REPO)
        wait_until(self._answers, timeout_s=60, what="the agent's socket to answer")
        return self

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(
                f"agent exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}"
            )
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(self.socket)), base_url="http://agent") as c:
            return c.get("/v1/version", timeout=2).status_code == 200

    def client(self, token: str | None = "auto") -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.token if token == 'auto' else token}"} if token else {}
        return httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=str(self.socket)),
            base_url="http://agent",
            headers=headers,
            timeout=30,
        )

    def sync_client(self) -> httpx.Client:
        return httpx.Client(
            transport=httpx.HTTPTransport(uds=str(self.socket)),
            base_url="http://agent",
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=30,
        )

    def status(self) -> dict[str, Any]:
        with self.sync_client() as c:
            data: dict[str, Any] = c.get("/v1/status").json()
            return data

    def wait_state(self, state: str, timeout_s: float = 60) -> dict[str, Any]:
        return wait_until(
            lambda: (s := self.status())["engine_state"] == state and s,
            timeout_s=timeout_s,
            what=f"engine {state}",
        )

    def kill(self) -> None:
        """SIGKILL the agent alone (not its engine): what a crash or an OOM kill does."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)

    def record(self) -> dict[str, Any] | None:
        try:
            data: dict[str, Any] = json.loads((self.state_dir / "engine.json").read_text())
            return data
        except FileNotFoundError:
            return None

    def cleanup(self) -> None:
        record = self.record()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        # The agent leaves its engine running by design; tests do not.
        for rec in (record, self.record()):
            if rec and pid_alive(rec["pid"]):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(rec["pgid"], signal.SIGKILL)


def new_root() -> Path:
    # AF_UNIX paths are limited to 107 bytes; pytest's tmp_path can be longer.
    return Path(tempfile.mkdtemp(prefix="k25ag-", dir="/tmp"))


async def read_stream(
    client: httpx.AsyncClient,
    since: int,
    until: Callable[[list[tuple[str, dict[str, Any]]]], bool],
    timeout_s: float,
) -> list[tuple[str, dict[str, Any]]]:
    """Items (kind, data) from /v1/stream after ``since`` until ``until(items)`` holds."""
    items: list[tuple[str, dict[str, Any]]] = []

    async def consume() -> None:
        async with client.stream("GET", "/v1/stream", params={"since": since}, timeout=None) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            kind = None
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: ") and kind:
                    items.append((kind, json.loads(line.removeprefix("data: "))))
                    if until(items):
                        return

    import asyncio

    await asyncio.wait_for(consume(), timeout_s)
    return items


async def events_named(items: list[tuple[str, dict[str, Any]]], name: str) -> list[dict[str, Any]]:
    return [d for k, d in items if k == "event" and d["name"] == name]


AsyncItems = AsyncIterator[tuple[str, dict[str, Any]]]
