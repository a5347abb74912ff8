"""Faults an operator meets, each through the real processes: sshd, agent, simulated engine, console."""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from agent_harness import AgentProc, pid_alive, prepare_profiles, short_root

from agent.control.library import ProfileLibrary
from agent.control.writes import WriteGuard
from agent.profile import ProfileError
from agent.profile.versions import profile_digest

from .console_kit import engine_live_state, ssh_console
from .sshd import Sshd
from .waiting import until, wait_until


def _contiguous(seqs: list[int]) -> bool:
    return seqs == list(range(seqs[0], seqs[-1] + 1))


async def test_ssh_connection_dropped_mid_stream_console_reconnects_with_no_gap_in_history(
    sshd: Sshd, shared_agent: AgentProc
) -> None:
    app = ssh_console(sshd, shared_agent)
    async with app.run_test(size=(110, 32)):
        await until(lambda: app.model.link.state == "connected", what="the SSH link")
        await until(lambda: len(app.model.snapshots) >= 3, what="three snapshots")
        assert sshd.drop_connections(), "no SSH session to drop"
        await until(lambda: app.model.link.state == "reconnecting", what="the console to notice the drop")
        dropped_at = time.time()
        await until(lambda: app.model.link.state == "connected", what="the console to reconnect")
        # Items published during the outage came back from the agent's ring buffer, then live ones.
        await until(
            lambda: app.model.latest is not None and app.model.latest.time > dropped_at + 2,
            what="live snapshots after the reconnect",
        )
        seqs = sorted([s.seq for s in app.model.snapshots] + [e.seq for e in app.model.events])
        times = [s.time for s in app.model.snapshots]
    assert _contiguous(seqs), f"the console's history has a gap: {seqs}"
    tick = shared_agent.status()["tick_interval_s"]
    worst = max(b - a for a, b in itertools.pairwise(times))
    assert worst < 3 * tick, f"chart history has a {worst:.1f} s hole around the drop"


async def test_sshd_restarted_while_the_console_follows_it_reconnects_when_sshd_is_back(
    sshd: Sshd, shared_agent: AgentProc
) -> None:
    app = ssh_console(sshd, shared_agent)
    async with app.run_test(size=(110, 32)):
        await until(lambda: app.model.link.state == "connected", what="the SSH link")
        await until(lambda: len(app.model.snapshots) >= 2, what="two snapshots")
        sshd.stop()
        await until(lambda: app.model.link.state == "reconnecting", what="the console to notice")
        # While sshd is down the console keeps trying (connection refused is worth retrying).
        await until(lambda: app.model.link.attempt >= 2, what="a second attempt against a closed port")
        sshd.start()
        back_at = time.time()
        await until(lambda: app.model.link.state == "connected", what="the console to reconnect")
        await until(
            lambda: app.model.latest is not None and app.model.latest.time > back_at,
            what="live snapshots after sshd came back",
        )
        seqs = sorted([s.seq for s in app.model.snapshots] + [e.seq for e in app.model.events])
    assert _contiguous(seqs), f"the console's history has a gap: {seqs}"


