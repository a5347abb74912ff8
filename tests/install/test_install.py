"""``agent install`` for real: venv, pip, GNU patch, verify, manifest, link switch, against a package
index on disk (small wheels built here) instead of the registry, so no GPU stack is downloaded.

The fake ``sglang==0.5.23`` wheel carries the pinned wheel's real files that the patch set touches, a
``sglang.launch_server`` whose ``--help`` works, and a dependency that must come from the same index.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import tomli_w
from install_wheels import (
    SGLANG_START_UP_FILES,
    STUB_REQUIRES,
    build_index,
    build_wheel,
    start_up_stub_wheels,
)

from agent.cli.main import main
from agent.install.manifest import MANIFEST_NAME, manifest_hash, read_manifest
from agent.install.patching import PatchState, detect_state, file_sha256
from agent.install.patchset import load_patch_set
from agent.install.stack_check import stack_problems

pytestmark = (
    pytest.mark.slow
)  # several real venvs (about 1 s each with uv, 5 s with pip); still run by default

REPO = Path(__file__).resolve().parents[2]
LAUNCHER_OK = b"import argparse\nargparse.ArgumentParser(prog='sglang.launch_server').parse_args()\n"
LAUNCHER_BROKEN = b"raise SystemExit('launcher broken on purpose')\n"


def _sglang_files(pristine_tree: Path, launcher: bytes) -> dict[str, bytes]:
    files = {
        "sglang/__init__.py": b'__version__ = "0.5.23"\n',
        "sglang/launch_server.py": launcher,
        **SGLANG_START_UP_FILES,
    }
    for target in load_patch_set().targets():
        files[target] = (pristine_tree / target).read_bytes()
    return files


@pytest.fixture(scope="module")
def indexes(pristine_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("index")
    dep = build_wheel(root / "dep", "k25-fake-dep", "1.0", {"k25_fake_dep/__init__.py": b"VALUE = 1\n"})
    stubs = start_up_stub_wheels(root / "stubs")
    requires = ("k25-fake-dep==1.0", *STUB_REQUIRES)
    good = build_wheel(root / "good", "sglang", "0.5.23", _sglang_files(pristine_tree, LAUNCHER_OK), requires)
    broken = build_wheel(
        root / "broken", "sglang", "0.5.23", _sglang_files(pristine_tree, LAUNCHER_BROKEN), requires
    )
    return {
        "good": build_index(root / "good-index", [good, dep, *stubs]),
        "broken": build_index(root / "broken-index", [broken, dep, *stubs]),
        "no-dep": build_index(root / "no-dep-index", [good, *stubs]),
    }


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    """The shipped Kimi profile, with the Python this test runs under (a stack needs that interpreter)."""
    data = tomllib.loads((REPO / "profiles" / "kimi-k25-eagle3.toml").read_text())
    data["stack"]["python"] = f"{sys.version_info.major}.{sys.version_info.minor}"
    path = tmp_path / "profile.toml"
    path.write_text(tomli_w.dumps(data))
    return path


def _install(profile: Path, venv: Path, index: str, *extra: str, installer: str = "uv") -> int:
    """The real ``agent install``; uv by default (a k25console dependency), pip where a test says so."""
    argv = ["install", "--profile", str(profile), "--venv", str(venv), "--index-url", index]
    return main([*argv, "--installer", installer, *extra])


def _builds(tmp_path: Path) -> list[Path]:
    return sorted(p for p in (tmp_path / "stack.d").iterdir() if p.is_dir())


def _tree_state(root: Path) -> dict[str, tuple[float, str]]:
    return {
        str(p.relative_to(root)): (p.stat().st_mtime, file_sha256(p))
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _stack_python(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / "python"), *args], capture_output=True, text=True, check=False)


def _site(venv: Path) -> Path:
    return Path(
        _stack_python(venv, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    )


def test_dry_run_prints_the_whole_plan_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "stack"
    rc = main(
        [
            "install",
            "--profile",
            str(REPO / "profiles" / "kimi-k25-eagle3.toml"),
            "--venv",
            str(venv),
            "--dry-run",
        ]
    )
    out = capsys.readouterr().out
    assert "sglang==0.5.23" in out
    for patch in load_patch_set().patches:
        assert patch.name in out
        for target in patch.targets:
            assert target in out
    for item in load_patch_set().overlay:
        assert item.path in out
    assert f"{venv}/{MANIFEST_NAME}" in out
    assert "dry run: nothing changed" in out
    assert list(tmp_path.iterdir()) == []
    # This machine has no python3.12 (the profile's stack.python): a problem the plan names, exit 1.
    assert rc == (1 if "problem:" in out else 0)


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_install_then_a_second_run_changes_nothing(
    profile: Path, indexes: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], installer: str
) -> None:
    venv = tmp_path / "stack"
    assert _install(profile, venv, indexes["good"], installer=installer) == 0
    assert venv.is_symlink()
    manifest = read_manifest(venv)
    assert manifest is not None
    assert manifest.sglang_version == "0.5.23"
    assert manifest.packages["k25-fake-dep"] == "1.0"  # resolved from the same index
    assert [p.name for p in manifest.patches] == load_patch_set().names
    site = _site(venv)
    assert set(manifest.patched_files) == set(load_patch_set().installed_paths())  # overlay and hooks
    assert {path: file_sha256(site / path) for path in manifest.patched_files} == manifest.patched_files
    assert detect_state(site, load_patch_set()) is PatchState.APPLIED
    assert (site / "sglang/srt/managers/scheduler_components/internal_state.py.orig").is_file()
    assert _stack_python(venv, "-m", "sglang.launch_server", "--help").returncode == 0
    live = _stack_python(
        venv, "-c", "import sglang.srt.speculative.adaptive_live_control as m; print(m.LIVE_STEPS_KEY)"
    )
    assert live.stdout.strip() == "adaptive_spec_steps"

    before = _tree_state(tmp_path)
    target = venv.resolve()
    digest = manifest_hash(venv)
    capsys.readouterr()
    assert _install(profile, venv, indexes["good"], installer=installer) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert _tree_state(tmp_path) == before
    assert venv.resolve() == target
    assert manifest_hash(venv) == digest


def test_revert_patches_then_install_patches_in_place(
    profile: Path, indexes: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "stack"
    assert _install(profile, venv, indexes["good"]) == 0
    build = venv.resolve()
    assert _install(profile, venv, indexes["good"], "--revert-patches") == 0
    site = _site(venv)
    assert detect_state(site, load_patch_set()) is PatchState.PRISTINE
    assert not [item.path for item in load_patch_set().overlay if (site / item.path).exists()]
    assert not list(site.glob("sglang/srt/speculative/__pycache__/k25_zero_step_*.pyc"))
    manifest = read_manifest(venv)
    assert manifest is not None and manifest.patches == [] and manifest.patch_set_sha256 is None
    assert stack_problems(venv)[-1].startswith("the patch set is not applied")

    capsys.readouterr()
    assert _install(profile, venv, indexes["good"]) == 0
    assert "applying the patch set there" in capsys.readouterr().out
    assert venv.resolve() == build  # same build, no new venv
    assert detect_state(site, load_patch_set()) is PatchState.APPLIED
    assert [p.name for p in read_manifest(venv).patches] == load_patch_set().names  # type: ignore[union-attr]


def test_revert_prints_its_own_plan_and_keeps_a_hand_edited_overlay_module_aside(
    profile: Path, indexes: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "stack"
    assert _install(profile, venv, indexes["good"]) == 0
    module = _site(venv) / "sglang/srt/speculative/k25_zero_step_ring.py"
    edited = module.read_text() + "# the operator's own fix, 2026-12-07\n"
    module.write_text(edited)
    capsys.readouterr()

    assert _install(profile, venv, indexes["good"], "--revert-patches", "--dry-run") == 0
    dry = capsys.readouterr().out
    assert dry.startswith(f"agent install --revert-patches: plan for the stack in use at {venv}\n")
    assert "agent install: plan for profile" not in dry  # not the install plan
    assert "keeps aside     sglang/srt/speculative/k25_zero_step_ring.py (changed by hand" in dry
    assert module.read_text() == edited  # a dry run changes nothing

    assert _install(profile, venv, indexes["good"], "--revert-patches") == 0
    out = capsys.readouterr().out
    (said,) = [line for line in out.splitlines() if "kept a copy of the hand-edited" in line]
    copy = Path(said.split(" at ", 1)[1])
    assert said.strip().startswith(
        "kept a copy of the hand-edited sglang/srt/speculative/k25_zero_step_ring.py"
    )
    assert copy.is_relative_to(venv.resolve() / "k25-hand-edits") and copy.read_text() == edited
    assert not module.exists()  # the revert itself went through


def test_a_failed_verify_leaves_the_previous_stack_in_use(
    profile: Path, indexes: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "stack"
    assert _install(profile, venv, indexes["good"]) == 0
    previous = venv.resolve()
    digest = manifest_hash(venv)
    capsys.readouterr()

    assert _install(profile, venv, indexes["broken"], "--rebuild") == 1
    err = capsys.readouterr().err
    assert "failed at step 'verify'" in err
    assert "launcher broken on purpose" in err
    assert venv.resolve() == previous
    assert manifest_hash(venv) == digest
    assert _builds(tmp_path) == [previous]  # the failed build is gone
    assert _stack_python(venv, "-m", "sglang.launch_server", "--help").returncode == 0


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_a_missing_dependency_names_the_package_step_and_leaves_nothing(
    profile: Path, indexes: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], installer: str
) -> None:
    venv = tmp_path / "stack"
    assert _install(profile, venv, indexes["no-dep"], installer=installer) == 1
    err = capsys.readouterr().err
    assert "failed at step 'install packages'" in err
    assert "k25-fake-dep" in err
    assert not venv.exists() and not venv.is_symlink()
    assert _builds(tmp_path) == []


def test_a_hand_edited_stack_is_rebuilt_beside_it(
    profile: Path, indexes: dict[str, str], tmp_path: Path
) -> None:
    venv = tmp_path / "stack"
    assert _install(profile, venv, indexes["good"]) == 0
    previous = venv.resolve()
    spec = _site(venv) / "sglang/srt/speculative/adaptive_spec_params.py"
    assert stack_problems(venv) == []
    spec.write_text(spec.read_text() + "\n# hand edit\n")
    assert stack_problems(venv) == [
        "sglang/srt/speculative/adaptive_spec_params.py changed since agent install (sha256 differs); run agent install"
    ]
    assert _install(profile, venv, indexes["good"]) == 0
    assert stack_problems(venv) == []
    assert venv.resolve() != previous
    assert previous.exists()  # kept as the previous build
    assert json.loads((venv / MANIFEST_NAME).read_text())["patch_set_sha256"] == load_patch_set().sha256


def test_a_hand_edited_overlay_module_is_named_and_rebuilt_beside_it(
    profile: Path, indexes: dict[str, str], tmp_path: Path
) -> None:
    venv = tmp_path / "stack"
    assert _install(profile, venv, indexes["good"]) == 0
    previous = venv.resolve()
    module = _site(venv) / "sglang/srt/speculative/k25_zero_step_ring.py"
    module.write_text(module.read_text().replace("% self.width", "% (self.width + 1)", 1))
    assert stack_problems(venv) == [
        "sglang/srt/speculative/k25_zero_step_ring.py changed since agent install (sha256 differs); run agent install"
    ]
    assert detect_state(_site(venv), load_patch_set()) is PatchState.MODIFIED
    assert _install(profile, venv, indexes["good"]) == 0
    assert stack_problems(venv) == [] and venv.resolve() != previous


def _with_venv(profile: Path, venv: Path) -> Path:
    data = tomllib.loads(profile.read_text())
    data["stack"]["venv"] = str(venv)
    path = profile.with_name("with-venv.toml")
    path.write_text(tomli_w.dumps(data))
    return path


def test_a_hand_edited_stack_file_stops_serve_and_doctor_names_it(
    profile: Path, indexes: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's edit: one line appended to the installed ``k25_zero_step_ring.py``. ``agent serve
    --engine sglang`` refuses to launch, naming the file; ``agent doctor`` fails its stack check."""
    venv = tmp_path / "stack"
    assert _install(profile, venv, indexes["good"]) == 0
    with_venv = _with_venv(profile, venv)
    capsys.readouterr()
    assert main(["doctor", "--profile", str(with_venv), "--json"]) in (0, 1)  # no GPUs here: GPU checks fail
    (clean,) = [c for c in json.loads(capsys.readouterr().out)["checks"] if c["name"] == "stack files"]
    assert clean["status"] == "ok"
    module = _site(venv) / "sglang/srt/speculative/k25_zero_step_ring.py"
    module.write_text(module.read_text() + "print('hand edit')\n")
    named = "sglang/srt/speculative/k25_zero_step_ring.py changed since agent install (sha256 differs)"

    assert main(["doctor", "--profile", str(with_venv), "--json"]) == 1
    (check,) = [c for c in json.loads(capsys.readouterr().out)["checks"] if c["name"] == "stack files"]
    assert check["status"] == "fail" and named in check["found"]

    state = tmp_path / "state"
    argv = [sys.executable, "-m", "agent.cli.main", "serve", "--engine", "sglang", "--profile", str(with_venv),
            "--state-dir", str(state), "--gpus", "none", "--drain-timeout", "1"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            start_new_session=True)  # fmt: skip
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 2, err[-2000:]
    assert f"the stack at {venv} is not as agent install left it; the engine was not started" in err
    assert named in err
    assert not (state / "engine.json").exists()


def test_a_second_install_at_the_same_time_is_refused(
    profile: Path, indexes: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "stack"
    (tmp_path / "stack.d").mkdir()
    with open(tmp_path / "stack.d" / ".install.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert _install(profile, venv, indexes["good"]) == 1
    assert "failed at step 'lock'" in capsys.readouterr().err
    assert _builds(tmp_path) == [] and not venv.is_symlink()


def test_a_rebuild_within_the_same_second_gets_its_own_build(
    profile: Path, indexes: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds of the same packages in one second must not share a directory: a failed rebuild
    deletes its build, and that must never be the stack in use."""
    from datetime import UTC, datetime

    import agent.install.installer as installer

    class FrozenClock(datetime):
        @classmethod
        def now(cls, tz: object = None) -> FrozenClock:
            return cls(2026, 11, 30, 9, 0, 0, tzinfo=UTC)

    monkeypatch.setattr(installer, "datetime", FrozenClock)
    venv = tmp_path / "stack"
    assert _install(profile, venv, indexes["good"]) == 0
    first = venv.resolve()
    assert _install(profile, venv, indexes["good"], "--rebuild") == 0
    assert venv.resolve() != first
    assert first in _builds(tmp_path) and len(_builds(tmp_path)) == 2
