"""``speculation.skip_zero_step_draft_extend``: validation, rendering, live-vs-restart, the plan and ``profile diff``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent.control.planner import plan_request
from agent.profile import Profile, load_profile, parse_profile
from agent.sglang import launch, rules, spec_env
from agent.wire import ActionRequest

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
EAGLE3 = (PROFILES / "kimi-k25-eagle3.toml").read_text()
TREE = (PROFILES / "kimi-k25-eagle3-tree.toml").read_text()
BASELINE = (PROFILES / "kimi-k25-baseline.toml").read_text()
THRESHOLD_LINE = re.search(r"^threshold = \d+$", EAGLE3, re.M)[0]  # type: ignore[index]
SKIP = "skip_zero_step_draft_extend = true\n"
KEY = "speculation.skip_zero_step_draft_extend"
VAR = "SGLANG_SPEC_SKIP_ZERO_STEP_DRAFT_EXTEND"


def _with_skip(text: str) -> str:
    """The profile text with the switch on, inside its [speculation] section."""
    return text.replace("[speculation]\n", "[speculation]\n" + SKIP)


def _issues(text: str) -> list[tuple[str, str, str]]:
    return [(i.severity, i.key, i.rule) for i in rules.check_profile(parse_profile(text), "p.toml")]


def test_the_profile_key_names_the_variable_we_render() -> None:
    assert spec_env.SKIP_ZERO_STEP_KEY == KEY
    assert spec_env.SKIP_ZERO_STEP_DRAFT_EXTEND == VAR


def test_on_an_adaptive_profile_with_a_threshold_it_is_valid_and_silent() -> None:
    before = _issues(EAGLE3)
    assert _issues(_with_skip(EAGLE3)) == before


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (_with_skip(BASELINE), "without speculation"),
        (_with_skip(TREE), "only topk=1"),
        (
            _with_skip(EAGLE3.replace("adaptive = true", "adaptive = false"))
            .replace(THRESHOLD_LINE + "\n", "")
            .replace("live_steps = [1, 2, 3]\n", ""),
            "speculation.adaptive is false",
        ),
    ],
    ids=["no-speculation", "tree-topk4", "static"],
)
def test_where_the_server_never_runs_at_zero_steps_it_is_an_error(text: str, words: str) -> None:
    errors = [(k, r) for s, k, r in _issues(text) if s == "error"]
    assert [k for k, _ in errors] == [KEY], errors
    assert "no effect" in errors[0][1] and words in errors[0][1]


def test_adaptive_without_a_threshold_is_a_warning_not_an_error() -> None:
    text = _with_skip(EAGLE3).replace(THRESHOLD_LINE + "\n", "")
    issues = _issues(text)
    assert not [i for i in issues if i[0] == "error"]
    assert any(s == "warning" and k == KEY and "speculation.threshold" in r for s, k, r in issues)


def test_setting_the_variable_in_server_env_is_refused() -> None:
    text = EAGLE3.replace("[server.env]\n", f'[server.env]\n{VAR} = "1"\n')
    errors = [(k, r) for s, k, r in _issues(text) if s == "error"]
    assert errors == [("server.env", f"{VAR} is rendered from {KEY}; set it there instead")]


def test_rendered_explicitly_for_every_speculative_profile(tmp_path: Path) -> None:
    on = launch.render_launch(parse_profile(_with_skip(EAGLE3)), run_dir=tmp_path)
    assert on.env == {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1", VAR: "1"}
    off = launch.render_launch(load_profile(PROFILES / "kimi-k25-eagle3.toml"), run_dir=tmp_path)
    assert off.env[VAR] == "0"  # an inherited environment cannot switch it on behind the profile
    tree = launch.render_launch(load_profile(PROFILES / "kimi-k25-eagle3-tree.toml"), run_dir=tmp_path)
    assert tree.env[VAR] == "0"
    base = launch.render_launch(load_profile(PROFILES / "kimi-k25-baseline.toml"), run_dir=tmp_path)
    assert VAR not in base.env
    assert not any("skip" in a or "zero" in a for a in on.argv)  # an environment switch, never a flag


def test_a_change_needs_a_restart_and_says_why_and_what_it_costs() -> None:
    old = load_profile(PROFILES / "kimi-k25-eagle3.toml")
    new = parse_profile(_with_skip(EAGLE3))
    plan = rules.classify_change(old, new)
    assert plan.mode == "restart"
    (reason,) = plan.reasons
    assert reason.startswith(f"{KEY} off → on: needs a restart")
    assert VAR in reason and "cold" in reason
    assert rules.classify_change(new, old).mode == "restart"


def _req(kind: str, value: object) -> ActionRequest:
    return ActionRequest(request_id="req-unit-0001", kind=kind, value=value)  # type: ignore[arg-type]


def _no_named(name: str) -> Profile:
    raise AssertionError("not used")


@pytest.fixture
def running() -> Profile:
    return parse_profile(_with_skip(EAGLE3))


def test_clearing_the_threshold_live_is_not_refused_because_of_the_skip(running: Profile) -> None:
    draft = plan_request(_req("threshold", 0), running, _no_named)
    assert draft.mode == "live", draft.reason
    assert draft.new_profile is not None and draft.new_profile.speculation.skip_zero_step_draft_extend


@pytest.mark.parametrize(("kind", "value"), [("topk", 4), ("adaptive", False)])
def test_turning_adaptive_off_drops_the_skip_and_says_so(running: Profile, kind: str, value: object) -> None:
    draft = plan_request(_req(kind, value), running, _no_named)
    assert draft.mode == "restart", draft.reason
    assert draft.new_profile is not None
    assert not draft.new_profile.speculation.skip_zero_step_draft_extend
    assert "0-step draft-extend skip" in draft.reason
    assert any(c.key == KEY and c.old is True and c.new is False for c in draft.changes)


def test_profile_diff_shows_the_key_and_the_restart(tmp_path: Path) -> None:
    skip = tmp_path / "skip.toml"
    skip.write_text(_with_skip(EAGLE3))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent.cli.main",
            "profile",
            "diff",
            "--json",
            str(PROFILES / "kimi-k25-eagle3.toml"),
            str(skip),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["changes"] == [{"key": KEY, "old": False, "new": True}]
    assert data["plan"]["mode"] == "restart"
    assert VAR in json.dumps(data["plan"])
