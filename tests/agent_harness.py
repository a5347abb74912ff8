"""The one agent-start harness of the test suite: ``agent serve`` as a real subprocess, the way an
operator runs it, on the simulated engine (or another ``--engine``) with its own state directory.

Every folder starts its agents here: the end-to-end tests use ``AgentProc`` as it is, the daemon
tests (``tests/agent/daemon_harness.py``) and the console tests (``tests/console/console_testkit.py``)
through thin subclasses that add their own conveniences (an async client, stream reading). Starting,
the argv, the profiles copied aside, waiting for the API and tearing down the agent and every
engine it reported live here only.

Why a subprocess and not the ASGI app in-process: the faults under test (agent killed and restarted,
engine killed, sockets and file modes, what reaches the log) only exist between real processes.
Waiting is on conditions (a socket that answers, a state reached), never a blind sleep.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

REPO = Path(__file__).resolve().parents[1]
PROFILES = REPO / "profiles"
START_TIMEOUT_S = 30.0

T = TypeVar("T")


def wait_until(condition: Callable[[], T], *, timeout_s: float, what: str, interval_s: float = 0.05) -> T:
    """Poll a condition that raises no event we could await (another process's state)."""
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except Exception as exc:  # the thing polled may still be starting
            last_error = exc
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"timed out after {timeout_s} s waiting for {what} (last error: {last_error!r})"
            )
        time.sleep(interval_s)


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in (b"Z", b"X")


