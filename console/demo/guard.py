"""Keeps the demo agent from outliving the console: ``python -m console.demo.guard --parent PID -- ARGV``.

The agent is built to outlive its consoles (and its engine to outlive the agent), which is right on
a GPU host and wrong for a demo. The guard runs the agent as its child and, the moment the console
that started it is gone (quit, closed terminal, even SIGKILL), stops the agent *with* its engine
through the agent's own API, then makes sure of both processes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from agent.wire.api import AgentStatus

POLL_S = 0.5


def stop_agent(socket_path: Path, token_path: Path, child: subprocess.Popen[bytes]) -> None:
    engine_pid: int | None = None
    with contextlib.suppress(OSError, httpx.HTTPError, ValueError):
        token = token_path.read_text(encoding="utf-8").strip()
        transport = httpx.HTTPTransport(uds=str(socket_path))
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(
            transport=transport, base_url="http://agent", timeout=5.0, headers=headers
        ) as client:
            engine_pid = AgentStatus.model_validate(client.get("/v1/status").json()).engine_pid
            client.post("/v1/agent/stop", json={"engine_too": True})
    try:
        child.wait(timeout=10)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    if engine_pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(engine_pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--socket", type=Path, required=True)
    parser.add_argument("--token-file", type=Path, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ctrl+c belongs to the console, which stops us in order
    while child.poll() is None:
        if stopping or os.getppid() != args.parent:
            stop_agent(args.socket, args.token_file, child)
            break
        time.sleep(POLL_S)  # no event tells a process that its parent died: poll
    return child.returncode or 0


if __name__ == "__main__":
    sys.exit(main())
