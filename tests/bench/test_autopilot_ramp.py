"""``bench/studies/autopilot_ramp.py`` (issue 24, item 4) end to end against a real ``agent serve --engine sim``.

The script is run as the lead runs it on the GPU host: a subprocess on the agent's socket and token,
its load on the engine's URL. What could break and is checked: the three arms interleaved at every
level in a rotated order, each switch an applied, audited agent action, every arm measured at every
level with the engine's counters and our streams' tokens, the ratios and their interval computed
from the windows it reports, and the operator's threshold and autopilot state back at the end, also
when a SIGTERM cuts the ramp short. Bad input is refused before anything is touched. Waiting is on the
script's own output lines and exit, never a sleep.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_harness import REPO, AgentProc, running_agent

from agent.profile import load_profile
from agent.sglang.info_view import parse_server_info
from agent.sglang.live_control import READBACK_FIELD
from agent.sglang.rules import MAX_THRESHOLD
from bench.studies import ramp_agent, ramp_figures, ramp_plan

SCRIPT = [sys.executable, "-m", "bench.studies.autopilot_ramp"]
"""The script as the lead runs it, from the repository root (each run below has ``cwd=REPO``)."""
COMPARE = REPO / "bench" / "results" / "real-h200-2026-12-01" / "compare-oracle-1.json"
_PROFILED = load_profile(REPO / "profiles" / "local-sim.toml").speculation.threshold
assert _PROFILED is not None
OPERATOR_THRESHOLD: int = _PROFILED
ARMS = ("autopilot", "best", "profile")
RUN_TIMEOUT_S = 180.0


@pytest.fixture
def sim_agent() -> Iterator[AgentProc]:
    with running_agent(extra_args=["--sim-speedup", "20"]) as agent:
        yield agent


def ramp_argv(
    agent: AgentProc, out: Path, *extra: str, levels: str = "1,4,1", hold_s: str = "4"
) -> list[str]:
    return [
        *SCRIPT, "--state-dir", str(agent.state_dir), "--levels", levels,
        "--hold-s", hold_s, "--level-settle-s", "0.3", "--switch-settle-s", "0.2", "--autopilot-settle-s", "0.5",
        "--input-len", "64", "--output-len", "48", "--json", str(out), *extra,
    ]  # fmt: skip


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def bench_audit(agent: AgentProc) -> list[dict[str, Any]]:
    return [line for line in agent.audit_lines() if line.get("operator") == "bench"]


def engine_live(agent: AgentProc) -> dict[str, Any]:
    info = httpx.get(f"{agent.status()['engine_url']}/server_info", timeout=10).json()
    live: dict[str, Any] = info["internal_states"][0][READBACK_FIELD]
    return live


def engine_threshold(agent: AgentProc) -> int:
    return int(engine_live(agent)["threshold"])


def running_speculation(agent: AgentProc) -> dict[str, Any]:
    spec: dict[str, Any] = agent.get("/v1/profile")["profile"]["speculation"]
    return spec


def test_the_arms_interleave_every_switch_is_audited_and_the_operators_setting_comes_back(
    sim_agent: AgentProc, tmp_path: Path
) -> None:
    out = tmp_path / "ramp.json"
    done = subprocess.run(
        ramp_argv(sim_agent, out, "--compare", str(COMPARE)),
        cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env(), check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    best = json.loads(COMPARE.read_text())["recommended_threshold"]
    assert (
        result["arms"]["best"]["threshold"] == best
        and result["arms"]["best"]["source"] == f"compare {COMPARE}"
    )
    assert result["arms"]["profile"]["threshold"] == OPERATOR_THRESHOLD
    # where it ran, as a bench result records it (the 2026-12-03 ramp on the GPU recorded none of it)
    where = result["environment"]
    profile = load_profile(REPO / "profiles" / "local-sim.toml")
    gpus = where["gpus"]
    assert gpus["source"] == "simulated" and gpus["count"] == profile.server.tp_size
    assert gpus["names"] == ["NVIDIA RTX PRO 6000 Blackwell Server Edition"] * profile.server.tp_size
    assert where["server"]["attention_decode"] == (profile.server.attention_backend or "triton")
    assert where["profile"]["name"] == "local-sim" and where["profile"]["sha256"]
    assert "GPUs: 8 × NVIDIA RTX PRO 6000 Blackwell Server Edition [simulated" in done.stdout

    windows = result["windows"]
    assert len(windows) == 9
    orders = [[w["arm"] for w in windows if w["level_index"] == i] for i in range(3)]
    assert all(sorted(order) == sorted(ARMS) for order in orders)  # every arm at every level, once
    assert len({order[0] for order in orders}) == 3, orders  # rotated: each arm goes first once
    assert result["summary"]["every_arm_at_every_level"] is True
    for w in windows:
        assert w["concurrency"] == (1, 4, 1)[w["level_index"]]
        assert w["client_tps"] > 0 and w["engine_tps"] is not None and w["engine_tps"] > 0
        assert w["counted_from_s"] > w["switched_at_s"]  # the settle after the switch is not counted
        assert w["counted_to_s"] - w["counted_from_s"] >= 0.9 * result["plan"]["window_s"]
        if w["arm"] != "autopilot":  # the engine itself read back the arm's threshold at both ends
            assert w["threshold_start"] == w["threshold_end"] == w["threshold"]
    for before, after in itertools.pairwise(windows):
        assert before["counted_to_s"] <= after["switched_at_s"]  # back to back, never overlapping
    first_autopilot = next(w for w in windows if w["arm"] == "autopilot")
    assert first_autopilot["entry_threshold"] == OPERATOR_THRESHOLD  # before its first window: the profile's

    # Every switch the script reports is an applied action in the agent's audit log, in its order.
    applied = [a for a in result["actions"] if a["status"] == "applied"]
    audited = [line for line in bench_audit(sim_agent) if line["result"]["status"] == "applied"]
    assert [a["action_id"] for a in applied] == [line["action"]["action_id"] for line in audited]
    assert [(a["kind"], a["value"]) for a in applied] == [
        (line["action"]["kind"], line["action"]["value"]) for line in audited
    ]
    fixed = [(a["kind"], a["value"]) for a in applied if a["why"].endswith(" arm")]
    assert ("threshold", best) in fixed and ("autopilot", True) in fixed

    # The operator's setting is back, in the agent and in the engine.
    restored = result["restore"]
    assert restored["ok"] is True
    spec = running_speculation(sim_agent)
    assert spec["threshold"] == OPERATOR_THRESHOLD and spec["autopilot"]["enabled"] is False
    assert engine_threshold(sim_agent) == OPERATOR_THRESHOLD
    # Every arm started from the launch step count (pinned, then released on the engine): none is left pinned.
    assert (
        len(result["step_resets_at_s"]) == len(windows)
        and "pinned at the launch count" in result["steps_reset"]
    )
    assert engine_live(sim_agent)["pinned_steps"] == -1
    assert f"restored the operator's setting: threshold {OPERATOR_THRESHOLD}, autopilot off" in done.stdout

    # The ratios are the windows' totals, with an interval from the fixed arms' repeats (c=1 twice).
    client = result["summary"]["client_tps"]
    for a, b in (("autopilot", "best"), ("autopilot", "profile")):
        mine = sum(w["client_tps"] for w in windows if w["arm"] == a)
        theirs = sum(w["client_tps"] for w in windows if w["arm"] == b)
        found = client["ratios"][f"{a}/{b}"]
        assert found["ratio"] == pytest.approx(mine / theirs, rel=1e-12)
        assert found["low"] < found["ratio"] < found["high"]
        assert found["verdict"]
        assert f"{a}/{b} = {found['ratio']:.3f}" in done.stdout
    assert client["noise"]["between_windows_df"] == 2  # best and profile, each twice at c=1
    assert client["totals"]["best"] == pytest.approx(
        sum(w["client_tps"] for w in windows if w["arm"] == "best") / 3, rel=1e-12
    )
    assert "autopilot.enabled" in {e["name"] for e in result["summary"]["autopilot_events"]}


class Lines:
    """The script's stdout, line by line, awaited with a deadline (a reader thread feeds a queue)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        assert proc.stdout is not None
        stdout = proc.stdout

        def pump() -> None:
            for line in stdout:
                self._queue.put(line)
            self._queue.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def until(self, text: str, timeout_s: float = 60.0) -> None:
        while True:
            line = self._queue.get(timeout=timeout_s)
            if line is None:
                raise AssertionError(f"the script ended before printing {text!r}:\n{''.join(self.seen)}")
            self.seen.append(line)
            if text in line:
                return

    def rest(self, timeout_s: float = 60.0) -> str:
        while (line := self._queue.get(timeout=timeout_s)) is not None:
            self.seen.append(line)
        return "".join(self.seen)


