"""``agent sim`` as an operator runs it: a real process, a real port, keys from files, a clean stop."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agent.cli.main", "sim", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serves_until_terminated_with_the_key_from_its_file(tmp_path: Path) -> None:
    key_file = tmp_path / "api.key"
    key_file.write_text("sk-sim-test\n")
    proc = _start(
        "--profile",
        "profiles/local-sim.toml",
        "--port",
        "0",
        "--speedup",
        "20",
        "--api-key-file",
        str(key_file),
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()  # printed once the socket is listening
        match = re.search(r"on (http://127\.0\.0\.1:\d+)", banner)
        assert match, banner
        url = match.group(1)
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200
        assert httpx.get(f"{url}/server_info", timeout=10).status_code == 401
        info = httpx.get(
            f"{url}/server_info", headers={"Authorization": "Bearer sk-sim-test"}, timeout=10
        ).json()
        assert info["api_key"] == "sk-sim-test"
        reply = httpx.post(
            f"{url}/generate",
            json={"text": "one two", "sampling_params": {"max_new_tokens": 9, "ignore_eos": True}},
            headers={"Authorization": "Bearer sk-sim-test"},
            timeout=10,
        )
        assert reply.json()["meta_info"]["completion_tokens"] == 9
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=15)
    assert code == 0


def test_bad_profile_is_a_clear_error_and_nothing_listens(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text(
        (ROOT / "profiles/local-sim.toml").read_text().replace("page_size = 1", "page_size = 0")
    )
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "sim", "--profile", str(broken), "--port", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "server.page_size" in done.stderr and str(broken) in done.stderr
    assert done.stdout == ""


def test_missing_key_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.key"
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "sim", "--profile", "profiles/local-sim.toml", "--port", "0",
         "--api-key-file", str(missing)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )  # fmt: skip
    assert done.returncode == 2
    assert str(missing) in done.stderr and "cannot read" in done.stderr


def test_whatif_answers_what_a_threshold_does_at_a_concurrency() -> None:
    def run(*extra: str) -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-m", "agent.cli.main", "sim-whatif", "--profile", "profiles/kimi-k25-eagle3.toml",
             "--concurrency", "64", "--input-len", "512", "--output-len", "64", "--json", *extra],
            cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return json.loads(done.stdout)["levels"][0]

    speculating, never = run(), run("--threshold", "16")
    assert speculating["accept_length"] > 2 and never["accept_length"] == 1.0
    assert speculating["concurrency"] == never["concurrency"] == 64
    assert speculating["output_tok_s"] != never["output_tok_s"]


def test_whatif_refuses_a_threshold_on_a_static_profile() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "sim-whatif", "--profile", "profiles/kimi-k25-eagle3-tree.toml",
         "--concurrency", "8", "--threshold", "16"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "adaptive" in done.stderr


def _whatif(profile: Path, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "sim-whatif", "--profile", str(profile),
         "--concurrency", "12", "--input-len", "256", "--output-len", "32", "--requests", "24", "--json", *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_whatif_runs_with_the_profiles_threshold_unless_told_and_says_which(tmp_path: Path) -> None:
    """local-sim with threshold 4: at 12 running the profile's run never speculates, like --threshold 4,
    and unlike --threshold 0; each run names the threshold it used and where it came from."""
    text = re.sub(
        r"^threshold = \d+$", "threshold = 4", (ROOT / "profiles" / "local-sim.toml").read_text(), flags=re.M
    )
    assert "threshold = 4" in text
    profile = tmp_path / "thr4.toml"
    profile.write_text(text)
    default, same, none = (
        _whatif(profile),
        _whatif(profile, "--threshold", "4"),
        _whatif(profile, "--threshold", "0"),
    )
    assert (default["threshold"], default["threshold_source"]) == (4, "profile")
    assert (same["threshold"], same["threshold_source"]) == (4, "option")
    assert (none["threshold"], none["threshold_source"]) == (0, "option")
    assert default["levels"] == same["levels"]
    assert default["levels"][0]["accept_length"] == 1.0 and none["levels"][0]["accept_length"] > 2
    assert "profile's speculation.threshold" in default["threshold_text"]
    table = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "sim-whatif", "--profile", str(profile), "--concurrency", "2",
         "--requests", "4", "--output-len", "16"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert "threshold 4 (the profile's speculation.threshold" in table.splitlines()[0]
