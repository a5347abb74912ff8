"""Issue 46's soak (``bench/real/soak.py``): against a real agent on the simulated engine, "off" is
set as the operator "bench" and put back on SIGTERM, and the JSON holds every window measured so far
(patch 03's state sizes, the scheduler's memory) after each one; its verdict and probes on made-up
windows and on this machine's own ``/proc``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_harness import REPO, AgentProc, running_agent
from test_autopilot_ramp import Lines

from agent.profile import load_profile
from agent.sglang.live_control import READBACK_FIELD
from bench.real import soak, soak_probes, soak_verdict

SCRIPT = [sys.executable, "-m", "bench.real.soak"]
_PROFILED = load_profile(REPO / "profiles" / "local-sim.toml").speculation.threshold
assert _PROFILED is not None
OPERATOR_THRESHOLD: int = _PROFILED


@pytest.fixture
def sim_agent() -> Iterator[AgentProc]:
    with running_agent(extra_args=["--sim-speedup", "20"]) as agent:
        yield agent


def engine_threshold(agent: AgentProc) -> int:
    info = httpx.get(f"{agent.status()['engine_url']}/server_info", timeout=10).json()
    return int(info["internal_states"][0][READBACK_FIELD]["threshold"])


def test_sigterm_mid_soak_puts_the_threshold_back_and_keeps_every_window(
    sim_agent: AgentProc, tmp_path: Path
) -> None:
    out = tmp_path / "soak.json"
    argv = [
        *SCRIPT, "--state-dir", str(sim_agent.state_dir), "--concurrency", "8", "--duration-s", "60",
        "--window-s", "1", "--warmup-s", "0.5", "--input-len", "32", "--output-len", "24",
        "--timed-rounds", "10", "--json", str(out),
    ]  # fmt: skip
    proc = subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        lines = Lines(proc)
        lines.until("| 1 | off |", timeout_s=90)
        assert engine_threshold(sim_agent) == soak.OFF_THRESHOLD
        kept = json.loads(out.read_text())  # written after each window, before the run ends
        assert len(kept["windows"]) >= 2 and kept["summary"]["off_windows"] >= 2
        proc.send_signal(signal.SIGTERM)
        text = lines.rest(timeout_s=90)
        assert proc.wait(timeout=90) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert f"threshold back to {OPERATOR_THRESHOLD}: applied" in text
    assert engine_threshold(sim_agent) == OPERATOR_THRESHOLD
    result = json.loads(out.read_text())
    assert result["stopped_by"] == "SIGTERM" and result["off"]["threshold_before"] == OPERATOR_THRESHOLD
    windows = result["windows"]
    assert 2 <= len(windows) < 60
    for w in windows:
        assert w["server"] == "off" and w["threshold"] == soak.OFF_THRESHOLD and w["client_tps"] > 0
        assert set(w["state"]) >= {"missed_slots", "ring_held"} and w["scheduler_rss_kib"] > 0
        assert w["engine_rss_kib"] >= w["scheduler_rss_kib"]  # the engine's tree, from /proc
        assert w["gpu_busy"] is None and w["gpu_unknown"]  # no nvidia-smi here: said, not zero
    assert set(windows[-1]["timer"] or {}) & {"zero_plain", "zero_verify"}  # the round timer at 0 steps
    # Both moves are the operator "bench"'s audited actions: off, then the operator's threshold back.
    moves = [line["action"] for line in sim_agent.audit_lines() if line.get("operator") == "bench"]
    assert [(a["kind"], a["value"]) for a in moves] == [
        ("threshold", soak.OFF_THRESHOLD),
        ("threshold", OPERATOR_THRESHOLD),
    ]


def test_a_baseline_block_without_a_baseline_agent_is_refused_before_anything_changes(
    sim_agent: AgentProc,
) -> None:
    argv = [*SCRIPT, "--state-dir", str(sim_agent.state_dir), "--baseline-every", "3", "--duration-s", "30"]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "--baseline-every and --baseline-after-s need --baseline-state-dir" in done.stderr
    assert engine_threshold(sim_agent) == OPERATOR_THRESHOLD
    assert not [line for line in sim_agent.audit_lines() if line.get("operator") == "bench"]


def test_bad_options_are_refused_with_their_name() -> None:
    done = subprocess.run(
        [*SCRIPT, "--state-dir", "/nonexistent", "--window-s", "0"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "--window-s must be 1 to 600" in done.stderr
    done = subprocess.run(
        [*SCRIPT, "--state-dir", "/nonexistent/k25"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "--state-dir /nonexistent/k25: no agent token there" in done.stderr


def test_the_schedule_puts_baseline_blocks_between_off_windows_and_after() -> None:
    args = soak.parse(["--state-dir", "x", "--baseline-state-dir", "y", "--duration-s", "60", "--window-s", "10",
                       "--baseline-every", "2", "--baseline-block", "1", "--baseline-after-s", "20"])  # fmt: skip
    assert soak.schedule(args) == [
        "off", "off", "baseline", "off", "off", "baseline", "off", "off", "baseline", "baseline",
    ]  # fmt: skip
    alone = soak.parse(["--state-dir", "x", "--duration-s", "30", "--window-s", "10"])
    assert soak.schedule(alone) == ["off", "off", "off"]  # no baseline agent: none after either


def _windows(
    off_tps: list[float], busy_off: float, base_tps: float, busy_base: float
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, tps in enumerate(off_tps):
        out.append({"server": "off", "client_tps": tps, "gpu_busy": busy_off, "off_s_start": 10.0 * i,
                    "off_s_end": 10.0 * (i + 1), "state": {"missed_slots": 60 + i}, "scheduler_rss_kib": 1000 + i,
                    "gc_ms": 2.0})  # fmt: skip
    out.extend({"server": "baseline", "client_tps": base_tps, "gpu_busy": busy_base} for _ in range(3))
    return out


def test_the_verdict_reads_the_first_and_last_minute_and_the_busy_gap() -> None:
    flat = soak_verdict.summary(_windows([5000.0] * 18, 85.0, 5050.0, 88.0))
    assert flat["holds"] is True and flat["last_over_first"] == 1.0
    assert flat["gpu_busy_gap_points"] == 3.0 and flat["gpu_busy_within_bound"] is True
    assert flat["first_and_last"]["missed_slots"] == [60, 77]
    slowed = soak_verdict.summary(_windows([5400.0] * 6 + [4800.0] * 6 + [4300.0] * 6, 55.0, 5100.0, 85.0))
    assert slowed["holds"] is False and slowed["last_over_first"] == round(4300 / 5400, 4)
    assert slowed["gpu_busy_within_bound"] is False
    words = "\n".join(soak_verdict.verdict_lines(slowed))
    assert "does NOT hold (beyond 3 %)" in words and "(beyond 5 points)" in words
    short = soak_verdict.summary(_windows([5000.0] * 6, 85.0, 5000.0, 85.0))
    assert short["holds"] is None and short["holds_unknown"] == "fewer than two minutes of off windows"


def test_the_process_tree_memory_is_this_process_and_its_children() -> None:
    alone = soak_probes.tree_rss_kib(os.getpid())
    assert alone is not None and alone > 0
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while child.pid not in soak_probes.descendants(os.getpid()) and time.monotonic() < deadline:
            time.sleep(0.05)
        both = soak_probes.tree_rss_kib(os.getpid())
        assert both is not None and both > alone
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)
    assert soak_probes.tree_rss_kib(None) is None and soak_probes.tree_rss_kib(2**22 + 12345) is None


def test_a_window_takes_the_gpu_samples_inside_it_and_says_when_there_are_none() -> None:
    sampler = soak_probes.GpuSampler()
    sampler.samples = [(100.0, 50.0, 1900.0), (101.0, 70.0, 1980.0), (105.0, 10.0, 1500.0)]
    assert sampler.window(99.5, 102.0) == {
        "gpu_busy": 60.0,
        "sm_mhz": 1940,
        "gpu_samples": 2,
        "gpu_unknown": None,
    }
    sampler.unavailable = "nvidia-smi is not on this host: GPU busy is not measured"
    empty = sampler.window(200.0, 210.0)
    assert empty["gpu_busy"] is None and empty["gpu_unknown"] == sampler.unavailable