def test_sigterm_mid_ramp_puts_the_operators_threshold_and_autopilot_back(
    sim_agent: AgentProc, tmp_path: Path
) -> None:
    with sim_agent.client() as c:  # the operator runs the autopilot: the script must leave it on
        plan = c.post(
            "/v1/actions", json={"request_id": "test-autopilot-on", "kind": "autopilot", "value": True}
        )
        assert c.post(f"/v1/actions/{plan.json()['action_id']}/confirm").json()["status"] == "applied"
    out = tmp_path / "ramp.json"
    argv = ramp_argv(sim_agent, out, "--best-threshold", "8", levels="1,4,16,4,1", hold_s="6")
    proc = subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env()
    )
    try:
        lines = Lines(proc)
        # At level 2 the order is best, profile, autopilot: the fixed arm has turned the autopilot off.
        lines.until("c=4    best      switched")
        assert running_speculation(sim_agent)["autopilot"]["enabled"] is False
        proc.send_signal(signal.SIGTERM)
        text = lines.rest()
        assert proc.wait(timeout=RUN_TIMEOUT_S) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "SIGTERM: stopping the ramp, restoring the operator's setting" in text
    assert f"restored the operator's setting: threshold {OPERATOR_THRESHOLD}, autopilot on" in text
    spec = running_speculation(sim_agent)
    assert spec["threshold"] == OPERATOR_THRESHOLD and spec["autopilot"]["enabled"] is True
    result = json.loads(out.read_text())
    assert result["interrupted"] == "SIGTERM" and result["restore"]["ok"] is True
    assert 3 <= len(result["windows"]) < 15
    # The restore is two audited actions of the operator "bench": the threshold, then the autopilot on.
    last = [line["action"] for line in bench_audit(sim_agent)][-2:]
    assert [(a["kind"], a["value"]) for a in last] == [("threshold", OPERATOR_THRESHOLD), ("autopilot", True)]