@dataclass
class AgentProc:
    """One ``agent serve`` process with its own state directory and socket."""

    root: Path
    profile: Path
    extra_args: list[str] = field(default_factory=list)
    engine: str = "sim"
    drain_timeout_s: float = 2.0
    library: bool = True
    """Pass ``--profiles-dir`` (the profile's folder); False: the agent's default library."""
    proc: subprocess.Popen[bytes] | None = None
    engine_pids: set[int] = field(default_factory=set)
    runs: int = 0

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def socket(self) -> Path:
        # Where the SSH link looks for it: <state>/run/agent.sock.
        return self.state_dir / "run" / "agent.sock"

    @property
    def token_path(self) -> Path:
        return self.state_dir / "token"

    @property
    def profiles_dir(self) -> Path:
        return self.profile.parent

    @property
    def audit_path(self) -> Path:
        return self.state_dir / "audit.jsonl"

    @property
    def out_log(self) -> Path:
        """The agent's stdout and stderr (appended across restarts)."""
        return self.root / "agent.out"

    def audit_lines(self) -> list[dict[str, Any]]:
        """The audit's outcome lines: each change's intent line (written before it) is left out."""
        if not self.audit_path.exists():
            return []
        lines = [json.loads(line) for line in self.audit_path.read_text().splitlines() if line.strip()]
        return [line for line in lines if line.get("phase") != "intent"]

    def engine_record(self) -> dict[str, Any] | None:
        try:
            record: dict[str, Any] = json.loads((self.state_dir / "engine.json").read_text())
        except (OSError, ValueError):
            return None
        self.engine_pids.add(int(record["pgid"]))
        return record

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def argv(self) -> list[str]:
        library = ["--profiles-dir", str(self.profiles_dir)] if self.library else []
        return [
            sys.executable, "-m", "agent.cli.main", "serve", "--engine", self.engine,
            "--profile", str(self.profile), *library, "--state-dir", str(self.state_dir),
            "--gpus", "none", "--drain-timeout", f"{self.drain_timeout_s:g}", *self.extra_args,
        ]  # fmt: skip

    def read_token(self) -> str:
        return self.token_path.read_text().strip()

    def token(self) -> str:
        return self.read_token()

    def output(self) -> str:
        return self.out_log.read_text(errors="replace") if self.out_log.exists() else ""

    def all_logs(self) -> str:
        """Everything the agent wrote anywhere: its stdout/stderr and every file in its state dir."""
        chunks = [self.output()]
        for path in sorted(self.state_dir.rglob("*")) if self.state_dir.exists() else []:
            if path.is_file() and path.name != "token":
                with contextlib.suppress(OSError):
                    chunks.append(path.read_text(errors="replace"))
        return "\n".join(chunks)

    def sync_client(self, token: str | None = None, *, timeout_s: float = 10.0) -> httpx.Client:
        """A client on the socket with the token (``token=""``: with none)."""
        headers = {} if token == "" else {"Authorization": f"Bearer {token or self.read_token()}"}
        return httpx.Client(
            transport=httpx.HTTPTransport(uds=str(self.socket)),
            base_url="http://agent",
            headers=headers,
            timeout=timeout_s,
        )

    def client(self, token: str | None = None, *, timeout_s: float = 10.0) -> httpx.Client:
        return self.sync_client(token, timeout_s=timeout_s)

    def aclient(self, token: str | None = None, *, timeout_s: float = 10.0) -> httpx.AsyncClient:
        headers = {} if token == "" else {"Authorization": f"Bearer {token or self.read_token()}"}
        return httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=str(self.socket)),
            base_url="http://agent",
            headers=headers,
            timeout=timeout_s,
        )

    def get(self, path: str, **params: Any) -> Any:
        with self.sync_client() as c:
            r = c.get(path, params=params)
            r.raise_for_status()
            return r.json()

    def sync_status(self) -> dict[str, Any]:
        """``GET /v1/status``; remembers the engine it names, so that ``stop`` kills it too."""
        status: dict[str, Any] = self.get("/v1/status")
        if status.get("engine_pid"):
            self.engine_pids.add(int(status["engine_pid"]))
        return status

    def status(self) -> dict[str, Any]:
        return self.sync_status()

    def launch(self) -> None:
        """Start the process and return at once (the caller waits as it needs)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.runs += 1
        with self.out_log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                start_new_session=True,
            )

    def start(self, *, wait_engine_ready: bool = True) -> None:
        self.launch()
        try:
            self.wait_api()
            if wait_engine_ready:
                self.wait_engine_state("ready")
        except BaseException:
            self.stop()
            raise

    def _exited_error(self) -> RuntimeError | None:
        if self.proc is not None and self.proc.poll() is not None:
            return RuntimeError(f"agent serve exited with {self.proc.returncode}:\n{self.output()[-4000:]}")
        return None

    def wait_api(self, timeout_s: float = START_TIMEOUT_S) -> None:
        def answering() -> bool:
            if (err := self._exited_error()) is not None:
                raise err
            if not (self.socket.exists() and self.token_path.exists()):
                return False
            with self.sync_client() as c:
                return c.get("/v1/status").status_code == 200

        try:
            wait_until(answering, timeout_s=timeout_s, what="the agent's API")
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}\n{self.output()[-4000:]}") from exc
        except RuntimeError:
            raise

    def wait_engine_state(self, state: str, timeout_s: float = START_TIMEOUT_S) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            if (err := self._exited_error()) is not None:
                raise err
            status = self.sync_status()
            return status if status.get("engine_state") == state else None

        return wait_until(reached, timeout_s=timeout_s, what=f"engine_state == {state!r}")

    def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        """Signal the agent process only (not the engine, which must survive it)."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, sig)
        self.proc.wait(timeout=15)

    def stop(self) -> None:
        """Tear down the agent and every engine it ever reported, whatever state they are in."""
        self.engine_record()
        if self.proc is not None:
            with contextlib.suppress(Exception):
                self.sync_status()
            if self.proc.poll() is None:
                with contextlib.suppress(Exception), self.sync_client(timeout_s=5) as c:
                    c.post("/v1/agent/stop", json={"engine_too": True})
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=10)
            if self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(timeout=5)
        for pid in self.engine_pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def short_root(prefix: str = "k25e2e-") -> Path:
    """AF_UNIX paths are limited to 107 bytes; pytest's tmp_path can be longer."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


def prepare_profiles(
    root: Path, *, api_key_file: Path | None = None, edit: Callable[[str], str] | None = None
) -> Path:
    """Copies of the shipped profiles in ``root/profiles`` (saving one never touches the checkout);
    returns the local-sim copy, optionally with an engine API key file and other edits."""
    profiles = root / "profiles"
    profiles.mkdir(parents=True, exist_ok=True)
    for shipped in PROFILES.glob("*.toml"):
        shutil.copy(shipped, profiles / shipped.name)
    path = profiles / "local-sim.toml"
    text = path.read_text()
    if api_key_file is not None:
        text = text.replace("[server]\n", f'[server]\napi_key_file = "{api_key_file}"\n', 1)
    if edit is not None:
        text = edit(text)
    path.write_text(text)
    return path


@contextlib.contextmanager
def running_agent(
    *,
    api_key_file: Path | None = None,
    extra_args: list[str] | None = None,
    wait_engine_ready: bool = True,
) -> Iterator[AgentProc]:
    root = short_root()
    agent = AgentProc(
        root=root, profile=prepare_profiles(root, api_key_file=api_key_file), extra_args=extra_args or []
    )
    try:
        agent.start(wait_engine_ready=wait_engine_ready)
        yield agent
    finally:
        agent.stop()
        shutil.rmtree(root, ignore_errors=True)
