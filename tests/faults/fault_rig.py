"""The fault suite's rig: one real ``agent serve --engine sim`` whose state directory is a small tmpfs.

The faults are real: the agent dies by SIGKILL (sent by the kernel at a point ``K25_FAULT_POINT``
names, or by this rig at a random moment), the disk is full because the tmpfs is (``fill``), the
engine dies by SIGKILL to its process group, the torn line is bytes written without a newline.
Where root cannot mount (not here: the rig checks), the agent's own ENOSPC hook stands in
(``K25_FAULT_FULL_FLAG``, ``agent.engine.state_disk``).

``check`` is the one check every run ends with: supervision is alive, every live value in force
on the engine is the one the audit last put (or found) in force, no action was applied twice and
every intent has its outcome, and no secret is in any answer.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from agent_harness import wait_until  # the one poll of another process's state (re-exported)

from agent.sglang.live_control import READBACK_FIELD

REPO = Path(__file__).resolve().parents[2]
ENGINE_KEY = "sk-k25fault-" + "7d1e0b" * 4
FAKE_HF_TOKEN = "hf_k25fault" + "Zq8Xw3" * 5
"""In the profile's ``[server.env]``: no answer of the agent may hold it."""
TMPFS_SIZE = "48m"
PROFILE_ANSWERS = ("/v1/profile", "/v1/profiles/fault-sim")
"""The answers that carry the profile's ``server.env`` (redacted: no value of it may show)."""


def can_mount() -> bool:
    probe = Path(tempfile.mkdtemp(prefix="k25mnt-", dir="/tmp"))
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True
        )
        if done.returncode != 0:
            return False
        subprocess.run(["umount", str(probe)], check=False)
        return True
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


