"""The real ``agent`` command (its installed entry point, in a subprocess): profile validate/render/diff and kv."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "profiles"

# The shipped threshold is the simulated engine's crossover and may move; tests edit whatever it is.
THRESHOLD_LINE = re.search(r"^threshold = \d+$", (PROFILES / "kimi-k25-eagle3.toml").read_text(), re.M)[0]  # type: ignore[index]

EAGLE3 = (PROFILES / "kimi-k25-eagle3.toml").read_text()
AGENT = Path(sys.executable).with_name("agent")


def agent(*args: str) -> subprocess.CompletedProcess[str]:
    assert AGENT.exists(), f"the agent entry point is not installed next to {sys.executable}"
    return subprocess.run([str(AGENT), *args], capture_output=True, text=True, check=False, cwd=ROOT)


def test_shipped_profiles_validate() -> None:
    paths = sorted(str(p) for p in PROFILES.glob("*.toml"))
    done = agent("profile", "validate", *paths)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("valid for SGLang 0.5.23") == len(paths)
    # the tree profile passes with its warning, which says why the threshold is unavailable
    assert "warning:" in done.stderr and "kimi-k25-eagle3-tree.toml: speculation.eagle_topk" in done.stderr
    assert "only topk=1 is supported" in done.stderr


@pytest.mark.parametrize(
    ("old", "new", "key", "rule"),
    [
        ("eagle_topk = 1", "eagle_topk = 0", "speculation.eagle_topk", "greater than or equal to 1"),
        ("num_steps = 3\n", "", "speculation.num_steps", "EAGLE3 needs num_steps"),
        ("[speculation]\n", "[speculation]\nthresold = 8\n", "speculation.thresold", "unknown key"),
        ("tp_size = 8", 'tp_size = "eight"', "server.tp_size", "must be an integer"),
        (THRESHOLD_LINE, "threshold = 1", "speculation.threshold", "at least 2"),
    ],
    ids=["topk-0", "eagle3-without-steps", "unknown-key", "tp-eight", "threshold-1"],
)
def test_bad_profile_exits_1_naming_file_key_rule(
    tmp_path: Path, old: str, new: str, key: str, rule: str
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(EAGLE3.replace(old, new, 1))
    before = (bad.read_bytes(), bad.stat().st_mtime_ns)
    done = agent("profile", "validate", str(bad))
    assert done.returncode == 1
    line = next((ln for ln in done.stderr.splitlines() if ln.startswith(f"error: {bad}: {key}: ")), None)
    assert line is not None, done.stderr
    assert rule in line
    assert (bad.read_bytes(), bad.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


def test_every_error_is_listed_and_valid_files_still_checked(tmp_path: Path) -> None:
    bad = tmp_path / "two.toml"
    bad.write_text(
        EAGLE3.replace("eagle_topk = 1", "eagle_topk = 0").replace("tp_size = 8", 'tp_size = "eight"')
    )
    done = agent("profile", "validate", str(bad), str(PROFILES / "local-sim.toml"))
    assert done.returncode == 1
    assert done.stderr.count("error:") == 2
    assert "local-sim.toml: valid" in done.stdout


def test_render_json_for_eagle3() -> None:
    done = agent(
        "profile", "render", "--json", "--run-dir", "/run/k25", str(PROFILES / "kimi-k25-eagle3.toml")
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {"argv", "env", "adaptive_config"}
    assert data["argv"][:2] == ["-m", "sglang.launch_server"]
    assert (
        data["argv"][data["argv"].index("--speculative-adaptive-config") + 1]
        == "/run/k25/kimi-k25-eagle3.adaptive.json"
    )
    threshold_slot = {k: v for k, v in data["adaptive_config"].items() if v == {"candidate_steps": [0]}}
    assert list(threshold_slot) == [THRESHOLD_LINE.split(" = ")[1]]
    assert data["env"] == {
        "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1",
        "SGLANG_SPEC_SKIP_ZERO_STEP_DRAFT_EXTEND": "0",
    }


def test_render_refuses_an_invalid_profile(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(EAGLE3.replace("num_steps = 3", "num_steps = 5"))
    done = agent("profile", "render", str(bad))
    assert done.returncode == 1
    assert "speculation.num_steps" in done.stderr and done.stdout == ""


def test_render_text_mentions_baseline_has_no_adaptive() -> None:
    done = agent("profile", "render", "--json", str(PROFILES / "kimi-k25-baseline.toml"))
    assert json.loads(done.stdout)["adaptive_config"] is None


def test_diff_live_and_restart(tmp_path: Path) -> None:
    live = tmp_path / "live.toml"
    live.write_text(EAGLE3.replace(THRESHOLD_LINE, "threshold = 12"))
    done = agent("profile", "diff", "--json", str(PROFILES / "kimi-k25-eagle3.toml"), str(live))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    shipped = int(THRESHOLD_LINE.split(" = ")[1])
    assert data["changes"] == [{"key": "speculation.threshold", "old": shipped, "new": 12}]
    assert data["plan"]["mode"] == "live"
    text = agent(
        "profile", "diff", str(PROFILES / "kimi-k25-eagle3.toml"), str(PROFILES / "kimi-k25-eagle3-tree.toml")
    )
    assert text.returncode == 0
    assert "plan: restart" in text.stdout and "topk" in text.stdout


def test_kv_json_has_the_three_states() -> None:
    done = agent(
        "kv", str(PROFILES / "kimi-k25-eagle3-tree.toml"), "--running", "48", "--context", "2000", "--json"
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    for side in ("on", "baseline"):
        assert {
            "alloc_len_per_decode",
            "reserve_per_decode",
            "tokens_held",
            "tokens_reserved",
            "requests_that_fit",
            "pool_tokens",
            "fits",
        } <= set(data[side])
    assert data["on"]["tokens_reserved"] == 48 * 32  # reference example A: 48 requests keep 1,536 slots ahead
    assert data["off"] is None and "topk=1" in data["off_unavailable"]  # a tree server has no 0-step state
    assert data["baseline"]["pool_tokens"] == data["drafter"]["pool_tokens_without_drafter"] > data["pool"]
    table = agent(
        "kv",
        str(PROFILES / "kimi-k25-eagle3.toml"),
        "--running",
        "48",
        "--context",
        "2000",
        "--pool",
        "100000",
    )
    header = next(line for line in table.stdout.splitlines() if "spec on" in line)
    assert header.split() == ["spec", "on", "off", "(0", "steps)", "no", "drafter"]
    reserve = next(line for line in table.stdout.splitlines() if line.startswith("reserve per request"))
    assert reserve.split()[-3:] == ["8", "8", "2"]  # 3/1/4 adaptive: 0 steps still reserves the widest
    assert "(given)" in table.stdout and "without the drafter the pool would be" in table.stdout


def test_kv_says_when_the_requests_do_not_fit_and_can_fail() -> None:
    """Issue 14 item 10: 64 requests of 4,000 tokens in the estimated pool."""
    args = ["kv", str(PROFILES / "kimi-k25-eagle3.toml"), "--running", "64", "--context", "4000"]
    plain = agent(*args)
    assert plain.returncode == 0, plain.stderr
    assert (
        "does not fit (speculation on, off (0 steps)): 64 requests of 4000 tokens hold 256,512 tokens"
        in plain.stdout
    )
    strict = agent(*args, "--fail-if-overfull")
    assert strict.returncode == 1 and "does not fit" in strict.stdout
    as_json = agent(*args, "--json", "--fail-if-overfull")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["overfull"] is True
    fits = agent(
        "kv",
        str(PROFILES / "kimi-k25-eagle3.toml"),
        "--running",
        "16",
        "--context",
        "4000",
        "--fail-if-overfull",
    )
    assert (
        fits.returncode == 0
        and "fits (speculation on, off (0 steps), no drafter): the pool holds all 16 requests at once"
        in fits.stdout
    )
    # Issue 39: where only the server without a drafter holds them, the summary says so (it said
    # nothing of "no drafter" before)
    between = agent("kv", str(PROFILES / "kimi-k25-eagle3.toml"), "--running", "32", "--context", "4000")
    assert "fits (no drafter): the pool holds all 32 requests at once" in between.stdout, between.stdout


def test_kv_rejects_bad_numbers() -> None:
    done = agent("kv", str(PROFILES / "local-sim.toml"), "--running", "4", "--context", "0")
    assert done.returncode == 2
    assert "--context" in done.stderr and "at least 1" in done.stderr


@pytest.mark.parametrize(
    "cmd", [["profile"], ["profile", "validate"], ["profile", "render"], ["profile", "diff"], ["kv"]]
)
def test_help(cmd: list[str]) -> None:
    done = agent(*cmd, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: agent " + " ".join(cmd))


def test_render_names_env_files_never_their_values_and_validate_warns_on_a_secret(tmp_path: Path) -> None:
    token = tmp_path / "hf.token"
    token.write_text("hf_readfromfile12345\n")
    with_file = tmp_path / "with-file.toml"
    with_file.write_text(EAGLE3 + f'\n[server.env_files]\nHF_TOKEN = "{token}"\n')
    done = agent("profile", "render", str(with_file))
    assert done.returncode == 0, done.stderr
    assert f"HF_TOKEN from {token}" in done.stdout and "hf_readfromfile" not in done.stdout
    inline = tmp_path / "inline.toml"
    inline.write_text(EAGLE3.replace("[server.env]\n", '[server.env]\nHF_TOKEN = "hf_inline1234567"\n', 1))
    checked = agent("profile", "validate", str(inline))
    assert checked.returncode == 0, checked.stderr  # a warning, not an error
    assert "warning:" in checked.stderr and "server.env.HF_TOKEN" in checked.stderr
    assert "server.env_files" in checked.stderr
