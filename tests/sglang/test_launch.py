"""Rendering a profile into SGLang 0.5.23's launch argv, environment and files."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import yaml

from agent.profile import load_profile, parse_profile
from agent.sglang import launch

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
EAGLE3 = (PROFILES / "kimi-k25-eagle3.toml").read_text()


def _value(argv: list[str], flag: str) -> str:
    assert argv.count(flag) == 1, f"{flag} appears {argv.count(flag)} times"
    return argv[argv.index(flag) + 1]


def test_eagle3_argv(tmp_path: Path) -> None:
    profile = load_profile(PROFILES / "kimi-k25-eagle3.toml")
    spec = launch.render_launch(profile, run_dir=tmp_path)
    argv = spec.argv
    assert argv[:2] == ["-m", "sglang.launch_server"]
    assert all(isinstance(a, str) for a in argv)
    assert _value(argv, "--model-path") == "/models/Kimi-K2.5-INT4"
    assert _value(argv, "--tp-size") == "8"
    assert _value(argv, "--cuda-graph-max-bs-decode") == "256"
    assert "--cuda-graph-max-bs" not in argv
    assert _value(argv, "--max-running-requests") == "256"
    assert "--enable-metrics" in argv
    assert _value(argv, "--speculative-algorithm") == "EAGLE3"
    assert (_value(argv, "--speculative-num-steps"), _value(argv, "--speculative-eagle-topk")) == ("3", "1")
    assert _value(argv, "--speculative-num-draft-tokens") == "4"
    assert "--speculative-adaptive" in argv
    assert _value(argv, "--speculative-adaptive-config") == str(tmp_path / "kimi-k25-eagle3.adaptive.json")
    threshold = str(profile.speculation.threshold)
    assert spec.adaptive_config == {
        "k25_zero_step": "plain",
        "1": {"candidate_steps": [1, 2, 3]},
        threshold: {"candidate_steps": [0]},
    }
    assert spec.env == {
        "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1",
        "SGLANG_SPEC_SKIP_ZERO_STEP_DRAFT_EXTEND": "0",
    }
    assert "--config" not in argv  # no key files in this profile


def test_tree_and_baseline_have_no_adaptive_config(tmp_path: Path) -> None:
    tree = launch.render_launch(load_profile(PROFILES / "kimi-k25-eagle3-tree.toml"), run_dir=tmp_path)
    assert tree.adaptive_config is None and "--speculative-adaptive" not in tree.argv
    assert _value(tree.argv, "--speculative-num-draft-tokens") == "16"
    assert _value(tree.argv, "--speculative-eagle-topk") == "4"
    base = launch.render_launch(load_profile(PROFILES / "kimi-k25-baseline.toml"), run_dir=tmp_path)
    assert not any(a.startswith("--speculative") for a in base.argv)
    assert base.to_dict()["adaptive_config"] is None


def test_metrics_always_on_even_when_profile_says_false(tmp_path: Path) -> None:
    profile = parse_profile(EAGLE3.replace("[server]\n", "[server]\nenable_metrics = false\n"))
    assert "--enable-metrics" in launch.render_launch(profile, run_dir=tmp_path).argv


def test_draft_tokens_rendered_as_sglang_resolves_them(tmp_path: Path) -> None:
    profile = parse_profile(EAGLE3.replace("num_draft_tokens = 4", "num_draft_tokens = 9"))
    assert (
        _value(launch.render_launch(profile, run_dir=tmp_path).argv, "--speculative-num-draft-tokens") == "4"
    )


def test_extra_flags_come_last_and_verbatim(tmp_path: Path) -> None:
    profile = parse_profile(
        EAGLE3.replace("[server]\n", '[server]\nextra_flags = ["--schedule-policy", "lpm; rm -rf /"]\n')
    )
    argv = launch.render_launch(profile, run_dir=tmp_path).argv
    assert argv[-2:] == ["--schedule-policy", "lpm; rm -rf /"]  # one argv item, never a shell


def test_keys_go_to_a_private_config_file_not_argv(tmp_path: Path) -> None:
    key = tmp_path / "api.key"
    key.write_text("sk-very-secret\n")
    admin = tmp_path / "admin.key"
    admin.write_text("admin:'quoted'\"too\"#{x}")
    profile = parse_profile(
        EAGLE3.replace("[server]\n", f'[server]\napi_key_file = "{key}"\nadmin_api_key_file = "{admin}"\n')
    )
    spec = launch.render_launch(profile, run_dir=tmp_path / "run")
    assert "sk-very-secret" not in json.dumps(spec.to_dict())
    config_path = _value(spec.argv, "--config")
    assert config_path == spec.secrets_config_path
    written = launch.write_launch_files(spec)
    assert {str(p) for p in written} == {config_path, spec.adaptive_config_path}
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    loaded = yaml.safe_load(Path(config_path).read_text())
    assert loaded == {"api-key": "sk-very-secret", "admin-api-key": "admin:'quoted'\"too\"#{x}"}
    assert json.loads(Path(spec.adaptive_config_path or "").read_text()) == spec.adaptive_config
    assert not list((tmp_path / "run").glob(".*.tmp"))


@pytest.mark.parametrize(
    ("content", "why"), [("", "empty"), ("two words", "one line"), ("a\nb\n", "one line")]
)
def test_bad_key_files_are_refused_naming_the_file(tmp_path: Path, content: str, why: str) -> None:
    key = tmp_path / "api.key"
    key.write_text(content)
    profile = parse_profile(EAGLE3.replace("[server]\n", f'[server]\napi_key_file = "{key}"\n'))
    spec = launch.render_launch(profile, run_dir=tmp_path / "run")
    with pytest.raises(launch.LaunchError, match=why) as err:
        launch.write_launch_files(spec)
    assert str(key) in str(err.value)
    assert not (tmp_path / "run" / "kimi-k25-eagle3.secrets.yaml").exists()


def test_missing_key_file(tmp_path: Path) -> None:
    profile = parse_profile(EAGLE3.replace("[server]\n", f'[server]\napi_key_file = "{tmp_path}/nope"\n'))
    with pytest.raises(launch.LaunchError, match="cannot read"):
        launch.write_launch_files(launch.render_launch(profile, run_dir=tmp_path))


def test_default_run_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert launch.default_run_dir() == tmp_path / "k25console" / "engine"