@dataclass
class Rig:
    root: Path
    mounted: bool
    proc: subprocess.Popen[bytes] | None = None
    env: dict[str, str] = field(default_factory=dict)
    extra: list[str] = field(default_factory=list)
    """More ``agent serve`` flags (a later one wins)."""
    engine_pgids: set[int] = field(default_factory=set)
    starts: int = 0

    # ---- paths --------------------------------------------------------------------------------------

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def profile(self) -> Path:
        return self.root / "profiles" / "fault-sim.toml"

    @property
    def audit_path(self) -> Path:
        return self.state / "audit.jsonl"

    @property
    def flag(self) -> Path:
        return self.root / "disk-full.flag"

    @property
    def filler(self) -> Path:
        return self.state / "filler"

    # ---- the agent ----------------------------------------------------------------------------------

    def argv(self) -> list[str]:
        return [
            sys.executable, "-m", "agent.cli.main", "serve", "--engine", "sim", "--profile", str(self.profile),
            "--profiles-dir", str(self.profile.parent), "--state-dir", str(self.state), "--gpus", "none",
            "--drain-timeout", "1", "--restart-backoff", "0.5", "--restart-backoff-max", "2",
            "--crash-loop-limit", "100", *self.extra,
        ]  # fmt: skip

    def start(self, fault_point: str | None = None) -> None:
        self.starts += 1
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        env.pop("K25_FAULT_POINT", None)
        if fault_point:
            env["K25_FAULT_POINT"] = fault_point
        if not self.mounted:
            env["K25_FAULT_FULL_FLAG"] = str(self.flag)
        with (self.root / "agent.out").open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv(), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
                env=env, start_new_session=True,
            )  # fmt: skip
        wait_until(self._answers, timeout_s=60, what="the agent's API")

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"agent exited with {self.proc.returncode}: {self.output()[-3000:]}")
        with self.client(timeout_s=2) as c:
            return c.get("/v1/status").status_code == 200

    def output(self) -> str:
        path = self.root / "agent.out"
        return path.read_text(errors="replace") if path.exists() else ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        """SIGKILL the agent alone (its engine lives on, as it must)."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=15)

    def wait_dead(self, timeout_s: float = 30) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout_s)

    def token(self) -> str:
        return (self.state / "token").read_text().strip()

    def client(self, *, timeout_s: float = 15) -> httpx.Client:
        return httpx.Client(
            transport=httpx.HTTPTransport(uds=str(self.state / "run" / "agent.sock")),
            base_url="http://agent",
            headers={"Authorization": f"Bearer {self.token()}", "User-Agent": "k25-fault-suite"},
            timeout=timeout_s,
        )

    def status(self) -> dict[str, Any]:
        with self.client() as c:
            status: dict[str, Any] = c.get("/v1/status").json()
        return status

    def wait_ready(self, timeout_s: float = 90) -> dict[str, Any]:
        def ready() -> dict[str, Any] | None:
            if not self.alive():
                raise RuntimeError(f"the agent died: {self.output()[-3000:]}")
            status = self.status()
            return status if status["engine_state"] == "ready" else None

        try:
            return wait_until(ready, timeout_s=timeout_s, what="the engine ready")
        except TimeoutError as exc:
            with self.client() as c:
                events = [(e["name"], e["message"]) for e in c.get("/v1/events").json()["events"][-12:]]
            raise TimeoutError(f"{exc}; status {self.status()}; last events {events}") from None

    # ---- the engine ---------------------------------------------------------------------------------

    def engine_record(self) -> dict[str, Any] | None:
        try:
            record: dict[str, Any] = json.loads((self.state / "engine.json").read_text())
        except (OSError, ValueError):
            return None
        self.engine_pgids.add(int(record["pgid"]))
        return record

    def kill_engine(self) -> int:
        status = self.status()
        pid = int(status["engine_pid"])
        self.engine_pgids.add(pid)
        os.killpg(pid, signal.SIGKILL)
        return pid

    def engine_live(self) -> dict[str, Any]:
        url = self.status()["engine_url"]
        info = httpx.get(f"{url}/server_info", headers={"Authorization": f"Bearer {ENGINE_KEY}"}, timeout=10)
        live: dict[str, Any] = info.json()["internal_states"][0][READBACK_FIELD]
        return live

    # ---- actions ------------------------------------------------------------------------------------

    def threshold_action(self, value: int, request_id: str) -> dict[str, Any]:
        body = {"request_id": request_id, "kind": "threshold", "value": value, "operator": "fault-suite"}
        with self.client() as c:
            plan = c.post("/v1/actions", json=body)
            assert plan.status_code == 200, plan.text
            confirmed = c.post(f"/v1/actions/{plan.json()['action_id']}/confirm")
            assert confirmed.status_code == 200, confirmed.text
            result: dict[str, Any] = confirmed.json()
        return result

    # ---- the disk -----------------------------------------------------------------------------------

    def fill(self) -> None:
        """Write until ENOSPC: a full state disk, for real (or the agent's hook where no tmpfs)."""
        if not self.mounted:
            self.flag.touch()
            return
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            while True:
                os.write(fd, b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
        try:
            while True:
                os.write(fd, b"\0" * 512)
        except OSError:
            pass
        finally:
            os.close(fd)

    def unfill(self) -> None:
        self.flag.unlink(missing_ok=True)
        self.filler.unlink(missing_ok=True)

    # ---- the audit ----------------------------------------------------------------------------------

    def audit_records(self) -> tuple[list[dict[str, Any]], int]:
        """Every record of the audit file, in order, and how many lines are not records."""
        records, bad = [], 0
        raw = self.audit_path.read_bytes() if self.audit_path.exists() else b""
        for line in raw.splitlines():
            try:
                value = json.loads(line)
            except ValueError:
                bad += 1
                continue
            records.append(value)
        return records, bad

    def tear_audit(self) -> None:
        """What a crash mid-write leaves: half a record, no newline."""
        line = json.dumps({"time": time.time(), "action": {"kind": "threshold"}, "result": {"status": "x"}})
        with self.audit_path.open("ab") as fh:
            fh.write(line[: len(line) // 2].encode())

    # ---- teardown -----------------------------------------------------------------------------------

    def close(self) -> None:
        self.engine_record()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        for pgid in self.engine_pgids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.state)], check=False)


def make_rig() -> Rig:
    root = Path(tempfile.mkdtemp(prefix="k25f-", dir="/tmp"))  # AF_UNIX paths: 107 bytes at most
    key = root / "engine.key"
    key.write_text(ENGINE_KEY + "\n")
    key.chmod(0o600)
    text = (
        (REPO / "profiles" / "local-sim.toml").read_text().replace('name = "local-sim"', 'name = "fault-sim"')
    )
    text = text.replace("[server]\n", f'[server]\napi_key_file = "{key}"\n', 1)
    text += f'\n[server.env]\nHF_TOKEN = "{FAKE_HF_TOKEN}"\n'
    profile = root / "profiles" / "fault-sim.toml"
    profile.parent.mkdir()
    profile.write_text(text)
    state = root / "state"
    state.mkdir(mode=0o700)
    mounted = (
        os.environ.get("K25_FAULT_NO_MOUNT") != "1"
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700", "tmpfs", str(state)],
            capture_output=True,
        ).returncode
        == 0
    )
    return Rig(root=root, mounted=mounted)