def test_bad_input_is_refused_before_the_agent_is_touched(tmp_path: Path) -> None:
    compare = json.loads(COMPARE.read_text())
    compare["recommended_threshold"] = None
    bad = tmp_path / "compare.json"
    bad.write_text(json.dumps(compare))
    nowhere = tmp_path / "no-agent-here"
    base = [*SCRIPT, "--state-dir", str(nowhere)]
    done = subprocess.run(
        [*base, "--compare", str(bad)], capture_output=True, text=True, check=False, cwd=REPO
    )
    assert done.returncode == 2
    assert f"--compare: {bad}: recommended_threshold: the comparison recommends no threshold" in done.stderr
    assert "--best-threshold N" in done.stderr
    done = subprocess.run(
        [*base, "--best-threshold", "4", "--hold-s", "2"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert (
        done.returncode == 2
        and "--hold-s: 2 s leaves" in done.stderr
        and "--hold-s 7.5 or more" in done.stderr
    )
    done = subprocess.run(
        [*base, "--best-threshold", "4"], capture_output=True, text=True, check=False, cwd=REPO
    )
    assert done.returncode == 2 and f"--state-dir: {nowhere}" in done.stderr
    assert not nowhere.exists()


def test_the_autopilot_resumes_from_what_it_held_not_from_a_probe() -> None:
    probe = {"name": "autopilot.probe", "time": 10.0, "data": {"ok": True, "before": {"threshold": 24}}}
    end = {"name": "autopilot.probe_end", "time": 20.0, "data": {"ok": True, "after": {"threshold": 24}}}
    assert ramp_agent.resume_threshold([probe], until=12.0, readback=1) == 24  # cut mid-probe: what it held
    assert ramp_agent.resume_threshold([probe, end], until=21.0, readback=24) == 24
    # nothing yet: the read-back
    assert ramp_agent.resume_threshold([probe, end], until=9.0, readback=32) == 32
    # "none" cannot be the operator's threshold under the autopilot: it re-enters where no batch reaches.
    assert ramp_agent.none_equivalent(parse_server_info({"max_running_requests": 256})) == 257
    assert ramp_agent.none_equivalent(parse_server_info({})) == MAX_THRESHOLD
    assert ramp_plan.order_at(0) == ["autopilot", "best", "profile"]
    assert ramp_plan.order_at(1) == ["best", "profile", "autopilot"]
    assert ramp_plan.order_at(3) == ramp_plan.order_at(0)


def _window(level: int, c: int, arm: str, tps: float, threshold: int | None = None) -> dict[str, Any]:
    return {
        "level_index": level,
        "concurrency": c,
        "arm": arm,
        "threshold": threshold,
        "client_tps": tps,
        "slices": [],
    }


def test_the_noise_is_the_repeats_of_a_fixed_setting_and_widens_the_ratio() -> None:
    windows = [
        _window(0, 1, "autopilot", 110.0), _window(0, 1, "best", 100.0, 8), _window(0, 1, "profile", 90.0, 4),
        _window(1, 8, "autopilot", 420.0), _window(1, 8, "best", 400.0, 8), _window(1, 8, "profile", 440.0, 4),
        _window(2, 1, "autopilot", 108.0), _window(2, 1, "best", 100.0 * math.exp(0.1), 8),
        _window(2, 1, "profile", 90.0 * math.exp(-0.1), 4),
    ]  # fmt: skip
    noise = ramp_figures.window_noise(windows, "client_tps")
    # Two repeats each of best and profile at c=1, each pair 0.1 apart in ln: variance 0.1² / 2 per group.
    assert noise.df == 2 and noise.sigma == pytest.approx(math.sqrt(0.1**2 / 2), rel=1e-9)
    found = ramp_figures.ratio(windows, "autopilot", "best", "client_tps", noise)
    best = [100.0, 400.0, 100.0 * math.exp(0.1)]
    mine = [110.0, 420.0, 108.0]
    assert found["ratio"] == pytest.approx(sum(mine) / sum(best))
    spread = noise.sigma * math.sqrt(
        sum(x * x for x in mine) / sum(mine) ** 2 + sum(y * y for y in best) / sum(best) ** 2
    )
    assert found["high"] == pytest.approx(found["ratio"] * math.exp(4.303 * spread))
    assert found["low"] == pytest.approx(found["ratio"] * math.exp(-4.303 * spread))
    assert ramp_figures.verdict({"ratio": 1.0, "low": 0.99, "high": 1.01}, 0.98).startswith(
        "met (≥ 0.98), beyond"
    )
    assert ramp_figures.verdict({"ratio": 1.0, "low": 0.95, "high": 1.05}, 1.05).startswith(
        "short of 1.05 by 4.8 %"
    )
    # Without a repeated fixed setting the slices stand in, and say that they miss the drift.
    alone = [dict(w, slices=[[50, 0.5], [55, 0.5], [45, 0.5]]) for w in windows[:6]]
    noise = ramp_figures.window_noise(alone, "client_tps")
    assert noise.between is None and noise.sigma is not None and "misses the drift" in noise.source