def _sim_engines(state_dir: Path) -> list[psutil.Process]:
    """Every simulated engine launched from this agent's state directory, wherever it is parented."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        is_sim = "agent.cli.main" in cmd and cmd[cmd.index("agent.cli.main") + 1 :][:1] == ["sim"]
        if is_sim and any(str(state_dir) in part for part in cmd):
            with contextlib.suppress(psutil.Error):
                if proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
    return found


async def test_agent_killed_and_restarted_console_reconnects_and_the_one_engine_keeps_running(
    sshd: Sshd, fresh_agent: AgentProc
) -> None:
    engine_pid = fresh_agent.status()["engine_pid"]
    assert [p.pid for p in _sim_engines(fresh_agent.state_dir)] == [engine_pid]
    app = ssh_console(sshd, fresh_agent)
    async with app.run_test(size=(110, 32)):
        await until(lambda: app.model.link.state == "connected", what="the SSH link")
        # A console that has followed the old agent for a while holds a high cursor (seq); the
        # restarted agent must not be ignored until its own numbering catches up with it.
        with fresh_agent.client() as c:
            assert c.put("/v1/telemetry", json={"tick_interval_s": 0.25}).status_code == 200
        await until(lambda: (app.model.last_seq or 0) >= 60, what="the console to follow for a while")
        fresh_agent.kill(signal.SIGKILL)
        await until(lambda: app.model.link.state == "reconnecting", what="the console to notice")
        assert pid_alive(engine_pid), "the engine died with its agent"
        restarted_at = time.time()
        fresh_agent.start()
        status = fresh_agent.status()
        assert status["engine_pid"] == engine_pid, "the new agent did not reattach to the running engine"
        assert status["engine_restarts"] == 0
        await until(lambda: app.model.link.state == "connected", what="the console to reconnect")
        # The console draws what the restarted agent measures, not only what the old one sent.
        await until(
            lambda: app.model.latest is not None and app.model.latest.time > restarted_at,
            what="a snapshot from the restarted agent",
            timeout_s=15,
        )
        assert app.model.latest is not None and app.model.latest.engine_pid == engine_pid
    assert [p.pid for p in _sim_engines(fresh_agent.state_dir)] == [engine_pid], "not exactly one engine"


def test_engine_killed_during_a_benchmark_marks_the_run_failed_and_the_engine_restarts(
    fresh_agent: AgentProc,
) -> None:
    record = fresh_agent.engine_record()
    assert record is not None
    body = {"mode": "sweep", "concurrency": [4], "requests_per_level": 400, "input_len": 64, "output_len": 64}
    with fresh_agent.client() as c:
        response = c.post("/v1/bench", json=body)
        assert response.status_code == 202, response.text
        bench_id = response.json()["bench_id"]

        def progressing() -> bool:
            events = c.get("/v1/events").json()["events"]
            return any(
                e["name"] == "bench.progress" and e["data"].get("bench_id") == bench_id for e in events
            )

        wait_until(progressing, timeout_s=30, what="the benchmark to make progress")
        os.killpg(record["pgid"], signal.SIGKILL)

        def finished() -> dict[str, Any] | None:
            run: dict[str, Any] = c.get(f"/v1/bench/{bench_id}").json()
            return run if run.get("state") not in (None, "running") else None

        run = wait_until(finished, timeout_s=60, what="the benchmark to end")
        assert run["state"] == "failed", run
        assert run["error"] and "engine" in run["error"], "a failed run must say why"
        failed = [
            e
            for e in c.get("/v1/events").json()["events"]
            if e["name"] == "bench.failed" and e["data"].get("bench_id") == bench_id
        ]
        assert len(failed) == 1 and failed[0]["data"]["error"] == run["error"]

    def restarted() -> dict[str, Any] | None:
        status = fresh_agent.status()
        fresh = status["engine_state"] == "ready" and status["engine_pid"] not in (None, record["pid"])
        return status if fresh else None

    # The bench may notice the dead engine before the supervisor does: wait for a new engine.
    status = wait_until(restarted, timeout_s=60, what="a new engine, ready")
    assert status["engine_restarts"] >= 1
    assert not pid_alive(record["pid"])


# -- no space left on device -------------------------------------------------------------------------


@contextlib.contextmanager
def _tiny_tmpfs(path: Path) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here ({done.stderr.strip()}); the in-process ENOSPC test covers it"
        )
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(directory: Path) -> None:
    """Write until the filesystem says ENOSPC: a full disk, for real."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 1024)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def _bigger_profile(text: str) -> str:
    return text.replace('description = "', 'description = "' + "A deliberately long description. " * 200, 1)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root; the in-process test covers it")
