"""Run as pid 1 of a new pid namespace (``unshare --pid --fork --mount-proc``): a real agent, its
engine, a record torn inside the engine's pid, and a decoy at the pid the tear left.

Only a pid namespace gives a process at a chosen pid: ``/proc/sys/kernel/ns_last_pid`` is written
so that the agent's engine gets a pid of three digits (4xx) and the decoy the one-digit pid the tear
leaves (4). The decoy looks like an engine to a careless eye: its own process group, and a command
line with the engine's ``--host`` and ``--port``. The test (``test_engine_adoption_evidence``) reads
what this script found from the JSON file it is given and asserts on it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parents[1])]

from fault_rig import engines_of, make_rig, wait_until  # noqa: E402


def _next_pid(pid: int) -> None:
    """The next process forked in this namespace gets ``pid`` (when it is free)."""
    Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().decode(errors="replace").rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def main(out: Path) -> None:
    found: dict[str, Any] = {"my_pid": os.getpid()}
    rig = make_rig()
    decoy: subprocess.Popen[bytes] | None = None
    try:
        _next_pid(400)
        rig.start()
        status = rig.wait_ready()
        engine = int(status["engine_pid"])
        port = int(status["engine_url"].rsplit(":", 1)[1])
        found.update(engine_pid=engine, engine_port=port)
        assert rig.threshold_action(321, "decoy-set")["status"] == "applied"
        rig.kill9()
        path = rig.state / "engine.json"
        text = path.read_text()
        head = f'"pid": {engine}'
        assert head in text, text[:200]
        cut = text.index(head) + len('"pid": ') + 1  # one digit of the pid: "pid": 4
        path.write_text(text[:cut])
        found["torn_at"] = text[max(0, cut - 12) : cut]
        torn_pid = int(str(engine)[0])
        _next_pid(torn_pid)
        decoy = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import time; time.sleep(600)",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            start_new_session=True,
        )
        found["decoy_pid"] = decoy.pid
        rig.start()
        status = rig.status()
        found["adopted_pid_at_start"] = status["engine_pid"]
        try:
            status = rig.wait_ready(timeout_s=30)
        except (TimeoutError, RuntimeError) as exc:
            found["not_ready"] = str(exc)[:2000]
        found["adopted_pid"] = status["engine_pid"]
        found["engines"] = engines_of(rig)
        found["findings"] = [f["code"] for f in status["findings"]]
        with rig.client() as c:
            events = c.get("/v1/events").json()["events"]
            found["record_events"] = [e["message"] for e in events if e["name"] == "engine.record_unreadable"]
            found["live_threshold"] = (
                rig.engine_live()["threshold"] if status["engine_state"] == "ready" else None
            )
            stopped = c.post("/v1/agent/stop", json={"engine_too": True, "operator": "decoy-test"})
            found["stop_status"] = stopped.status_code
        found["agent_exit"] = rig.wait_dead(timeout_s=60)
        with contextlib.suppress(TimeoutError):
            wait_until(lambda: not _alive(engine), timeout_s=30, what="the engine stopped")
        found["engine_alive_after_stop"] = _alive(engine)
        found["decoy_alive_after_stop"] = decoy.poll() is None and _alive(decoy.pid)
    except Exception as exc:  # the test shows what went wrong, with what was found until then
        found["error"] = f"{type(exc).__name__}: {exc}"[:4000]
        found["agent_output"] = rig.output()[-4000:]
    finally:
        out.write_text(json.dumps(found, indent=1))
        if decoy is not None and decoy.poll() is None:
            os.killpg(decoy.pid, signal.SIGKILL)
        rig.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
