"""One engine process as the supervisor knows it, and whether a port is taken."""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass

from agent.engine import proc
from agent.engine.record import EngineKind


@dataclass
class RunningEngine:
    pid: int
    pgid: int
    start_ticks: int
    url: str
    kind: EngineKind
    launched_at: float
    popen: subprocess.Popen[bytes] | None = None

    def exited(self) -> tuple[bool, int | None]:
        """(has it exited, its exit code when we know it)."""
        if self.popen is not None:
            code = self.popen.poll()
            return code is not None, code
        return not proc.is_same_process(self.pid, self.start_ticks), None

    def identity_holds(self) -> bool:
        """Whether signalling ``pgid`` still reaches this engine (not a stranger that reused its pid)."""
        if self.popen is not None:
            return self.popen.poll() is None
        return proc.is_same_process(self.pid, self.start_ticks)


async def unknown_count() -> int | None:
    """A count nobody can tell (the default for the in-flight request probe)."""
    return None


def port_in_use(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False