def engines_of(rig: Rig) -> list[int]:
    """Every live process-group leader that runs from this rig's engine directory: its engines."""
    where = str(rig.state / "engine") + os.sep
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                fields = fh.read().decode(errors="replace").rsplit(")", 1)[1].split()
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                cmdline = fh.read().decode(errors="replace")
        except OSError:
            continue
        if fields[0] not in ("Z", "X") and int(fields[2]) == int(entry.name) and where in cmdline:
            found.append(int(entry.name))
    rig.engine_pgids.update(found)
    return found


# ---- the one check ----------------------------------------------------------------------------------


def answers(rig: Rig) -> dict[str, str]:
    """Every read answer of the agent's API, by path."""
    paths = ["/v1/status", "/v1/profile", "/v1/profiles", "/v1/profiles/fault-sim", "/v1/events",
             "/v1/snapshots?limit=50", "/v1/audit?limit=500", "/v1/logs?tail=2000", "/v1/bench",
             "/v1/version"]  # fmt: skip
    out = {}
    with rig.client() as c:
        for path in paths:
            response = c.get(path)
            assert response.status_code == 200, f"{path}: {response.status_code} {response.text[:300]}"
            out[path.split("?")[0]] = response.text
    return out


def check(rig: Rig) -> None:
    """Supervision alive; every change in force audited; nothing applied twice; no secret out."""
    status = rig.wait_ready()
    assert rig.alive(), "the agent is not running"
    engine_pid = int(status["engine_pid"])
    os.kill(engine_pid, 0)  # the engine process it reports is there
    records, _ = rig.audit_records()

    # Nothing applied twice; every action's intent has its outcome (the start settles a killed one's).
    applied = Counter(
        r["action"]["action_id"]
        for r in records
        if r.get("phase") in ("outcome", "record")
        and "action_id" in r["action"]
        and r["result"]["status"] == "applied"
    )
    assert [aid for aid, n in applied.items() if n > 1] == [], "an action was applied twice"
    intents = {
        r["action"]["action_id"] for r in records if r.get("phase") == "intent" and "action_id" in r["action"]
    }
    outcomes = {
        r["action"]["action_id"]
        for r in records
        if r.get("phase") == "outcome" and "action_id" in r["action"]
    }
    assert sorted(intents - outcomes) == [], "an intent was left without its outcome"
    restarts = {
        r["action"]["op_id"]: r["phase"] for r in records if r["action"].get("kind") == "engine_restart"
    }
    assert [op for op, phase in restarts.items() if phase == "intent"] == [], (
        "a restart was left without its outcome"
    )

    # Every live value in force is the one the audit last put, or found, in force.
    audited: dict[str, Any] = {}
    for r in records:
        if (
            r.get("live")
            and r.get("phase") != "intent"
            and r["result"]["status"] in ("applied", "reconciled")
        ):
            audited.update({k: v for k, v in r["live"].items() if v is not None})
    live = rig.engine_live()
    assert "threshold" in audited, "no audit line says which threshold is in force"
    assert {k: live.get(k) for k in audited} == audited, f"in force {live}, audited {audited}"

    # No secret in any answer.
    secrets = {"the agent's token": rig.token(), "the engine's key": ENGINE_KEY, "HF_TOKEN": FAKE_HF_TOKEN}
    for path, text in answers(rig).items():
        for name, secret in secrets.items():
            assert secret not in text, f"{name} in the answer of {path}"