def test_no_space_left_when_saving_a_profile_gives_a_clear_error_and_the_old_profile_intact() -> None:
    """ENOSPC for real: the agent's profiles directory is a 64 KiB tmpfs, filled to the last block."""
    root = short_root()
    try:
        source = prepare_profiles(root)
        with _tiny_tmpfs(root / "tiny") as tiny:
            shutil.copy(source, tiny / "tuned.toml")
            old = (tiny / "tuned.toml").read_bytes()
            agent = AgentProc(root=root, profile=source, extra_args=["--profiles-dir", str(tiny)])
            try:
                agent.start()
                _fill(tiny)
                with agent.client() as c:
                    digest = c.get("/v1/profiles/tuned").json()["digest"]
                    response = c.put(
                        "/v1/profiles/tuned",
                        json={
                            "toml": _bigger_profile(
                                source.read_text().replace('name = "local-sim"', 'name = "tuned"', 1)
                            )
                        },
                        headers={"If-Match": f'"{digest}"'},
                    )
                    assert response.status_code == 503, response.text  # the disk's trouble, not the request's
                    issues = response.json()["detail"]["issues"]
                    assert len(issues) == 1
                    assert "No space left on device" in issues[0]["rule"]
                    assert "old file is intact" in issues[0]["rule"]
                    assert issues[0]["file"].endswith("tuned.toml")
                    assert c.get("/v1/profiles/tuned").json()["toml"].encode() == old
                assert (tiny / "tuned.toml").read_bytes() == old
                assert sorted(p.name for p in tiny.iterdir()) == ["filler", "tuned.toml"], "temp file left"
                lines = [json.loads(line) for line in agent.audit_path.read_text().splitlines()]
                (outcome,) = [
                    r for r in lines if r.get("phase") == "outcome" and r["action"]["kind"] == "profile_save"
                ]
                assert outcome["result"]["status"] == "failed"
                assert outcome["result"]["message"].endswith("tuned.toml: not saved, the old file is intact: "
                                                             "No space left on device")  # fmt: skip
            finally:
                agent.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_no_space_left_in_the_profile_library_keeps_the_old_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC simulated in-process at the OS boundary (os.fsync raises it), for hosts without root:
    the same ProfileLibrary.save the agent's PUT /v1/profiles/{name} calls."""
    source = prepare_profiles(tmp_path)
    library = ProfileLibrary(source.parent)
    old = source.read_bytes()
    real_fsync = os.fsync

    def full_disk(fd: int) -> None:
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).endswith(".tmp"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(ProfileError) as caught:
        library.save("local-sim", _bigger_profile(source.read_text()), WriteGuard(profile_digest(old)))
    assert "No space left on device" in str(caught.value) and "old file is intact" in str(caught.value)
    assert source.read_bytes() == old
    assert not [p for p in source.parent.iterdir() if p.name.endswith(".tmp")]


# -- a control request repeated after a timeout ------------------------------------------------------


@contextlib.contextmanager
def _frozen(pid: int) -> Iterator[None]:
    """SIGSTOP: the process holds its socket but answers nothing, as a stalled host would."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


async def test_control_request_repeated_after_a_timeout_is_applied_once(fresh_agent: AgentProc) -> None:
    before = (await engine_live_state(fresh_agent))["threshold"]
    new = before + 7
    request = {"request_id": "e2e-retry-0001", "kind": "threshold", "value": new, "operator": "e2e"}
    with (
        fresh_agent.client(timeout_s=1.0) as impatient,
        _frozen(fresh_agent.pid),
        pytest.raises(httpx.TimeoutException),
    ):
        impatient.post("/v1/actions", json=request)
    with fresh_agent.client() as c:
        plan = c.post("/v1/actions", json=request).json()
        assert plan["mode"] == "live"
        assert c.post("/v1/actions", json=request).json()["action_id"] == plan["action_id"]
        action_id = plan["action_id"]
    with (
        fresh_agent.client(timeout_s=1.0) as impatient,
        _frozen(fresh_agent.pid),
        pytest.raises(httpx.TimeoutException),
    ):
        impatient.post(f"/v1/actions/{action_id}/confirm")
    with fresh_agent.client() as c:
        retried = c.post(f"/v1/actions/{action_id}/confirm").json()
        again = c.post(f"/v1/actions/{action_id}/confirm").json()
        assert retried["status"] == again["status"] == "applied", retried
        assert retried["applied_at"] == again["applied_at"]
        applied_events = [
            e
            for e in c.get("/v1/events").json()["events"]
            if e["name"] == "action.applied" and e["data"].get("action_id") == action_id
        ]
    assert len(applied_events) == 1
    audited = [line for line in fresh_agent.audit_lines() if line["action"].get("action_id") == action_id]
    assert len(audited) == 1 and audited[0]["result"]["status"] == "applied"
    assert (await engine_live_state(fresh_agent))["threshold"] == new
