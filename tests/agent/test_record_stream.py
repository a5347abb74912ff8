"""bench/studies/record_stream.py against a real ``agent serve --engine sim``: it records the stream in the
console's --record format while it moves the threshold through the agent API, and the console's own
replay reader loads the file."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from daemon_harness import REPO, Agent

from agent.wire import Snapshot
from console.link.replay import load_recording

RECORDER = [sys.executable, "-m", "bench.studies.record_stream"]
"""The recorder as an operator runs it, from the repository root (``cwd=REPO``)."""


def test_the_recorder_records_snapshots_while_the_threshold_moves(make_agent: Any, tmp_path: Path) -> None:
    agent: Agent = make_agent("sim-record", extra=["--sim-speedup", "5"]).start()
    agent.wait_state("ready")
    out = tmp_path / "stream.jsonl"
    done = subprocess.run(
        [*RECORDER, "--socket", str(agent.socket),
         "--out", str(out), "--seconds", "5", "--thresholds", "2,0", "--every", "1.5", "--traffic", "2",
         "--engine-key-file", str(agent.root / "engine.key")],
        capture_output=True, text=True, timeout=60, check=False, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "threshold 2: applied" in done.stdout and "threshold 0: applied" in done.stdout
    items, responses = load_recording(out)
    snapshots = [Snapshot.model_validate(i.data) for i in items if i.kind == "snapshot"]
    assert len(snapshots) >= 3
    thresholds = [s.speculation.threshold for s in snapshots if s.speculation.threshold is not None]
    assert thresholds[0] not in (0, 2) and 2 in thresholds and thresholds[-1] == 0
    events = [i.data["name"] for i in items if i.kind == "event"]
    assert events.count("action.applied") == 2
    assert "GET /v1/status" in responses and "GET /v1/profiles" in responses
    assert "0 requests served" not in done.stdout, done.stdout
    assert any((s.load.running or 0) > 0 for s in snapshots), done.stdout  # the traffic ran


def test_sigterm_ends_the_recording_early_and_whole(make_agent: Any, tmp_path: Path) -> None:
    """The GPU session stops the recorder when the benchmark it watches ends: SIGTERM, not a timeout."""
    agent: Agent = make_agent("sim-record-term", extra=["--sim-speedup", "5"]).start()
    agent.wait_state("ready")
    out = tmp_path / "stream.jsonl"
    child = subprocess.Popen(
        [*RECORDER, "--socket", str(agent.socket), "--out", str(out), "--seconds", "300"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
    )  # fmt: skip
    assert child.stdout is not None
    for line in child.stdout:  # the recorder says when it is recording; then the first snapshots land
        if "recording" in line:
            break
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and '"snapshot"' not in (out.read_text() if out.exists() else ""):
        time.sleep(0.1)  # polling a file another process writes: there is no event to await
    started = time.monotonic()
    child.send_signal(signal.SIGTERM)
    rest = child.communicate(timeout=30)[0]
    assert child.returncode == 0, rest
    assert time.monotonic() - started < 15
    assert "snapshots" in rest and "-> " in rest
    items, _ = load_recording(out)  # every line whole: the replay reader loads it
    assert any(i.kind == "snapshot" for i in items)
