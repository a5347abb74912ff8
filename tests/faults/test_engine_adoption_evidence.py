"""An engine is adopted only on evidence that it is this agent's, never on a number a torn record left.

A record torn inside a number leaves a prefix of it: ``"pid": 4`` of pid 400, ``"port": 54`` of port
54619. Before this, the salvaged pid was taken as the engine when any process lived there (a decoy
was adopted, then signalled by ``stop --engine-too``, while the engine ran on unsupervised; a direct
call took pid 1, init), and the salvaged port won over the engine's own ``--port`` (the agent waited
for ``:54``, stopped the healthy engine as "not ready" and lost the operator's threshold).

The faults are real: a real agent and its sim engine, a real kill -9, the record cut on disk, a
decoy process at the pid the tear left (in a pid namespace, the one place a test can choose a pid).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fault_rig import Rig, check, engines_of, make_rig, wait_until

from agent.engine.adopt import adopt_recorded
from agent.engine.find import ENGINE_DIR_ENV, find_engines
from agent.engine.proc import read_cmdline
from agent.engine.record import load_record

pytestmark = pytest.mark.slow

SCENARIO = Path(__file__).with_name("decoy_in_pid_namespace.py")


@pytest.fixture
def new_rig() -> Iterator[Callable[[], Rig]]:
    made: list[Rig] = []

    def make() -> Rig:
        rig = make_rig()
        made.append(rig)
        rig.start()
        rig.wait_ready()
        return rig

    yield make
    for rig in made:
        rig.close()
        shutil.rmtree(rig.root, ignore_errors=True)


def _can_unshare_pid() -> bool:
    done = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", "echo 9 > /proc/sys/kernel/ns_last_pid"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def _decoy(*argv: str) -> subprocess.Popen[bytes]:
    """A live process that is not the engine, in its own process group as an engine is."""
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", *argv], start_new_session=True
    )


def _events(rig: Rig, name: str) -> list[str]:
    with rig.client() as c:
        return [e["message"] for e in c.get("/v1/events").json()["events"] if e["name"] == name]


# ---- a record torn inside the pid -------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare")
def test_a_record_torn_inside_the_pid_adopts_the_engine_never_the_decoy_at_the_torn_pid(
    tmp_path: Path,
) -> None:
    """The issue's steps in a pid namespace: the engine is pid 4xx, the record cut after ``"pid": 4``,
    a decoy lives at pid 4. The agent adopts the engine (its command line names this agent's engine
    directory), keeps its threshold, and ``stop --engine-too`` stops the engine, not the decoy."""
    if not _can_unshare_pid():
        pytest.skip("no pid namespace here (unshare --pid refused)")
    out = tmp_path / "found.json"
    done = subprocess.run(
        [
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            "--kill-child",
            sys.executable,
            str(SCENARIO),
            str(out),
        ],
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert out.exists(), done.stderr.decode(errors="replace")[-3000:]
    found = json.loads(out.read_text())
    assert "error" not in found, found
    assert 400 <= found["engine_pid"] < 500 and found["decoy_pid"] == int(str(found["engine_pid"])[0]), found
    assert found["adopted_pid_at_start"] == found["engine_pid"], f"the decoy was adopted: {found}"
    assert found["adopted_pid"] == found["engine_pid"] and found["engines"] == [found["engine_pid"]], found
    assert found["live_threshold"] == 321, found
    assert "engine_record_unreadable" in found["findings"]
    assert any(f"pid {found['engine_pid']}" in m and "adopted" in m for m in found["record_events"]), found
    assert found["agent_exit"] == 0 and found["stop_status"] == 202
    assert found["decoy_alive_after_stop"], f"stop --engine-too signalled the decoy: {found}"
    assert not found["engine_alive_after_stop"], f"the engine runs on after stop --engine-too: {found}"


def test_a_damaged_record_naming_a_live_strangers_pid_adopts_the_engine_not_the_stranger(
    new_rig: Callable[[], Rig],
) -> None:
    """Outside a namespace: a record whose pid (and pgid) legible before the damage is a live process
    that looks like an engine (its own group, the engine's ``--host`` and ``--port``), with no start
    time or argv hash left to check it by. A number in a damaged file is no evidence."""
    rig = new_rig()
    assert rig.threshold_action(321, f"set-{time.time_ns()}")["status"] == "applied"
    status = rig.status()
    pid, port = status["engine_pid"], int(status["engine_url"].rsplit(":", 1)[1])
    decoy = _decoy("--host", "127.0.0.1", "--port", str(port))
    try:
        rig.kill9()
        (rig.state / "engine.json").write_text(
            f'{{\n "kind": "sim",\n "pid": {decoy.pid},\n "pgid": {decoy.pid},\n "sta'
        )
        rig.start()
        assert rig.status()["engine_pid"] == pid, "the stranger was adopted"
        status = rig.wait_ready()
        assert status["engine_pid"] == pid and engines_of(rig) == [pid]
        assert rig.engine_live()["threshold"] == 321
        said = _events(rig, "engine.record_unreadable")
        assert said and f"pid {pid}" in said[0] and f"pid {decoy.pid} " not in said[0]
        check(rig)
        with rig.client() as c:
            assert c.post("/v1/agent/stop", json={"engine_too": True}).status_code == 202
        assert rig.wait_dead(60) == 0
        assert decoy.poll() is None, "stop --engine-too signalled the stranger"
    finally:
        if decoy.poll() is None:
            os.killpg(decoy.pid, signal.SIGKILL)
        decoy.wait()


def test_a_salvaged_pid_of_init_is_not_the_engine(tmp_path: Path) -> None:
    """The direct call: a salvage that says pid 1 (a record torn after ``"pid": 1``), with the
    engine's address beside it, finds no engine where none of this agent runs."""
    engine_dir = tmp_path / "engine"
    engine_dir.mkdir()
    assert find_engines({"pid": 1, "pgid": 1, "host": "127.0.0.1", "port": 8000}, engine_dir, None) == []


def test_a_record_torn_after_a_digit_of_its_pid_salvages_no_pid(tmp_path: Path) -> None:
    """A number the tear may have cut (nothing after its digits) is not salvaged at all; the agent
    started on it names no engine and adopts none (pid 1 runs, and is not ours)."""
    path = tmp_path / "engine.json"
    path.write_text('{\n "kind": "sim",\n "pid": 1')
    read = load_record(path)
    assert read.problem is not None and "pid" not in read.salvaged
    (tmp_path / "engine").mkdir()
    found = adopt_recorded(path, lambda *_: None, engine_dir=tmp_path / "engine")
    assert found.adopted is None and found.named == []


# ---- a record cut inside the port -------------------------------------------------------------------


def test_a_record_cut_inside_the_port_keeps_the_healthy_engine_and_its_values(
    new_rig: Callable[[], Rig],
) -> None:
    """Cut at ``"port": 54`` of 54619: the engine's own ``--port`` wins; the agent adopts it at once
    where it serves, never stops it as "not ready", and the operator's threshold stays."""
    rig = new_rig()
    assert rig.threshold_action(1158, f"set-{time.time_ns()}")["status"] == "applied"
    status = rig.status()
    pid, url = status["engine_pid"], status["engine_url"]
    port = url.rsplit(":", 1)[1]
    rig.kill9()
    path = rig.state / "engine.json"
    text = path.read_text()
    head = f'"port": {port}'
    path.write_text(text[: text.index(head) + len('"port": ') + 2])
    rig.start()
    assert rig.status()["engine_url"] == url, "the agent looks for the engine at a torn port"
    status = rig.wait_ready(timeout_s=30)
    assert status["engine_pid"] == pid and engines_of(rig) == [pid], "the healthy engine was replaced"
    assert rig.engine_live()["threshold"] == 1158
    assert _events(rig, "engine.start_timeout") == [] and _events(rig, "engine.crashed") == []
    record = rig.engine_record()
    assert record is not None and record["pid"] == pid and record["port"] == int(port)
    check(rig)


def test_an_engine_is_known_by_the_engine_directory_in_its_environment(tmp_path: Path) -> None:
    """SGLang's command line need not name the engine directory; the environment every launch sets
    does. A look-alike without it, in its own group with an engine's ``--port``, is not found."""
    engine_dir = tmp_path / "engine"
    engine_dir.mkdir()
    ours = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", "--host", "127.0.0.1", "--port", "8123"],
        start_new_session=True,
        env={**os.environ, ENGINE_DIR_ENV: str(engine_dir)},
    )
    stranger = _decoy("--host", "127.0.0.1", "--port", "8124")
    try:
        wait_until(lambda: read_cmdline(ours.pid) and read_cmdline(stranger.pid), timeout_s=10, what="both")
        (found,) = find_engines({"pid": stranger.pid}, engine_dir, None)
        assert found.pid == ours.pid and found.port == 8123 and "environment" in found.evidence
    finally:
        for p in (ours, stranger):
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
