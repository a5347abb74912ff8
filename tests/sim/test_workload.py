"""Traffic that changes over time, replayed on the engine model: workload files (errors name the key),
client ramps, the acceptance shifting with the phase, the same requests whatever the setting, and
``agent sim-whatif --workload`` as an operator runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.profile import load_profile
from agent.sim.config import sim_config
from agent.sim.engine import Engine
from agent.sim.replay import replay
from agent.sim.workload import (
    Phase,
    Workload,
    WorkloadError,
    load_workload,
    parse_workload,
    shipped_workloads,
)

ROOT = Path(__file__).resolve().parents[2]
PROFILE = load_profile(ROOT / "profiles" / "kimi-k25-eagle3.toml")

TWO_PHASES = """
name = "two"
[[phase]]
seconds = 60
input_len = 256
output_len = 256
acceptance = "calibrated"
concurrency = [4, 32]
[[phase]]
seconds = 60
input_len = 256
output_len = 256
acceptance = "random"
concurrency = 32
"""


def test_the_shipped_workload_loads_by_name() -> None:
    assert "shifting" in shipped_workloads()
    shifting = load_workload("shifting")
    assert (
        shifting.seconds == 1200
        and [p.acceptance for p in shifting.phase] == ["calibrated"] * 2 + ["low"] * 2
    )
    assert {p.input_len for p in shifting.phase} == {512, 3072}


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (('acceptance = "random"', 'acceptance = "great"'), "phase[1].acceptance: must be one of"),
        (("seconds = 60\ninput_len = 256\noutput_len = 256\nacceptance = \"random\"", "seconds = -1\ninput_len = 256\noutput_len = 256\nacceptance = \"random\""), "phase[1].seconds"),
        (("concurrency = 32", "concurrency = []"), "phase[1].concurrency"),
        (("concurrency = 32", "clients = 32"), "unknown key"),
    ],
)  # fmt: skip
def test_a_bad_workload_names_the_file_and_key(edit: tuple[str, str], says: str) -> None:
    with pytest.raises(WorkloadError) as err:
        parse_workload(TWO_PHASES.replace(*edit), "w.toml")
    assert str(err.value).startswith("w.toml: ") and says in str(err.value)


def test_clients_follow_the_points_of_a_phase() -> None:
    phase = Phase(seconds=100, input_len=1, output_len=1, concurrency=[8, 80, 8])
    assert [phase.clients_at(t) for t in (0, 25, 50, 75, 100, 500)] == [8, 44, 80, 44, 8, 8]
    assert Phase(seconds=10, input_len=1, output_len=1, concurrency=[5]).clients_at(3) == 5


def test_a_replay_sends_the_same_requests_whatever_the_setting_and_acceptance_follows_the_phase() -> None:
    workload = parse_workload(TWO_PHASES, "two.toml")
    config = sim_config(PROFILE)
    seen: dict[int, list[tuple[float, float]]] = {}
    for threshold in (0, 1):
        engine = Engine(config, seed=5)
        assert engine.controller is not None
        engine.controller.set_threshold(threshold)
        accept: list[tuple[float, float]] = []

        def tick(eng: Engine, now: float, accept: list[tuple[float, float]] = accept) -> None:
            accept.append((now, eng.cal.acceptance.first_accept_max))

        result = replay(config, workload, engine=engine, on_tick=tick)
        assert result.seconds == pytest.approx(120, abs=1) and len(result.phase_tokens) == 2
        assert sum(result.phase_tokens) == result.output_tokens > 0
        seen[threshold] = accept
    # The random head's acceptance rules from the second phase on, in both replays.
    for accept in seen.values():
        assert {a for t, a in accept if t < 59} == {0.92} and {a for t, a in accept if t > 61} == {0.0}


def test_drafting_that_stops_paying_mid_run_shows_in_the_phase_it_stops() -> None:
    workload = parse_workload(TWO_PHASES, "two.toml")
    config = sim_config(PROFILE)
    runs = {}
    for threshold in (0, 1):
        engine = Engine(config, seed=5)
        assert engine.controller is not None
        engine.controller.set_threshold(threshold)
        runs[threshold] = replay(config, workload, engine=engine).phase_tokens
    assert runs[0][0] > runs[1][0]  # calibrated drafts: speculating delivers more
    assert runs[0][1] < runs[1][1]  # no draft kept: not speculating delivers more


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "sim-whatif", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_sim_whatif_replays_a_workload_with_fixed_thresholds_and_the_autopilot(tmp_path: Path) -> None:
    path = tmp_path / "two.toml"
    path.write_text(TWO_PHASES)
    done = run_cli(
        "--profile",
        "profiles/kimi-k25-eagle3.toml",
        "--workload",
        str(path),
        "--thresholds",
        "0,1",
        "--autopilot",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["workload"] == "two" and [r["threshold"] for r in data["runs"]] == [0, 1, None]
    auto = data["runs"][-1]
    assert auto["setting"] == "autopilot" and auto["changes"] >= 1 and len(auto["phase_tok_s"]) == 2
    table = run_cli("--profile", "profiles/kimi-k25-eagle3.toml", "--workload", str(path))
    assert table.returncode == 0 and "threshold 125" in table.stdout and "tok/s per phase" in table.stdout


def test_sim_whatif_refuses_a_bad_workload_with_its_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(TWO_PHASES.replace("input_len = 256", "input_len = 0", 1))
    done = run_cli("--profile", "profiles/kimi-k25-eagle3.toml", "--workload", str(path))
    assert done.returncode == 2 and f"{path}: phase[0].input_len" in done.stderr
    assert run_cli("--profile", "profiles/kimi-k25-eagle3.toml", "--workload", "nope").returncode == 2


def test_workload_model_round_trips() -> None:
    made = Workload(name="x", phase=[Phase(seconds=5, input_len=1, output_len=2, concurrency=[1])])
    assert made.at(2.0)[0] == 0 and made.at(99.0)[2] == 5
