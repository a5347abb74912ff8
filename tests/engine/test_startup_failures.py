"""Start-up failures say why: the engine log's exception and frame, and a held port reported once.

The supervisor runs for real (real processes, real log file, real sockets); the engine is a stand-in
script that fails the way SGLang 0.5.23 did on the H200 (its scheduler logs a traceback, then SGLang
kills its own process tree: the agent sees exit -9), and a stranger process holds the port.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.engine.failure import port_holder, startup_error
from agent.engine.logfile import EngineLog
from agent.engine.policy import RestartPolicy
from agent.engine.spec import EngineSpec, free_loopback_port
from agent.engine.supervisor import Supervisor
from agent.profile import load_profile

REPO = Path(__file__).resolve().parents[2]
REAL_LOG = REPO / "tests" / "fixtures" / "sglang-0.5.23-real" / "engine.log"
SECRET = "sk-k25-startup-secret-9f8e7d"

FAILING_ENGINE = textwrap.dedent(
    f"""
    import os, signal, sys, traceback
    print("[2026-12-01 13:10:11] server_args={{'api_key': '{SECRET}', 'model_path': '/m'}}", flush=True)
    def load():
        import cutlass  # noqa: F401
    try:
        load()
    except ImportError:
        print("[2026-12-01 13:10:13] Scheduler hit an exception: " + traceback.format_exc(), flush=True)
    print("[2026-12-01 13:10:13] Received sigquit from a child process. It usually means the child failed.")
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


class Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, name: str, message: str, data: dict[str, Any]) -> None:
        self.items.append((name, message, data))

    def named(self, name: str) -> list[tuple[str, str, dict[str, Any]]]:
        return [e for e in self.items if e[0] == name]


def _supervisor(tmp_path: Path, spec: EngineSpec, events: Events, limit: int) -> Supervisor:
    return Supervisor(
        kind="sglang",
        record_path=tmp_path / "engine.json",
        engine_log=EngineLog(tmp_path / "engine.log"),
        http=httpx.AsyncClient(timeout=2.0),
        spec_for=lambda _profile: spec,
        emit=events,
        policy=RestartPolicy(backoff_initial_s=0.01, crash_loop_limit=limit),
        poll_s=0.02,
        redact=lambda lines: [line.replace(SECRET, "<redacted>") for line in lines],
    )


def test_the_real_engine_logs_failure_is_read_as_its_exception_and_frame() -> None:
    lines = REAL_LOG.read_text().splitlines()
    end = next(i for i, line in enumerate(lines) if "kill_process_tree called" in line)
    found = startup_error(lines[: end + 1])
    assert found is not None
    assert found.summary == "ModuleNotFoundError: No module named 'cutlass'"
    assert found.frame == (
        "/tmp/site/sglang/kernels/ops/gemm/cutedsl_dual_gemm.py, line 36, in <module>: import cutlass"
    )
    assert not any("server_args=" in line for line in found.lines)


async def test_an_engine_that_dies_before_ready_is_reported_with_its_logs_error(tmp_path: Path) -> None:
    script = tmp_path / "engine.py"
    script.write_text(FAILING_ENGINE)
    port = free_loopback_port()
    spec = EngineSpec("sglang", [sys.executable, str(script)], "127.0.0.1", port, startup_timeout_s=30)
    events = Events()
    supervisor = _supervisor(tmp_path, spec, events, limit=2)
    await supervisor.begin(load_profile(REPO / "profiles" / "local-sim.toml"))
    assert await supervisor.wait_for_state({"crash_loop"}, timeout_s=30)
    crashed = events.named("engine.crashed")
    assert len(crashed) == 2
    for _name, message, data in crashed:
        assert "before it was ready" in message and "exit code -9" in message
        assert "ModuleNotFoundError: No module named 'cutlass'" in message
        assert f"raised at {script}, line 5, in load: import cutlass" in message
        assert data["error"]["summary"] == "ModuleNotFoundError: No module named 'cutlass'"
    assert supervisor.last_error is not None
    assert supervisor.last_error["log"] == str(tmp_path / "engine.log")
    everything = repr(events.items) + repr(supervisor.last_error)
    assert SECRET not in everything
    await supervisor.http.aclose()


async def test_a_port_held_by_a_stranger_is_one_event_not_a_crash_loop(tmp_path: Path) -> None:
    port = free_loopback_port()
    code = f"import socket,time; s=socket.socket(); s.bind(('127.0.0.1',{port})); s.listen(); print('up',flush=True); time.sleep(120)"
    stranger = subprocess.Popen([sys.executable, "-c", code, "k25-stranger-engine"], stdout=subprocess.PIPE)
    try:
        assert stranger.stdout is not None and stranger.stdout.readline().strip() == b"up"
        holder = port_holder("127.0.0.1", port)
        assert holder is not None and holder.pid == stranger.pid
        assert holder.cmdline is not None and "k25-stranger-engine" in holder.cmdline
        spec = EngineSpec("sglang", [sys.executable, "-c", "raise SystemExit(3)"], "127.0.0.1", port)
        events = Events()
        supervisor = _supervisor(tmp_path, spec, events, limit=5)
        await supervisor.begin(load_profile(REPO / "profiles" / "local-sim.toml"))
        assert await supervisor.wait_for_state({"stopped"}, timeout_s=10)
        await asyncio.wait_for(asyncio.shield(supervisor._task), 10)  # type: ignore[arg-type]
        assert [e[0] for e in events.items] == ["engine.port_held"]
        (_name, message, data) = events.items[0]
        assert f"Port 127.0.0.1:{port} is held by pid {stranger.pid}" in message
        assert "k25-stranger-engine" in message and "which this agent did not start" in message
        assert "--state-dir" in message and "agent stop --engine-too" in message
        assert data["pid"] == stranger.pid and data["port"] == port
        assert supervisor.failures == 0 and supervisor.engine is None
        assert (
            supervisor.last_error is not None and supervisor.last_error["port_holder"]["pid"] == stranger.pid
        )
        assert not (tmp_path / "engine.log").exists()  # nothing was launched
        await supervisor.http.aclose()
    finally:
        stranger.send_signal(signal.SIGTERM)
        stranger.wait(10)


def test_no_holder_on_a_free_port() -> None:
    assert port_holder("127.0.0.1", free_loopback_port()) is None


@pytest.mark.parametrize(
    ("lines", "summary"),
    [
        (["loading", "RuntimeError: CUDA out of memory"], "RuntimeError: CUDA out of memory"),
        (["starting", "killed"], "killed"),
        ([], None),
    ],
)
def test_without_a_traceback_the_last_error_line_is_the_reason(lines: list[str], summary: str | None) -> None:
    found = startup_error(lines)
    assert (found.summary if found else None) == summary
